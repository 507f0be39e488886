"""Runs the checker for open documents and publishes what is still true.

Why it is shaped this way:

- The checker runs on worker threads, never on the event loop, so that
  ``didChange``, hover and cancellation keep flowing while a big file is being
  analyzed. One analysis at a time per document (a newer request waits for the
  running one, then runs only if it is still the newest), but different
  documents do not wait for each other: a 50,000-line file being analyzed must
  not hold back the diagnostics of the small file the user is typing in.
- A request bumps the key's *generation*; a result is published only if no
  newer request came and the documents still have the versions it analyzed.
  An analysis of version 3 that finishes after version 4 arrived is dropped,
  and nothing is published for a document closed mid-analysis.
- Results are kept per key so that hover and code actions answer from the same
  findings the user sees, and the last (source, config) result is reused when
  nothing changed (a save after the edits were already analyzed costs nothing).
  The engine's API takes a whole file, so an edit re-analyzes the whole file;
  the benchmark in ``benchmarks/lsp_latency.py`` measures what that costs.
"""

from __future__ import annotations

import asyncio
import gc
import os
import pickle
import re
import sys
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
from graphlife.lsp.debounce import Debouncer
from graphlife.lsp.diagnostics import diagnostics_by_uri
from graphlife.lsp.documents import Snapshot, current_stamp, take_snapshot
from graphlife.lsp.log import log, log_exception
from graphlife.lsp.settings import Settings

_T = TypeVar("_T")

#: Test and debugging knob: an artificial delay (ms) inside each analysis, to make
#: "a slow analysis is overtaken by a newer version" reproducible.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: Analyses of different documents that may run at once.
WORKERS = 3
def _load_malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``: gives the heap freed by an analysis back to the OS (``None`` elsewhere)."""
    try:
        import ctypes  # noqa: PLC0415

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _load_malloc_trim()


def release_memory() -> None:
    """Give the memory of a big analysis back to the OS.

    The syntax tree and abstract states of a big file are garbage once it is
    checked, but the allocator keeps their pages: without this the server's
    resident memory stays at the peak of the largest analysis it ever ran.
    Collecting the cycles first empties whole arenas, which can then be returned.
    """
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)

def _mostly_new(analysis: Analysis) -> bool:
    """Whether an analysis built most of its trees and states anew (then its garbage is worth
    giving back). After an edit the incremental checker reuses nearly everything: trimming
    the heap then costs about as much as the analysis and only competes with the next one."""
    units = analysis.units
    return units is None or units["ran"] + units["calls_ran"] > units["replayed"] + units["calls_replayed"]


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

#: Sources longer than this (characters, ~15,000 lines) are analyzed in a child process.
ISOLATE_CHARS = 500_000

#: Seconds past the checker's own time box after which a running analysis is stopped.
HARD_LIMIT_GRACE = 5.0
_TEST_DELAY = float(os.environ.get("GRAPHLIFE_LSP_TEST_DELAY_MS", "0") or 0) / 1000.0


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
        self._running: dict[str, Callable[[str], None]] = {}  # key -> stops the analysis running for it
        self._running_stamp: dict[str, tuple] = {}  # key -> the versions that analysis is checking
        self._gave_up: dict[str, tuple] = {}  # key -> stamp whose analysis ran over the hard limit
        self._generation: dict[str, int] = {}
        self._results: dict[str, Analysis] = {}
        self._published: dict[str, set[str]] = {}  # key -> URIs that got diagnostics
        self._last_cache: dict[str, tuple[str, str, CheckResult]] = {}  # key -> (source, config repr, CheckResult)
        self._last_report: dict[str, tuple] = {}  # key -> (syntax errors, notes) already logged
        #: key -> the document's incremental checker (keeps parsed blocks and unit results between edits)
        self._checkers: dict[str, IncrementalChecker] = {}

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
        self._cancel_running(key, "the document was closed")
        self._results.pop(key, None)
        self._last_cache.pop(key, None)
        self._last_report.pop(key, None)
        self._checkers.pop(key, None)
        self._locks.pop(key, None)
        self._gave_up.pop(key, None)
        for uri in set(uris) | self._published.pop(key, set()):
            self._send(uri, None, [])

    def _cancel_running(self, key: str, reason: str) -> None:
        cancel = self._running.get(key)
        if cancel is not None:
            cancel(reason)

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
            if not analysis.reused and len(analysis.snapshot.source) > 100_000:
                # After publishing: not on the latency path. After an edit the incremental checker
                # made little garbage, and trimming competes with the next analysis: wait for quiet.
                delay = 0.0 if _mostly_new(analysis) else IDLE_TRIM_SECONDS
                self.debouncer.schedule(("release memory",), delay, self._release_memory)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the server
            log_exception(self.server, f"analysis of {key}", exc)

    async def _release_memory(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self.executor, release_memory)

    async def analyze(self, key: str) -> Analysis | None:
        """Check a snapshot of ``key`` off the event loop; ``None`` when it is not open or was stopped.

        Big files go to a child process (:mod:`graphlife.lsp.isolated`): parsing
        them would hold the GIL, and so freeze the event loop, for seconds.
        """
        snapshot = take_snapshot(self.server.workspace, key)
        if snapshot is None:
            return None
        config = self.settings.config_for(snapshot.path)
        limit = self.settings.time_budget + HARD_LIMIT_GRACE
        stop_reason: list[str] = []
        work: Awaitable[Analysis]
        if len(snapshot.source) > ISOLATE_CHARS:
            process_box: list[asyncio.subprocess.Process] = []

            def cancel(reason: str) -> None:
                if not stop_reason:
                    stop_reason.append(reason)
                    for process in process_box:
                        if process.returncode is None:
                            process.kill()

            work = self._check_isolated(snapshot, config, process_box, stop_reason)
        else:
            job, future = self.runner.submit(key, self._check, snapshot, config)

            def cancel(reason: str) -> None:
                if not stop_reason:
                    stop_reason.append(reason)
                self.runner.cancel(job, reason)

            work = future
        self._running[key] = cancel
        self._running_stamp[key] = snapshot.stamp
        timer = asyncio.get_running_loop().call_later(limit, cancel, f"it ran over {limit:.0f} s")
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
        finally:
            timer.cancel()
            if self._running.get(key) is cancel:
                del self._running[key]
                self._running_stamp.pop(key, None)

    async def _check_isolated(
        self,
        snapshot: Snapshot,
        config: Config,
        process_box: list[asyncio.subprocess.Process],
        stop_reason: list[str],
    ) -> Analysis:
        """:meth:`_check` in a child process that a cancellation kills."""
        started = time.perf_counter()
        config_key = repr(config)
        cached = self._last_cache.get(snapshot.key)
        if cached is not None and cached[0] == snapshot.source and cached[1] == config_key:
            return self._analysis(snapshot, config, cached[2], started, reused=True)
        source, notes = _prepare(snapshot.source)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "graphlife.lsp.isolated",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        process_box.append(process)
        if stop_reason:
            process.kill()
        request = {"source": source, "path": snapshot.path, "config": config, "time_budget": self.settings.time_budget}
        out, err = await process.communicate(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
        if stop_reason:
            raise Cancelled(stop_reason[0])
        if process.returncode != 0:
            detail = err.decode(errors="replace")[-2000:]
            raise RuntimeError(f"the isolated checker exited with {process.returncode}: {detail}")
        result = pickle.loads(out)  # noqa: S301 - our own child process, fed by us
        result.notes[:0] = notes
        self._last_cache[snapshot.key] = (snapshot.source, config_key, result)
        return self._analysis(snapshot, config, result, started, reused=False)

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
