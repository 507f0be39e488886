"""Runs the checker for open documents and publishes what is still true.

Why it is shaped this way:

- The checker runs on worker threads, never on the event loop, so that
  ``didChange``, hover and cancellation keep flowing while a big file is being
  analyzed. One analysis at a time per document (a newer request waits for the
  running one, then runs only if it is still the newest), but different
  documents do not wait for each other: a 50,000-line file being analyzed must
  not hold back the diagnostics of the small file the user is typing in.
- A document over :data:`ISOLATE_CHARS` is analyzed in a checker process of
  its own that lives as long as the document (:mod:`.isolated` says why;
  :mod:`.checker_process` runs it): the GIL, killing as the only sure way to
  stop a runaway analysis, its memory, and a crash that must not take the
  server down. A process that dies is logged, and the same text is checked
  once more in a new one.
- A request bumps the key's *generation*; a result is published only if no
  newer request came and the documents still have the versions it analyzed.
  An analysis of version 3 that finishes after version 4 arrived is dropped,
  and nothing is published for a document closed mid-analysis.
- Results are kept per key so that hover and code actions answer from the same
  findings the user sees, and the last (source, config) result is reused when
  nothing changed (a save after the edits were already analyzed costs nothing).
- Each document keeps an incremental checker (:mod:`graphlife.incremental`),
  in the server or in its checker process: an edit costs the code it changed.
  A newer version stops the running analysis of a thread (the checker then
  starts over), but not the one in a checker process: killing that process
  would throw away its caches, and the next version would pay for a whole file
  again; it finishes (its result is dropped) and the next version is cheap.
  ``benchmarks/lsp_latency.py`` measures change -> diagnostics.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from graphlife.checker import CheckResult
from graphlife.config import Config
from graphlife.findings import Finding
from graphlife.incremental import IncrementalChecker
from graphlife.lsp.cancel import Cancelled, Runner
from graphlife.lsp.checker_process import CheckerProcess, CheckerProcessDied
from graphlife.lsp.debounce import Debouncer
from graphlife.lsp.diagnostics import diagnostics_by_uri
from graphlife.lsp.documents import Snapshot, current_stamp, take_snapshot
from graphlife.lsp.isolated import TEST_DELAY_VARIABLE
from graphlife.lsp.log import log, log_exception
from graphlife.lsp.memory import mostly_new, release_memory
from graphlife.lsp.settings import Settings

_T = TypeVar("_T")

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: Analyses of different documents that may run at once.
WORKERS = 3


def _prepare(source: str) -> tuple[str, list[str]]:
    """The text handed to the checker, and notes about what had to be changed."""
    if _LONE_SURROGATE.search(source):
        # Text the editor decoded from invalid bytes: one replacement character each keeps
        # every position where it was, and the rest of the file is still analyzed.
        note = "contains bytes that are not valid UTF-8; they were read as U+FFFD"
        return _LONE_SURROGATE.sub("\ufffd", source), [note]
    return source, []


#: Seconds of quiet after an incremental analysis before the heap is trimmed.
IDLE_TRIM_SECONDS = 1.0

#: Sources longer than this (characters, ~15,000 lines) are analyzed in the document's own
#: checker process (:mod:`graphlife.lsp.isolated` says why).
ISOLATE_CHARS = 500_000

#: Seconds past the checker's own time box after which a running analysis is stopped.
HARD_LIMIT_GRACE = 5.0
#: Test and debugging knob: an artificial delay (ms) inside each analysis, to make
#: "a slow analysis is overtaken by a newer version" reproducible.
_TEST_DELAY = float(os.environ.get(TEST_DELAY_VARIABLE, "0") or 0) / 1000.0


@dataclass
class Analysis:
    """The checker's answer for one snapshot, under one config."""

    snapshot: Snapshot
    config: Config
    findings: list[Finding] = field(default_factory=list)
    syntax_errors: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reused: bool = False
    units: dict | None = None  # units replayed / run by the incremental checker
    in_process: bool = True  # False: analyzed in the document's checker process
    #: (code, span) -> the fixes compute_fixes made for that finding on this text (filled on demand).
    fix_cache: dict = field(default_factory=dict)


class Linter:
    """Debounced, off-loop, never-stale diagnostics for every open document and notebook."""

    def __init__(self, server: LanguageServer, settings: Settings) -> None:
        self.server = server
        self.settings = settings
        self.debouncer = Debouncer()
        self.executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="graphlife-check")
        self._locks: dict[str, asyncio.Lock] = {}
        self.runner = Runner(self.executor)
        #: key -> stops the analysis running for it: (reason, hard); a soft stop (a newer version)
        #: leaves an analysis in a checker process running, a hard one kills the process.
        self._running: dict[str, Callable[[str, bool], None]] = {}
        self._running_stamp: dict[str, tuple] = {}  # key -> the versions that analysis is checking
        self._gave_up: dict[str, tuple] = {}  # key -> stamp whose analysis ran over the hard limit
        self._generation: dict[str, int] = {}
        self._results: dict[str, Analysis] = {}
        self._published: dict[str, set[str]] = {}  # key -> URIs that got diagnostics
        self._last_cache: dict[str, tuple[str, str, CheckResult]] = {}  # key -> (source, config repr, CheckResult)
        self._last_report: dict[str, tuple] = {}  # key -> (syntax errors, notes) already logged
        #: key -> the document's incremental checker (keeps parsed blocks and unit results between edits)
        self._checkers: dict[str, IncrementalChecker] = {}
        #: key -> the checker process of a document that was over ISOLATE_CHARS at some point
        #: (it stays there while open, so that typing around the limit keeps the caches warm).
        self._processes: dict[str, CheckerProcess] = {}
        self._crashed: dict[str, tuple] = {}  # key -> stamp whose analysis ended with its process

    # -- requests -------------------------------------------------------------------------

    def request(self, key: str, delay: float | None = None, same_text_may_finish: bool = False) -> None:
        """Analyze ``key`` after the debounce (or ``delay`` seconds), superseding earlier requests.

        The analysis running for ``key`` is stopped, unless ``same_text_may_finish``
        (a save) and it is checking exactly the current text: then its result is
        cached and the new request answers from the cache.
        """
        generation = self._generation.get(key, 0) + 1
        self._generation[key] = generation
        running = self._running_stamp.get(key)
        if not (same_text_may_finish and running == current_stamp(self.server.workspace, key)):
            self._cancel_running(key, "a newer version arrived")
        wait = self.settings.debounce if delay is None else delay
        self.debouncer.schedule(key, wait, lambda: self._lint(key, generation))

    def forget(self, key: str, uris: Sequence[str] = ()) -> None:
        """The document or notebook closed: drop pending work and clear its diagnostics."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self.debouncer.cancel(key)
        self._cancel_running(key, "the document was closed", hard=True)
        process = self._processes.pop(key, None)
        if process is not None:
            process.kill()  # its memory goes back to the OS at once
        self._crashed.pop(key, None)
        self._results.pop(key, None)
        self._last_cache.pop(key, None)
        self._last_report.pop(key, None)
        self._checkers.pop(key, None)
        self._locks.pop(key, None)
        self._gave_up.pop(key, None)
        for uri in set(uris) | self._published.pop(key, set()):
            self._send(uri, None, [])

    def _cancel_running(self, key: str, reason: str, hard: bool = False) -> None:
        cancel = self._running.get(key)
        if cancel is not None:
            cancel(reason, hard)

    async def close(self) -> None:
        """The server is shutting down: end every checker process now (not after its analysis),
        and wait until they are gone (their pipes must not outlive the event loop)."""
        processes = list(self._processes.values())
        self._processes.clear()
        if processes:
            await asyncio.wait_for(asyncio.gather(*(process.close() for process in processes)), 5)

    def result(self, key: str) -> Analysis | None:
        return self._results.get(key)

    # -- running the checker ----------------------------------------------------------------

    def _lock(self, key: str) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def _lint(self, key: str, generation: int) -> None:
        self.debouncer.cancel(("release memory",))  # not while an analysis runs
        try:
            async with self._lock(key):
                if generation != self._generation.get(key):
                    return  # a newer request came while an older analysis was running
                analysis = await self.analyze(key)
            if analysis is None:
                return
            if generation != self._generation.get(key):
                log(self.server, f"dropped a stale analysis of {key} (a newer request came)", types.MessageType.Log)
                return
            if current_stamp(self.server.workspace, key) != analysis.snapshot.stamp:
                log(self.server, f"dropped a stale analysis of {key} (the document changed)", types.MessageType.Log)
                return
            self._results[key] = analysis
            self._publish(analysis)
            self._report(analysis)
            if not analysis.reused and analysis.in_process and len(analysis.snapshot.source) > 100_000:
                # After publishing: not on the latency path. After an edit the incremental checker
                # made little garbage, and trimming competes with the next analysis: wait for quiet.
                # (A checker process trims its own heap.)
                delay = 0.0 if mostly_new(analysis.units) else IDLE_TRIM_SECONDS
                self.debouncer.schedule(("release memory",), delay, self._release_memory)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the server
            log_exception(self.server, f"analysis of {key}", exc)

    async def _release_memory(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self.executor, release_memory)

    async def analyze(self, key: str) -> Analysis | None:
        """Check a snapshot of ``key`` off the event loop; ``None`` when it is not open or was stopped.

        Big files go to the document's checker process (:mod:`graphlife.lsp.isolated`):
        parsing them would hold the GIL, and so freeze the event loop, for seconds.
        The time box applies to both: past it, the thread is interrupted, the process
        killed (the next version starts a new one).
        """
        snapshot = take_snapshot(self.server.workspace, key)
        if snapshot is None:
            return None
        config = self.settings.config_for(snapshot.path)
        limit = self.settings.time_budget + HARD_LIMIT_GRACE
        stop_reason: list[str] = []
        work: Awaitable[Analysis]
        if key in self._processes or len(snapshot.source) > ISOLATE_CHARS:
            self._checkers.pop(key, None)  # its caches now live in the process
            process = self._processes.get(key)
            if process is None:
                process = self._processes[key] = CheckerProcess(
                    lambda pid: log(self.server, f"started a checker process (pid {pid}) for "
                                    f"{snapshot.path or key}", types.MessageType.Log)
                )

            def cancel(reason: str, hard: bool = True) -> None:
                if hard and not stop_reason:  # a soft stop lets it finish: its caches stay warm
                    stop_reason.append(reason)
                    process.kill()

            work = self._check_isolated(snapshot, config, process, stop_reason)
        else:
            job, future = self.runner.submit(key, self._check, snapshot, config)

            def cancel(reason: str, hard: bool = True) -> None:
                if not stop_reason:
                    stop_reason.append(reason)
                self.runner.cancel(job, reason)

            work = future
        self._running[key] = cancel
        self._running_stamp[key] = snapshot.stamp
        timer = asyncio.get_running_loop().call_later(limit, cancel, f"it ran over {limit:.0f} s", True)
        try:
            return await work
        except Cancelled:
            reason = stop_reason[0] if stop_reason else "stopped"
            if reason.startswith("it ran over"):
                self._gave_up[key] = snapshot.stamp
                log(self.server, f"stopped the analysis of {snapshot.path or key}: {reason} (the checker's time "
                    "box did not stop it); its previous diagnostics stay", types.MessageType.Warning)
            else:
                log(self.server, f"stopped a stale analysis of {key}: {reason}", types.MessageType.Log)
            return None
        except CheckerProcessDied as died:
            self._process_died(snapshot, died)
            return None
        finally:
            timer.cancel()
            if self._running.get(key) is cancel:
                del self._running[key]
                self._running_stamp.pop(key, None)

    def _process_died(self, snapshot: Snapshot, died: CheckerProcessDied) -> None:
        """A checker process ended on its own: say so, and check the same text once more in a new
        one (the process may have been killed from outside); a second death on the same text
        gives up until the next edit, so a file that crashes the parser cannot loop."""
        key = snapshot.key
        name = snapshot.path or key
        tail = f"; its last words:\n{died.stderr_tail}" if died.stderr_tail else ""
        if self._crashed.get(key) == snapshot.stamp:
            self._gave_up[key] = snapshot.stamp
            log(self.server, f"the checker process of {name} stopped again on the same text ({died.describe()}); "
                f"its previous diagnostics stay until the next edit{tail}", types.MessageType.Error)
            return
        self._crashed[key] = snapshot.stamp
        log(self.server, f"the checker process of {name} stopped unexpectedly ({died.describe()}); a new one "
            f"checks the whole file again{tail}", types.MessageType.Warning)
        self.request(key, delay=0)

    async def _check_isolated(
        self, snapshot: Snapshot, config: Config, process: CheckerProcess, stop_reason: list[str]
    ) -> Analysis:
        """:meth:`_check` in the document's checker process, which a hard stop kills."""
        started = time.perf_counter()
        config_key = repr(config)
        cached = self._last_cache.get(snapshot.key)
        if cached is not None and cached[0] == snapshot.source and cached[1] == config_key:
            return self._analysis(snapshot, config, cached[2], started, reused=True)
        source, notes = _prepare(snapshot.source)
        try:
            reply = await process.check(source, config, self.settings.time_budget)
        except CheckerProcessDied:
            if stop_reason:
                raise Cancelled(stop_reason[0]) from None
            raise
        result = reply.result
        result.notes[:0] = notes
        self._last_cache[snapshot.key] = (snapshot.source, config_key, result)
        analysis = self._analysis(snapshot, config, result, started, reused=False)
        analysis.units = reply.units
        analysis.in_process = False
        return analysis

    @staticmethod
    def _analysis(snapshot: Snapshot, config: Config, result: CheckResult, started: float, reused: bool) -> Analysis:
        return Analysis(
            snapshot=snapshot,
            config=config,
            findings=list(result.findings),
            syntax_errors=list(result.syntax_errors),
            notes=list(result.notes),
            seconds=time.perf_counter() - started,
            reused=reused,
        )

    async def fresh(self, key: str, wait: float = 3.0) -> Analysis | None:
        """The analysis of what the editor shows now: the published one, or a new one.

        Hover and code actions call this; they wait at most ``wait`` seconds for an
        analysis already running for the document (a request must not hang behind
        a huge file) and do not retry a text whose analysis had to be stopped.
        """
        stamp = current_stamp(self.server.workspace, key)
        if stamp is None:
            return None
        known = self._results.get(key)
        if known is not None and known.snapshot.stamp == stamp:
            return known
        if self._gave_up.get(key) == stamp:
            return None
        lock = self._lock(key)
        try:
            await asyncio.wait_for(lock.acquire(), wait)
        except asyncio.TimeoutError:
            return None
        try:
            stamp = current_stamp(self.server.workspace, key)
            known = self._results.get(key)  # the analysis we waited for may be the one we need
            if known is not None and known.snapshot.stamp == stamp:
                return known
            if stamp is None or self._gave_up.get(key) == stamp:
                return None
            analysis = await self.analyze(key)
        finally:
            lock.release()
        if analysis is not None and current_stamp(self.server.workspace, key) == analysis.snapshot.stamp:
            self._results[key] = analysis
        return analysis

    async def run_in_worker(self, function: Callable[..., _T], *args: Any) -> _T | None:
        """Run ``function(*args)`` on a worker thread (libcst fixes and hover stories are slow too).

        When the request is cancelled (VS Code cancels a hover as soon as the mouse
        moves on), the work is stopped as well instead of occupying a worker.
        """
        job, future = self.runner.submit(getattr(function, "__name__", "work"), function, *args)
        try:
            return await future
        except asyncio.CancelledError:
            self.runner.cancel(job, "the request was cancelled")
            raise
        except Cancelled:
            return None

    def _check(self, snapshot: Snapshot, config: Config) -> Analysis:
        started = time.perf_counter()
        if _TEST_DELAY:
            end = time.monotonic() + _TEST_DELAY
            while time.monotonic() < end:  # short sleeps: a cancellation lands between them
                time.sleep(0.01)
        config_key = repr(config)
        cached = self._last_cache.get(snapshot.key)
        if cached is not None and cached[0] == snapshot.source and cached[1] == config_key:
            return self._analysis(snapshot, config, cached[2], started, reused=True)
        source, notes = _prepare(snapshot.source)
        checker = self._checkers.setdefault(snapshot.key, IncrementalChecker())
        result = checker.check(source, config, time_budget=self.settings.time_budget)
        result.notes[:0] = notes
        self._last_cache[snapshot.key] = (snapshot.source, config_key, result)
        analysis = self._analysis(snapshot, config, result, started, reused=False)
        analysis.units = checker.statistics
        return analysis

    # -- publishing ---------------------------------------------------------------------------

    def _publish(self, analysis: Analysis) -> None:
        codec = self.server.workspace.position_codec
        by_uri = diagnostics_by_uri(analysis.findings, analysis.snapshot, codec)
        versions = {segment.uri: segment.version for segment in analysis.snapshot.segments}
        previously = self._published.get(analysis.snapshot.key, set())
        for uri in previously - set(by_uri):  # a notebook cell that went away
            self._send(uri, None, [])
        for uri, diagnostics in by_uri.items():
            self._send(uri, versions.get(uri), diagnostics)
        self._published[analysis.snapshot.key] = set(by_uri)

    def _send(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )

    def _report(self, analysis: Analysis) -> None:
        """Log syntax errors and skipped work when they change (not on every keystroke)."""
        snapshot = analysis.snapshot
        summary = (
            tuple((e.line, e.column, e.message) for e in analysis.syntax_errors),
            tuple(analysis.notes),
        )
        if self._last_report.get(snapshot.key) == summary:
            return
        self._last_report[snapshot.key] = summary
        name = snapshot.path or snapshot.key
        for error in analysis.syntax_errors:
            log(
                self.server,
                f"{name}:{error.line}:{error.column}: syntax error ({error.message}); the top-level block "
                "around it is skipped, the rest of the file is still checked",
                types.MessageType.Warning,
            )
        for note in analysis.notes:
            log(self.server, f"{name}: {note}", types.MessageType.Warning)
        units = analysis.units
        reuse = (
            f" ({units['replayed']} of {units['replayed'] + units['ran']} units and {units['calls_replayed']} of "
            f"{units['calls_replayed'] + units['calls_ran']} calls analyzed apart reused)" if units else ""
        )
        log(
            self.server,
            f"checked {name}: {len(analysis.findings)} finding(s) in {analysis.seconds * 1000:.0f} ms{reuse}",
            types.MessageType.Log,
        )
