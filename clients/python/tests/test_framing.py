"""LSP base framing, on bytes fed to a StreamReader."""

import asyncio
from typing import Any, List, Optional

import pytest

from compactd_client._framing import FramingError, encode_message, read_message


def read_all(data: bytes) -> List[Optional[Any]]:
    async def main() -> List[Optional[Any]]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        out = []
        while True:
            message = await read_message(reader)
            out.append(message)
            if message is None:
                return out

    return asyncio.run(main())


def test_round_trip_of_two_messages_with_multibyte_text() -> None:
    first = {"jsonrpc": "2.0", "id": 1, "method": "conversation/open", "params": {"systemPrompt": "héllo ✓"}}
    second = {"jsonrpc": "2.0", "method": "exit"}
    encoded = encode_message(first) + encode_message(second)
    assert encoded.startswith(b"Content-Length: ")
    assert read_all(encoded) == [first, second, None]


def test_other_headers_and_case_are_accepted() -> None:
    body = b'{"jsonrpc":"2.0","method":"x"}'
    data = b"content-length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body) + body
    assert read_all(data) == [{"jsonrpc": "2.0", "method": "x"}, None]


@pytest.mark.parametrize(
    "data, error",
    [
        (b"Content-Length: 10\r\n\r\n{}", "ended after 2 of 10 body bytes"),
        (b"Content-Length: ten\r\n\r\n{}", "bad Content-Length"),
        (b"Content-Type: x\r\n\r\n{}", "without Content-Length"),
        (b"Content-Length: 2\r\n", "ended inside a header"),
        (b"garbage\r\n\r\n", "not a header line"),
        (b"Content-Length: 2\r\n\r\n[]", "not a JSON object"),
    ],
)
def test_broken_frames_are_refused_with_the_reason(data: bytes, error: str) -> None:
    with pytest.raises(FramingError, match=error):
        read_all(data)
