"""Per-key timers: the last call within the delay wins.

Typing sends a ``didChange`` per keystroke; analysing each one would keep the
CPU busy with versions nobody will see. Each document (or notebook) gets one
pending timer on the event loop; a newer request replaces it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Hashable
from typing import Any


class Debouncer:
    """Run an async callback for a key after ``delay`` seconds of quiet."""

    def __init__(self) -> None:
        self._handles: dict[Hashable, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task] = set()

    def schedule(self, key: Hashable, delay: float, callback: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """(Re)start the timer of ``key``; when it fires, ``callback()`` runs as a task."""
        self.cancel(key)
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._handles.pop(key, None)
            task = loop.create_task(callback())
            self._tasks.add(task)  # keep a reference until done (asyncio keeps only weak ones)
            task.add_done_callback(self._tasks.discard)

        self._handles[key] = loop.call_later(max(delay, 0.0), fire)

    def cancel(self, key: Hashable) -> None:
        """Forget a pending timer (the document was closed)."""
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def pending(self, key: Hashable) -> bool:
        return key in self._handles
