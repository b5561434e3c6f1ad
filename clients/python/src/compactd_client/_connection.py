"""JSON-RPC 2.0 over an asyncio stream pair: requests (cancelled by
cancelling the awaiting task, which sends `$/cancelRequest`),
notifications, server requests, and notification callbacks."""

import asyncio
import inspect
import itertools
import logging
from typing import Any, Awaitable, Callable, Dict, List, Optional, Union

from ._framing import encode_message, read_message
from .errors import CompactdError, ResponseError
from .methods import CANCEL_REQUEST, METHOD_NOT_FOUND

log = logging.getLogger("compactd_client")

NotificationCallback = Callable[[str, Any], Any]
RequestHandler = Callable[[Any], Union[Any, Awaitable[Any]]]


class Connection:
    """One JSON-RPC peer. `closed_error()` makes the error pending requests get when the stream ends."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Any,
        closed_error: Callable[[], Awaitable[CompactdError]],
    ):
        self._reader = reader
        self._writer = writer
        self._closed_error = closed_error
        self._ids = itertools.count(1)
        self._pending: Dict[int, "asyncio.Future[Any]"] = {}
        self._methods: Dict[int, str] = {}
        self._listeners: List[NotificationCallback] = []
        self._request_handlers: Dict[str, RequestHandler] = {}
        self._closed: Optional[CompactdError] = None
        self._tasks: "set[asyncio.Task[Any]]" = set()
        self._reading = asyncio.ensure_future(self._read_loop())

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def add_listener(self, listener: NotificationCallback) -> Callable[[], None]:
        """Calls `listener(method, params)` for every notification, in arrival order."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def on_request(self, method: str, handler: RequestHandler) -> None:
        """Answers the server's `method` requests with what `handler` returns."""
        self._request_handlers[method] = handler

    def _send(self, message: Dict[str, Any]) -> None:
        if self._closed is not None:
            raise self._closed
        self._writer.write(encode_message({"jsonrpc": "2.0", **message}))

    async def _drain(self) -> None:
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as error:
            raise self._closed or CompactdError(f"could not write to the server: {error}") from None

    async def request(self, method: str, params: Any) -> Any:
        request_id = next(self._ids)
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._send({"id": request_id, "method": method, "params": params})
        self._pending[request_id] = future
        self._methods[request_id] = method
        try:
            await self._drain()
            return await future
        except asyncio.CancelledError:
            if request_id in self._pending and self._closed is None:
                # The caller gave up: tell the server; its -32800 answer finds nothing pending.
                self._send({"method": CANCEL_REQUEST, "params": {"id": request_id}})
            raise
        finally:
            self._pending.pop(request_id, None)
            self._methods.pop(request_id, None)

    async def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})
        await self._drain()

    async def _read_loop(self) -> None:
        error: Optional[BaseException] = None
        try:
            while True:
                message = await read_message(self._reader)
                if message is None:
                    break
                self._dispatch(message)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a broken stream ends the connection, with the reason
            error = e
            log.error("compactd_client: reading from the server failed: %s", e)
        closed = await self._closed_error()
        self._close(closed, error)

    def _close(self, closed: CompactdError, cause: Optional[BaseException]) -> None:
        if cause is not None:
            closed.__cause__ = cause
        self._closed = closed
        for future in self._pending.values():
            if not future.done():
                future.set_exception(closed)
        self._pending.clear()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._reading)

    def _dispatch(self, message: Dict[str, Any]) -> None:
        if "id" in message and "method" not in message:
            future = self._pending.get(message["id"])
            if future is None or future.done():
                return  # answered after the caller gave up
            if "error" in message:
                future.set_exception(ResponseError.from_error(message["error"], self._methods.get(message["id"])))
            else:
                future.set_result(message.get("result"))
        elif "id" in message:
            self._spawn(self._answer(message))
        else:
            method, params = message.get("method", ""), message.get("params")
            for listener in list(self._listeners):
                try:
                    outcome = listener(method, params)
                    if inspect.isawaitable(outcome):
                        self._spawn(outcome)
                except Exception:
                    log.exception("compactd_client: a %s callback failed", method)

    def _spawn(self, awaitable: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(awaitable)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, message: Dict[str, Any]) -> None:
        handler = self._request_handlers.get(message["method"])
        try:
            if handler is None:
                reply: Dict[str, Any] = {"error": {"code": METHOD_NOT_FOUND, "message": f"method not found: {message['method']}"}}
            else:
                result = handler(message.get("params"))
                if inspect.isawaitable(result):
                    result = await result
                reply = {"result": result}
            self._send({"id": message["id"], **reply})
            await self._drain()
        except CompactdError:
            pass  # the connection is gone; nobody to answer
