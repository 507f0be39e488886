"""Stopping an analysis that nobody needs any more, from outside its thread.

A thread cannot be killed, and the checker has no cancellation hook; but an
analysis of version 3 still running when version 4 arrives only steals the CPU
(and the GIL) from the analysis the user is waiting for, and a rule that
ignores the time box must not hold a worker forever. CPython can raise an
exception inside another thread at its next bytecode
(``PyThreadState_SetAsyncExc``); :class:`Runner` uses that to raise
:class:`Cancelled` inside the checker, and makes sure the exception can never
land in the next job that thread runs (a pending one is cleared when a job ends).

``Cancelled`` derives from ``BaseException`` so that the engine's own
``except Exception`` handlers do not swallow it.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class Cancelled(BaseException):
    """Raised inside a job that was cancelled (and by awaiting it)."""


@dataclass
class Job:
    """One submitted call: which thread runs it, and whether it was cancelled."""

    name: str
    thread_id: int | None = None
    running: bool = False
    cancelled: bool = False
    reason: str = ""


class Runner:
    """Runs calls on an executor's threads; :meth:`cancel` interrupts a running one."""

    def __init__(self, executor: Executor) -> None:
        self._executor = executor
        self._lock = threading.Lock()

    def submit(self, name: str, function: Callable[..., Any], *args: Any) -> tuple[Job, asyncio.Future[Any]]:
        """Start ``function(*args)``; returns the job (to cancel) and an awaitable future."""
        job = Job(name)
        future = asyncio.get_running_loop().run_in_executor(self._executor, self._run, job, function, args)
        return job, future

    def cancel(self, job: Job, reason: str = "") -> None:
        """Raise :class:`Cancelled` in the job's thread if it is running; skip it if it has not started."""
        with self._lock:
            if job.cancelled:
                return
            job.cancelled = True
            job.reason = reason
            if job.running and job.thread_id is not None:
                _set_async_exc(job.thread_id, Cancelled)

    def _run(self, job: Job, function: Callable[..., Any], args: tuple) -> Any:
        try:
            try:
                with self._lock:
                    if job.cancelled:
                        raise Cancelled(job.reason)
                    job.thread_id = threading.get_ident()
                    job.running = True
                return function(*args)
            finally:
                self._finish(job)
        except Cancelled:
            self._finish(job)  # the exception may have landed inside the first _finish
            raise Cancelled(job.reason) from None

    def _finish(self, job: Job) -> None:
        with self._lock:
            if job.running:
                job.running = False
                _clear_async_exc(threading.get_ident(), None)  # one sent but not yet delivered
