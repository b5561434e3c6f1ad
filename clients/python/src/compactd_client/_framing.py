"""LSP base framing: `Content-Length: N\\r\\n\\r\\n` then N bytes of UTF-8 JSON."""

import asyncio
import json
from typing import Any, Dict, Optional


class FramingError(Exception):
    """The stream is not LSP-framed JSON-RPC."""


def encode_message(message: Dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(reader: asyncio.StreamReader) -> Optional[Dict[str, Any]]:
    """The next message, or None at the end of the stream (between messages)."""
    length: Optional[int] = None
    first = True
    while True:
        line = await reader.readline()
        if not line:
            if first:
                return None
            raise FramingError("the stream ended inside a header")
        first = False
        if not line.endswith(b"\n"):
            raise FramingError("the stream ended inside a header")
        line = line.rstrip(b"\r\n")
        if not line:
            break
        name, sep, value = line.decode("ascii", errors="replace").partition(":")
        if not sep:
            raise FramingError(f"not a header line: {line[:80]!r}")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise FramingError(f"bad Content-Length: {value.strip()[:40]!r}") from None
    if length is None:
        raise FramingError("a message without Content-Length")
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError as error:
        raise FramingError(f"the stream ended after {len(error.partial)} of {length} body bytes") from None
    message = json.loads(body.decode("utf-8"))
    if not isinstance(message, dict):
        raise FramingError("a message that is not a JSON object")
    return message
