"""What the client raises."""

from typing import Any, Optional

from .methods import REQUEST_CANCELLED


class CompactdError(Exception):
    """Base of every error this package raises."""


class ResponseError(CompactdError):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None, method: Optional[str] = None):
        super().__init__(f"{method}: {message} ({code})" if method else f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    @staticmethod
    def from_error(error: Any, method: Optional[str] = None) -> "ResponseError":
        code = int(error.get("code", 0)) if isinstance(error, dict) else 0
        message = str(error.get("message", "")) if isinstance(error, dict) else str(error)
        data = error.get("data") if isinstance(error, dict) else None
        kind = RequestCancelled if code == REQUEST_CANCELLED else ResponseError
        return kind(code, message, data, method)


class RequestCancelled(ResponseError):
    """The request was cancelled (-32800): by a Cancellation or timeout of the
    sync client, or answered so by the server."""


class ServerExited(CompactdError):
    """The server process ended (or could not start) while something waited for it."""

    def __init__(self, message: str, returncode: Optional[int] = None, stderr: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class ServerNotFound(CompactdError):
    """No usable compactd binary: the message says where the client looked and why."""
