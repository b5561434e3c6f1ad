"""compactd-client: spawn compactd and call every method of its protocol,
typed from its schemas, with a blocking (`CompactdClient`) and an asyncio
(`AsyncCompactdClient`) API.

    from compactd_client import CompactdClient

    with CompactdClient.spawn() as compactd:
        session = compactd.open(model="gpt-4o")["sessionId"]
        if compactd.append(session, [{"role": "user", "content": "Fix the parser"}])["shouldCompact"]:
            compactd.compact(session)
        messages = compactd.history(session)["messages"]
"""

from . import methods, types
from ._api import SERVER_NOTIFICATIONS
from ._client import AsyncCompactdClient, NotificationStream
from ._locate import ServerCandidate, check_server_version, find_server
from ._subscription import Cancellation, Subscription
from ._sync import CompactdClient, NotificationQueue
from .errors import CompactdError, RequestCancelled, ResponseError, ServerExited, ServerNotFound
from .types import Message

__version__ = "0.1.0"

__all__ = [
    "AsyncCompactdClient",
    "Cancellation",
    "CompactdClient",
    "CompactdError",
    "Message",
    "NotificationQueue",
    "NotificationStream",
    "RequestCancelled",
    "ResponseError",
    "SERVER_NOTIFICATIONS",
    "ServerCandidate",
    "ServerExited",
    "ServerNotFound",
    "Subscription",
    "check_server_version",
    "find_server",
    "methods",
    "types",
]
