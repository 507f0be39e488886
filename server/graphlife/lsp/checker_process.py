"""The server's handle on one big document's checker process (:mod:`.isolated`).

:class:`CheckerProcess` starts the process on the first request, sends each
version of the document and awaits the findings, without ever blocking the event
loop. It can be killed at any moment (a runaway analysis, the document closed,
the server shutting down); a process that died, by our hand or not, is replaced
by a new one on the next request, which then checks the whole file again. Why
the process exists at all, and why it lives as long as the document, is told in
:mod:`.isolated`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from graphlife.checker import CheckResult
from graphlife.config import Config
from graphlife.lsp.isolated import HEADER, decode_length, encode


class CheckerProcessDied(Exception):
    """The process ended before it answered (killed, crashed, or could not start)."""

    def __init__(self, returncode: int | None, stderr_tail: str) -> None:
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        super().__init__(self.describe())

    def describe(self) -> str:
        """How it ended, in words (a signal by name)."""
        code = self.returncode
        if code is None:
            return "its pipes closed"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            hint = ", perhaps by the out-of-memory killer" if -code == signal.SIGKILL else ""
            return f"killed by {name}{hint}"
        return f"exit code {code}"


@dataclass
class Reply:
    """What the process answered for one version."""

    result: CheckResult
    units: dict[str, int]  # the incremental checker's statistics for this version
    dependencies: dict[str, str]  # the project's files the check read: absolute path -> content hash
    other_lines: dict[str, list[str]]  # the lines of the other files its findings name


class CheckerProcess:
    """One document's long-lived checker process; one request at a time."""

    def __init__(self, on_start: Callable[[int], None] = lambda pid: None) -> None:
        #: Called with the new process's id once its first request is on the way (for the log).
        self._on_start = on_start
        self._process: asyncio.subprocess.Process | None = None
        self._stderr_tail: deque[str] = deque(maxlen=30)
        self._stderr_task: asyncio.Task | None = None
        self._one_at_a_time = asyncio.Lock()
        self._kill_requested = False  # set by kill() while a check is under way, even mid-start
        self._killed = False  # whether the current process was killed by us (its end is no news)

    async def check(self, source: str, config: Config, time_budget: float, *, path: str | None = None,
                    buffers: dict[str, str] | None = None, files_appeared: int = 0) -> Reply:
        """The findings for ``source``; raises :class:`CheckerProcessDied` if the process ends first.

        ``path`` is the document's file, ``buffers`` the open documents' texts (they win over
        the disk when the check follows imports), ``files_appeared`` the server's count of
        "new files on disk" events (a change tells the process's checker to start over).

        A task cancelled while it waits kills the process: the answer still on its way
        would otherwise be read as the answer to the next request.
        """
        async with self._one_at_a_time:
            self._kill_requested = False
            previous = self._process
            if previous is not None and self._killed:  # by us: it is gone in a moment, and no news
                await previous.wait()
                self._process = previous = None
            if previous is not None and previous.returncode is not None:
                raise await self._died(previous)  # it died while idle: say so; the next request starts another
            started_now = previous is None
            if started_now:
                await self._start()
            process = self._process
            assert process is not None and process.stdin is not None and process.stdout is not None
            if self._kill_requested:  # killed while it was starting
                process.kill()
            try:
                process.stdin.write(encode({"source": source, "config": config, "time_budget": time_budget,
                                            "path": path, "buffers": buffers or {},
                                            "files_appeared": files_appeared}))
                await process.stdin.drain()
                if started_now:
                    self._on_start(process.pid)
                header = await process.stdout.readexactly(HEADER.size)
                body = await process.stdout.readexactly(decode_length(header))
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                raise await self._died(process) from exc
            except BaseException:
                self.kill()
                raise
        reply = pickle.loads(body)  # noqa: S301 - our own child process, fed by us
        if "error" in reply:
            raise RuntimeError(f"the checker raised in its process:\n{reply['error']}")
        return Reply(reply["result"], reply["units"], reply["dependencies"], reply["other_lines"])

    def kill(self) -> None:
        """Stop the process now (a waiting :meth:`check` raises :class:`CheckerProcessDied`)."""
        self._kill_requested = True
        self._killed = True
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # it ended a moment ago
                process.kill()

    async def close(self) -> None:
        """Kill the process and wait until it and its pipes are gone."""
        self.kill()
        process, self._process = self._process, None
        if process is not None:
            await process.wait()
        if self._stderr_task is not None:
            await self._stderr_task

    async def _start(self) -> None:
        self._stderr_tail.clear()
        self._killed = False
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "graphlife.lsp.isolated", str(os.getpid()),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        self._stderr_task = asyncio.get_running_loop().create_task(self._keep_stderr(self._process))

    async def _keep_stderr(self, process: asyncio.subprocess.Process) -> None:
        """Read stderr as it comes (a full pipe would block the process); keep its end for the log."""
        assert process.stderr is not None
        while line := await process.stderr.readline():
            self._stderr_tail.append(line.decode(errors="replace").rstrip("\n"))

    async def _died(self, process: asyncio.subprocess.Process) -> CheckerProcessDied:
        """How ``process`` ended; the death is told once, the next check starts a new process."""
        if self._process is process:
            self._process = None
        try:  # (asyncio.TimeoutError is not the builtin before Python 3.11)
            returncode = await asyncio.wait_for(process.wait(), 5)
        except asyncio.TimeoutError:  # pipes closed but still running: make sure it is gone
            process.kill()
            returncode = await process.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.TimeoutError):  # its last words, if they come at once
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1)
        return CheckerProcessDied(returncode, "\n".join(self._stderr_tail))
