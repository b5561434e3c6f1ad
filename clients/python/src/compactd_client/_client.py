"""AsyncCompactdClient: spawns compactd, runs the LSP lifecycle over its
stdio, and is AsyncMethods over that connection."""

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import methods as m
from . import types as t
from ._api import SERVER_NOTIFICATIONS, AsyncMethods
from ._connection import Connection
from ._locate import ServerCandidate, check_server_version, find_server
from ._subscription import Subscription
from .errors import CompactdError, ServerExited
from .lsp import ProgressToken, WorkDoneProgressValue

STDERR_KEPT = 64 * 1024

#: `stderr=`: "inherit" (the server logs to this process's stderr), "ignore",
#: or a callable given each line; by default the last 64 KiB are kept for
#: error messages (see `stderr_tail()`).
StderrOption = Union[None, str, Callable[[str], Any]]


def _initialize_params(
    configuration: Optional[Mapping[str, Any]], workspace_folders: Sequence[Union[str, os.PathLike]], work_done_progress: bool
) -> Dict[str, Any]:
    folders = [{"uri": Path(f).resolve().as_uri(), "name": Path(f).name} for f in workspace_folders]
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "compactd-client (python)"},
        "rootUri": folders[0]["uri"] if folders else None,
        "workspaceFolders": folders or None,
        "capabilities": {"window": {"workDoneProgress": work_done_progress}},
        "initializationOptions": dict(configuration or {}),
    }


class AsyncCompactdClient(AsyncMethods):
    """compactd over asyncio. Make one with `await AsyncCompactdClient.spawn()`
    (or `async with await AsyncCompactdClient.spawn() as client`)."""

    def __init__(self, process: "asyncio.subprocess.Process", server: ServerCandidate, version: Optional[str]):
        self.process = process
        self.server = server
        self.version = version
        self.initialize_result: Dict[str, Any] = {}
        self._stderr = ""
        self._stderr_task: Optional["asyncio.Task[None]"] = None
        self._closing: Optional["asyncio.Future[int]"] = None
        assert process.stdout is not None and process.stdin is not None
        self._connection = Connection(process.stdout, process.stdin, self._exited_error)
        self._connection.on_request(m.WORK_DONE_PROGRESS_CREATE, lambda params: None)

    @classmethod
    async def spawn(
        cls,
        path: Optional[str] = None,
        *,
        args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[Union[str, os.PathLike]] = None,
        configuration: Optional[Mapping[str, Any]] = None,
        workspace_folders: Sequence[Union[str, os.PathLike]] = (),
        work_done_progress: bool = True,
        stderr: StderrOption = None,
        check_version: bool = True,
        bundled_dirs: Sequence[str] = (),
    ) -> "AsyncCompactdClient":
        """Locates (`path`, else PATH, else `bundled_dirs`), vets and starts
        compactd, and initializes it with `configuration` (the
        `initializationOptions`; compactd.toml files fill in the rest).
        `work_done_progress` lets the server create progress tokens, so
        compactions nobody asked for (auto, overflow) report progress too.
        Raises ResponseError when the server refuses the configuration."""
        server = find_server(path, bundled_dirs=bundled_dirs)
        version = check_server_version(server) if check_version else None
        process = await asyncio.create_subprocess_exec(
            server.path,
            *args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if stderr == "inherit" else subprocess.DEVNULL if stderr == "ignore" else subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            limit=1 << 20,
        )
        client = cls(process, server, version)
        if process.stderr is not None:
            client._stderr_task = asyncio.ensure_future(client._read_stderr(stderr if callable(stderr) else None))
        try:
            client.initialize_result = await client._request(
                m.INITIALIZE, _initialize_params(configuration, workspace_folders, work_done_progress)
            )
            await client._notify(m.INITIALIZED, {})
        except BaseException:
            await client._kill()
            raise
        return client

    async def _read_stderr(self, sink: Optional[Callable[[str], Any]]) -> None:
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            line = raw.decode("utf-8", errors="replace")
            if sink is not None:
                sink(line)
            else:
                self._stderr = (self._stderr + line)[-STDERR_KEPT:]

    def stderr_tail(self) -> str:
        """The end of the server's log (when `stderr` was left at its default)."""
        return self._stderr

    async def _exited_error(self) -> CompactdError:
        # The output ended: the process is exiting. Its exit code and last
        # words make the error; the bound only guards a process that closed
        # its stdout and lives on.
        done = [asyncio.ensure_future(self.process.wait())]
        if self._stderr_task is not None:
            done.append(self._stderr_task)
        await asyncio.wait(done, timeout=5.0)
        code = self.process.returncode
        tail = "\n".join(self._stderr.strip().splitlines()[-5:])
        how = f"exited (code {code})" if code is not None else "closed its output"
        return ServerExited(f"compactd at {self.server.path} {how}" + (f":\n{tail}" if tail else ""), code, self._stderr)

    @property
    def capabilities(self) -> t.CompactdCapabilities:
        """compactd's own capabilities: its version, methods and notifications."""
        return self.initialize_result["capabilities"]["experimental"]["compactd"]

    async def _request(self, method: str, params: Dict[str, Any]) -> Any:
        return await self._connection.request(method, params)

    async def _notify(self, method: str, params: Dict[str, Any]) -> None:
        await self._connection.notify(method, params)

    def _subscribe(self, method: str, callback: Callable[[Any], Any]) -> Subscription:
        if method not in SERVER_NOTIFICATIONS and method != m.PROGRESS:
            raise ValueError(f"{method} is not a notification compactd sends (schemas/methods.json)")
        return Subscription(self._connection.add_listener(lambda name, params: callback(params) if name == method else None))

    def on_progress(
        self, callback: Callable[[ProgressToken, WorkDoneProgressValue], Any], token: Optional[ProgressToken] = None
    ) -> Subscription:
        """Calls `callback(token, value)` for `$/progress`: of `token` only
        (a `work_done_token` you passed), or of every token when None."""

        def deliver(params: Any) -> Any:
            if token is None or params.get("token") == token:
                return callback(params.get("token"), params.get("value"))
            return None

        return self._subscribe(m.PROGRESS, deliver)

    def notifications(self, *methods: str) -> "NotificationStream":
        """An async iterator (and context manager) of `(method, params)` for the
        server's notifications (of `methods`, or all), from now on, in order."""
        return NotificationStream(self._connection, methods)

    async def change_configuration(self, settings: t.Config) -> None:
        """Live configuration (`workspace/didChangeConfiguration`): replaces what `configuration` set."""
        await self._notify(m.DID_CHANGE_CONFIGURATION, {"settings": settings})

    async def wait(self) -> int:
        """Waits for the process to end; its exit code."""
        code = await self.process.wait()
        await self._connection.wait_closed()
        if self._stderr_task is not None:
            await self._stderr_task
        return code

    async def close(self, timeout: float = 5.0) -> int:
        """`shutdown`, then `exit`, then waits for the process (killing it after
        `timeout` seconds). Safe to call twice; returns the exit code."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shutdown(timeout))
        return await asyncio.shield(self._closing)

    async def _shutdown(self, timeout: float) -> int:
        if self.process.returncode is None and not self._connection.closed:
            try:
                await asyncio.wait_for(self._request(m.SHUTDOWN, {}), timeout)
                await self._notify(m.EXIT, {})
            except (CompactdError, asyncio.TimeoutError):
                pass
        try:
            return await asyncio.wait_for(self.wait(), timeout)
        except asyncio.TimeoutError:
            await self._kill()
            return await self.wait()

    async def _kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
        await self.wait()

    async def __aenter__(self) -> "AsyncCompactdClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class NotificationStream:
    """Server notifications as an async iterator; ends when the server does."""

    def __init__(self, connection: Connection, methods: Tuple[str, ...]):
        self._queue: "asyncio.Queue[Optional[Tuple[str, Any]]]" = asyncio.Queue()
        self._methods = set(methods)
        self._remove = connection.add_listener(self._put)
        self._connection = connection
        self._watch = asyncio.ensure_future(self._end_with(connection))

    def _put(self, method: str, params: Any) -> None:
        if not self._methods or method in self._methods:
            self._queue.put_nowait((method, params))

    async def _end_with(self, connection: Connection) -> None:
        await connection.wait_closed()
        self._queue.put_nowait(None)

    def close(self) -> None:
        self._remove()
        self._watch.cancel()

    def __aiter__(self) -> AsyncIterator[Tuple[str, Any]]:
        return self

    async def __anext__(self) -> Tuple[str, Any]:
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)
            raise StopAsyncIteration
        return item

    async def __aenter__(self) -> "NotificationStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()
