"""CompactdClient: the blocking API. It runs an AsyncCompactdClient on an
event loop in a daemon thread of its own, so both APIs share one
implementation; callbacks run on that thread."""

import asyncio
import concurrent.futures
import inspect
import os
import queue
import threading
from typing import Any, Awaitable, Callable, Dict, Iterator, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from . import methods as m
from . import types as t
from ._api import SyncMethods
from ._client import AsyncCompactdClient, StderrOption
from ._subscription import Cancellation, Subscription
from .errors import RequestCancelled
from .lsp import ProgressToken, WorkDoneProgressValue

T = TypeVar("T")


class CompactdClient(SyncMethods):
    """compactd, blocking. `with CompactdClient.spawn() as client: …`"""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread, client: AsyncCompactdClient):
        self._loop = loop
        self._thread = thread
        self._client = client

    @classmethod
    def spawn(
        cls,
        path: Optional[str] = None,
        *,
        args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
        configuration: Optional[Mapping[str, Any]] = None,
        workspace_folders: Sequence[Union[str, "os.PathLike[str]"]] = (),
        work_done_progress: bool = True,
        stderr: StderrOption = None,
        check_version: bool = True,
        bundled_dirs: Sequence[str] = (),
    ) -> "CompactdClient":
        """As AsyncCompactdClient.spawn, blocking."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="compactd-client", daemon=True)
        thread.start()
        start = AsyncCompactdClient.spawn(
            path,
            args=args,
            env=env,
            cwd=cwd,
            configuration=configuration,
            workspace_folders=workspace_folders,
            work_done_progress=work_done_progress,
            stderr=stderr,
            check_version=check_version,
            bundled_dirs=bundled_dirs,
        )
        try:
            client = asyncio.run_coroutine_threadsafe(start, loop).result()
        except BaseException:
            _stop(loop, thread)
            raise
        return cls(loop, thread, client)

    def _on_client_thread(self) -> None:
        # Waiting there for the loop that runs there would never end.
        if threading.current_thread() is self._thread:
            raise RuntimeError(
                "a CompactdClient method was called from one of its callbacks, which run on the client's thread; "
                "hand the work to another thread (or use notifications()), or use AsyncCompactdClient"
            )

    def _run(self, coroutine: Awaitable[T], timeout: Optional[float] = None) -> T:
        try:
            self._on_client_thread()
        except RuntimeError:
            if inspect.iscoroutine(coroutine):
                coroutine.close()
            raise
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)  # type: ignore[arg-type]

    def _request(
        self, method: str, params: Dict[str, Any], *, timeout: Optional[float] = None, cancel: Optional[Cancellation] = None
    ) -> Any:
        self._on_client_thread()
        if cancel is not None and cancel.cancelled:
            raise RequestCancelled(m.REQUEST_CANCELLED, "cancelled before it was sent", method=method)
        future = asyncio.run_coroutine_threadsafe(self._client._request(method, params), self._loop)
        # Cancelling the future cancels the task on the loop, which sends $/cancelRequest.
        unregister = cancel._on_cancel(future.cancel) if cancel is not None else (lambda: None)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"{method} did not answer within {timeout} s; it was cancelled") from None
        except concurrent.futures.CancelledError:
            raise RequestCancelled(m.REQUEST_CANCELLED, "request cancelled", method=method) from None
        finally:
            unregister()

    def _notify(self, method: str, params: Dict[str, Any]) -> None:
        self._run(self._client._notify(method, params))

    def _subscribe(self, method: str, callback: Callable[[Any], Any]) -> Subscription:
        return self._run(_on_loop(lambda: self._client._subscribe(method, callback)))

    def on_progress(
        self, callback: Callable[[ProgressToken, WorkDoneProgressValue], Any], token: Optional[ProgressToken] = None
    ) -> Subscription:
        """Calls `callback(token, value)` (on the client's thread) for `$/progress` of `token`, or of every token."""
        return self._run(_on_loop(lambda: self._client.on_progress(callback, token)))

    def notifications(self, *methods: str) -> "NotificationQueue":
        """The server's notifications (of `methods`, or all) from now on, as a
        blocking iterator of `(method, params)`; `get(timeout)` waits for one."""
        return NotificationQueue(self, methods)

    def change_configuration(self, settings: t.Config) -> None:
        """Live configuration (`workspace/didChangeConfiguration`)."""
        self._run(self._client.change_configuration(settings))

    @property
    def initialize_result(self) -> Dict[str, Any]:
        return self._client.initialize_result

    @property
    def capabilities(self) -> t.CompactdCapabilities:
        return self._client.capabilities

    @property
    def version(self) -> Optional[str]:
        return self._client.version

    @property
    def pid(self) -> int:
        return self._client.process.pid

    def stderr_tail(self) -> str:
        return self._client.stderr_tail()

    def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for the server process to end; its exit code."""
        return self._run(self._client.wait(), timeout)

    def close(self, timeout: float = 5.0) -> int:
        """`shutdown`, `exit`, wait (kill after `timeout`); stops the client's thread. Returns the exit code."""
        if not self._thread.is_alive():
            return self._client.process.returncode or 0
        try:
            return self._run(self._client.close(timeout))
        finally:
            _stop(self._loop, self._thread)

    def __enter__(self) -> "CompactdClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


async def _on_loop(make: Callable[[], T]) -> T:
    return make()


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


class NotificationQueue:
    """Blocking iterator of `(method, params)`; ends when the server does."""

    _END = object()

    def __init__(self, client: CompactdClient, methods: Tuple[str, ...]):
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._methods = set(methods)
        connection = client._client._connection
        self._remove = client._run(_on_loop(lambda: connection.add_listener(self._put)))
        self._watch = asyncio.run_coroutine_threadsafe(self._end_with(connection), client._loop)

    def _put(self, method: str, params: Any) -> None:
        if not self._methods or method in self._methods:
            self._queue.put((method, params))

    async def _end_with(self, connection: Any) -> None:
        await connection.wait_closed()
        self._queue.put(self._END)

    def get(self, timeout: Optional[float] = None) -> Tuple[str, Any]:
        """The next notification; raises queue.Empty after `timeout` seconds, StopIteration when the server ended."""
        item = self._queue.get(timeout=timeout)
        if item is self._END:
            self._queue.put(self._END)
            raise StopIteration
        return item  # type: ignore[no-any-return]

    def close(self) -> None:
        self._remove()
        self._watch.cancel()

    def __iter__(self) -> Iterator[Tuple[str, Any]]:
        while True:
            try:
                yield self.get()
            except StopIteration:
                return

    def __enter__(self) -> "NotificationQueue":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
