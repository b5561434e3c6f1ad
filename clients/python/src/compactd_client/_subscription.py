"""Subscriptions to server notifications, and cancellation for the sync client."""

import threading
from typing import Any, Callable, List, Optional


class Subscription:
    """A registered callback; `dispose()` (or leaving a `with` block) removes it."""

    def __init__(self, remove: Callable[[], None]):
        self._remove: Optional[Callable[[], None]] = remove

    def dispose(self) -> None:
        remove, self._remove = self._remove, None
        if remove is not None:
            remove()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.dispose()


class Cancellation:
    """Cancels the sync requests it is given (`cancel=`), from any thread:
    each sends `$/cancelRequest` and raises RequestCancelled. A request given
    one that is already cancelled is not sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: List[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def _on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Calls `callback` once when cancelled (at once if it already is); returns the unregister function."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._discard(callback)
        callback()
        return lambda: None

    def _discard(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)
