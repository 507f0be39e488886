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
- Each check follows the document's imports into the user's other modules
  (:class:`graphlife.project.provider.ProjectModules`: the disk, the open
  buffers winning, one parse cache for the whole server). A finding in another
  file is published on that file's URI, merged with what the other analyses say
  there (:mod:`.project`); the files an analysis read name the documents to
  analyze again when one of them changes (:meth:`Linter.request_dependents`).
  ``benchmarks/lsp_latency.py --project`` measures an edit in an imported module
  -> the dependent's diagnostics.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from graphlife.checker import CheckResult
from graphlife.config import Config
from graphlife.findings import Finding, MessageTemplate, localized
from graphlife.incremental import IncrementalChecker
from graphlife.lsp.cancel import Cancelled, Runner
from graphlife.lsp.checker_process import CheckerProcess, CheckerProcessDied
from graphlife.lsp.debounce import Debouncer
from graphlife.lsp.diagnostics import diagnostics_by_uri
from graphlife.lsp.documents import Snapshot, current_stamp, fs_path, open_buffers, take_snapshot
from graphlife.lsp.isolated import TEST_DELAY_VARIABLE
from graphlife.lsp.log import log, log_exception
from graphlife.lsp.memory import mostly_new, release_memory
from graphlife.lsp.project import Dependents, DiagnosticBoard, other_lines, path_key, unreadable_notes
from graphlife.lsp.settings import Settings
from graphlife.lsp.unanalyzed import unanalyzed_diagnostics
from graphlife.project.provider import ProjectModules
from graphlife.project.sources import SourceCache

if TYPE_CHECKING:
    from graphlife.analysis.stories import Stories

_T = TypeVar("_T")

#: Re-analyzes a fixed text: its findings, ``None`` when it does not parse (``graphlife.fixes.verify.Analyze``).
FixAnalyze = Callable[[str], "list[Finding] | None"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: Analyses of different documents that may run at once.
WORKERS = 3

#: The log's line about a syntax error (Python's own message quoted as Python wrote it).
SYNTAX_ERROR_LOG = MessageTemplate(
    "log.syntax-error",
    "{where}: syntax error ({error}); the top-level block around it is skipped, the rest of the file is still checked",
    zh_cn="{where}：语法错误（{error}）；跳过它所在的顶层代码块，文件的其余部分照常检查")


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
    #: The lines (as LSP counts them) of the other files of the project its findings name.
    other_lines: dict[str, list[str]] = field(default_factory=dict)
    #: Every file of the project it read (absolute path) and the hash of the content read.
    dependencies: dict[str, str] = field(default_factory=dict)
    #: The hover's graph-lifetime stories of this version (:mod:`graphlife.lsp.hover_stories`).
    stories: Stories | None = None

    def findings_in_file(self, path: str) -> list[Finding]:
        """Its findings in another file of the project (``path`` as the document's path)."""
        wanted = path_key(path)
        return [finding for finding in self.findings
                if finding.span.path is not None and path_key(finding.span.path) == wanted]


@dataclass
class _Kept:
    """The last result of a key, reused while the text, the settings and every file it read
    are the same."""

    source: str
    config_key: str
    result: CheckResult
    dependencies: dict[str, str]
    other_lines: dict[str, list[str]]


class Linter:
    """Debounced, off-loop, never-stale diagnostics for every open document and notebook."""

    def __init__(self, server: LanguageServer, settings: Settings) -> None:
        self.server = server
        self.settings = settings
        self.debouncer = Debouncer()
        #: A cold analysis asked for a whole collection at the next rest (:meth:`_release_memory`).
        self._release_whole = False
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
        #: What each key's analysis found, per URI (its own documents, and other files of the project).
        self._board = DiagnosticBoard()
        #: Pull mode (graphlife.lsp.pull_diagnostics): nothing is pushed; ``_refresh``: ask the client to pull.
        self._pulled = False
        self._refresh = False
        #: key -> the own documents (URI -> version) of its published analysis.
        self._own: dict[str, dict[str, int | None]] = {}
        #: Which keys read which files of the project (to re-analyze them when one changes).
        self.dependents = Dependents()
        #: The parsed modules of the project, shared by every analysis in this process.
        self.sources = SourceCache()
        #: Bumped when files appear on disk (a checker process hears of it with its next request).
        self._files_appeared = 0
        self._last_cache: dict[str, _Kept] = {}
        self._last_report: dict[str, tuple] = {}  # key -> (syntax errors, notes) already logged
        #: key -> the document's incremental checker (keeps parsed blocks and unit results between edits)
        self._checkers: dict[str, IncrementalChecker] = {}
        #: Per document, the incremental checker that re-analyzes fixed texts (:meth:`fix_analyzer`).
        self._fix_checkers: dict[str, IncrementalChecker] = {}
        #: key -> the checker process of a document that was over ISOLATE_CHARS at some point
        #: (it stays there while open, so that typing around the limit keeps the caches warm).
        self._processes: dict[str, CheckerProcess] = {}
        self._crashed: dict[str, tuple] = {}  # key -> stamp whose analysis ended with its process
        #: Called with each analysis published (the hover's stories are told a moment later).
        self.on_published: list[Callable[[Analysis], None]] = []
        #: Called with a key whose published analysis is out of date (a newer version is
        #: coming, or it closed): work done for that analysis may stop.
        self.on_superseded: list[Callable[[str], None]] = []

    # -- requests -------------------------------------------------------------------------

    def request(self, key: str, delay: float | None = None, same_text_may_finish: bool = False) -> None:
        """Analyze ``key`` after the debounce (or ``delay`` seconds), superseding earlier requests.

        The analysis running for ``key`` is stopped, unless ``same_text_may_finish``
        (a save) and it is checking exactly the current text: then its result is
        cached and the new request answers from the cache.
        """
        generation = self._generation.get(key, 0) + 1
        self._generation[key] = generation
        for superseded in self.on_superseded:
            superseded(key)
        running = self._running_stamp.get(key)
        if not (same_text_may_finish and running == current_stamp(self.server.workspace, key)):
            self._cancel_running(key, "a newer version arrived")
        wait = self.settings.debounce if delay is None else delay
        self.debouncer.schedule(key, wait, lambda: self._lint(key, generation))

    def request_dependents(self, paths: Sequence[str], but: str | None = None, typed: bool = False) -> None:
        """Analyze again (after the debounce) every open document whose last analysis read one
        of ``paths``: an edit of ``layers.py`` changes what ``train.py``'s check finds.
        ``typed``: the change is unsaved typing, which a dependent set not to lint on change
        ignores (it hears of the save)."""
        for key in self.dependents.of(paths, but=but):
            if not typed or self.settings.config_for(fs_path(key)).lint_on_change:
                self.request(key)

    def files_appeared(self) -> None:
        """New files on disk: an import that named nothing (or a file in a later root) may
        name one of them now; no analysis may reuse what it read before."""
        self._files_appeared += 1
        self._last_cache.clear()
        for checker in (*self._checkers.values(), *self._fix_checkers.values()):
            checker.invalidate_project()

    def forget(self, key: str, uris: Sequence[str] = ()) -> None:
        """The document or notebook closed: drop pending work and clear its diagnostics."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self.debouncer.cancel(key)
        for superseded in self.on_superseded:
            superseded(key)
        self._cancel_running(key, "the document was closed", hard=True)
        process = self._processes.pop(key, None)
        if process is not None:
            process.kill()  # its memory goes back to the OS at once
        self._crashed.pop(key, None)
        self._results.pop(key, None)
        self._last_cache.pop(key, None)
        self._last_report.pop(key, None)
        self._checkers.pop(key, None)
        self._fix_checkers.pop(key, None)
        self._locks.pop(key, None)
        self._gave_up.pop(key, None)
        self.dependents.forget(key)
        own = self._own.pop(key, {})
        for uri in set(uris) | set(own) | self._board.withdraw(key):
            self._publish_uri(uri, always=uri in own or uri in uris)

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
            self.dependents.record(key, analysis.dependencies)
            self._publish(analysis)
            self._report(analysis)
            for published in self.on_published:
                published(analysis)
            if not analysis.reused and analysis.in_process and len(analysis.snapshot.source) > 100_000:
                # After publishing: not on the latency path. After an edit the incremental checker
                # made little garbage, and trimming competes with the next analysis: wait for quiet.
                # (A checker process trims its own heap.)
                cold = mostly_new(analysis.units)
                self._release_whole = self._release_whole or cold
                self.debouncer.schedule(("release memory",), 0.0 if cold else IDLE_TRIM_SECONDS, self._release_memory)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the server
            log_exception(self.server, f"analysis of {key}", exc)

    async def _release_memory(self) -> None:
        """At rest: a whole collection when a cold analysis asked for one since the last, else
        one of what was made since (:func:`~graphlife.lsp.memory.release_memory`)."""
        whole, self._release_whole = self._release_whole, False
        await asyncio.get_running_loop().run_in_executor(self.executor, release_memory, whole)

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
        buffers = open_buffers(self.server.workspace)  # on the event loop: the documents as they are now
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

            work = self._check_isolated(snapshot, config, buffers, process, stop_reason)
        else:
            job, future = self.runner.submit(key, self._check, snapshot, config, buffers)

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
        self, snapshot: Snapshot, config: Config, buffers: dict[str, str], process: CheckerProcess,
        stop_reason: list[str],
    ) -> Analysis:
        """:meth:`_check` in the document's checker process, which a hard stop kills. The
        process follows the imports too: it gets the open buffers with each version, reads
        the disk itself, and answers with the files it read and the lines of those its
        findings name."""
        started = time.perf_counter()
        config_key = repr(config)
        modules = ProjectModules(snapshot.path, config.src, buffers=buffers, sources=self.sources)
        # Off the event loop: a changed module is read (and parsed) to compare.
        cached = await asyncio.get_running_loop().run_in_executor(
            self.executor, self._reusable, snapshot, config_key, modules)
        if cached is not None:
            return self._analysis(snapshot, config, cached, started, reused=True)
        source, notes = _prepare(snapshot.source)
        try:
            reply = await process.check(source, config, self.settings.time_budget, path=snapshot.path,
                                        buffers=buffers, files_appeared=self._files_appeared)
        except CheckerProcessDied:
            if stop_reason:
                raise Cancelled(stop_reason[0]) from None
            raise
        result = reply.result
        result.notes[:0] = notes
        kept = self._last_cache[snapshot.key] = _Kept(snapshot.source, config_key, result, reply.dependencies,
                                                      reply.other_lines)
        analysis = self._analysis(snapshot, config, kept, started, reused=False)
        analysis.units = reply.units
        analysis.in_process = False
        return analysis

    def _reusable(self, snapshot: Snapshot, config_key: str, modules: ProjectModules) -> _Kept | None:
        """The key's last result, when its text, its settings and every file it read are the
        same now (a save after the edits were analyzed; a dependency's edit that was undone)."""
        kept = self._last_cache.get(snapshot.key)
        if kept is None or kept.source != snapshot.source or kept.config_key != config_key:
            return None
        return None if modules.changed_since(kept.dependencies) else kept

    @staticmethod
    def _analysis(snapshot: Snapshot, config: Config, kept: _Kept, started: float, reused: bool) -> Analysis:
        result = kept.result
        return Analysis(
            snapshot=snapshot,
            config=config,
            findings=list(result.findings),
            syntax_errors=list(result.syntax_errors),
            notes=list(result.notes),
            seconds=time.perf_counter() - started,
            reused=reused,
            other_lines=kept.other_lines,
            dependencies=kept.dependencies,
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

    def _check(self, snapshot: Snapshot, config: Config, buffers: dict[str, str]) -> Analysis:
        started = time.perf_counter()
        if _TEST_DELAY:
            end = time.monotonic() + _TEST_DELAY
            while time.monotonic() < end:  # short sleeps: a cancellation lands between them
                time.sleep(0.01)
        config_key = repr(config)
        modules = ProjectModules(snapshot.path, config.src, buffers=buffers, sources=self.sources)
        cached = self._reusable(snapshot, config_key, modules)
        if cached is not None:
            return self._analysis(snapshot, config, cached, started, reused=True)
        source, notes = _prepare(snapshot.source)
        checker = self._checkers.setdefault(snapshot.key, IncrementalChecker())
        result = checker.check(source, config, time_budget=self.settings.time_budget, modules=modules,
                               path=snapshot.path)
        result.notes[:0] = notes
        result.notes.extend(unreadable_notes(modules))
        kept = self._last_cache[snapshot.key] = _Kept(snapshot.source, config_key, result, modules.dependencies(),
                                                      other_lines(result, modules))
        analysis = self._analysis(snapshot, config, kept, started, reused=False)
        analysis.units = checker.statistics
        return analysis

    def project_modules(self, analysis: Analysis) -> ProjectModules:
        """The project's modules as the analysis's document sees them now (open buffers winning),
        read through the server's parse cache: for the hover's story."""
        buffers = open_buffers(self.server.workspace)
        return ProjectModules(analysis.snapshot.path, analysis.config.src, buffers=buffers, sources=self.sources)

    def project_for_fixes(self, analysis: Analysis) -> Callable[[], ProjectModules]:
        """A fresh view of the project as the analysis's document sees it now, for each analysis
        of a fixed text (the open buffers read once, here on the server's thread; the parsing
        shared through the server's parse cache): a fix is judged as its finding was found."""
        buffers = open_buffers(self.server.workspace)
        path, src, sources = analysis.snapshot.path, analysis.config.src, self.sources
        return lambda: ProjectModules(path, src, buffers=buffers, sources=sources)

    def fix_tools(self, analysis: Analysis) -> tuple[Callable[[], ProjectModules], FixAnalyze]:
        """What verifying the analysis's fixes takes: its project and the analyzer of fixed texts."""
        modules = self.project_for_fixes(analysis)
        return modules, self.fix_analyzer(analysis, modules)

    def fix_analyzer(self, analysis: Analysis, modules: Callable[[], ProjectModules]) -> FixAnalyze:
        """How fixes of the analysis's document are verified: each fixed text checked by an
        incremental checker of its own per document (not the one the diagnostics use, so the
        two never wait on each other), in the document's project. A fixed text differs from
        the document in a statement or two, so after the first, each costs the units the fix
        touched, across findings and versions (benchmarks/RESULTS.md, "Fix verification")."""
        checker = self._fix_checkers.setdefault(analysis.snapshot.key, IncrementalChecker())
        config, path, budget = analysis.config, analysis.snapshot.path, self.settings.time_budget

        def analyze(source: str) -> list[Finding] | None:
            result = checker.check(source, config, time_budget=budget, modules=modules(), path=path)
            return None if result.syntax_errors else result.findings

        return analyze

    # -- publishing ---------------------------------------------------------------------------

    def _publish(self, analysis: Analysis) -> None:
        """Publish the analysis's own documents (always: the client waits for each version)
        and every other URI whose merged diagnostics it changed (a file it found a bug in,
        or one it no longer does)."""
        key = analysis.snapshot.key
        by_uri = self._diagnostics_of(analysis)
        own = {segment.uri: segment.version for segment in analysis.snapshot.segments}
        gone = set(self._own.get(key, {})) - set(own)  # a notebook cell that went away
        self._own[key] = own
        for uri in self._board.post(key, by_uri) | gone:
            self._publish_uri(uri, always=uri in own or uri in gone)

    def _diagnostics_of(self, analysis: Analysis) -> dict[str, list[types.Diagnostic]]:
        """The analysis's diagnostics per URI: its findings, and its syntax errors and skipped
        work (:mod:`.unanalyzed`), pushed or pulled alike."""
        codec = self.server.workspace.position_codec
        language = self.settings.language
        by_uri = diagnostics_by_uri(analysis.findings, analysis.snapshot, codec, analysis.other_lines, language)
        show_syntax_errors = bool(self.settings.option(analysis.snapshot.path, "showSyntaxErrors"))
        for uri, diagnostics in unanalyzed_diagnostics(analysis.snapshot, analysis.syntax_errors, analysis.notes,
                                                       codec, show_syntax_errors, language).items():
            by_uri.setdefault(uri, []).extend(diagnostics)
        return by_uri

    def _publish_uri(self, uri: str, always: bool) -> None:
        """Send ``uri`` what every analysis says about it now (``always``, or when it changed)."""
        diagnostics = self._board.merged(uri)
        changed = self._board.differs_from_sent(uri, diagnostics)
        if always or changed:
            version = next((own[uri] for own in self._own.values() if uri in own), None)
            self._send(uri, version, diagnostics)

    def post(self, key: str, by_uri: dict[str, list[types.Diagnostic]]) -> None:
        """Diagnostics of an analysis made outside the open documents (a closed file of the
        workspace, :mod:`.workspace_scope`) under its own ``key``; ``{}`` withdraws them."""
        for uri in self._board.post(key, by_uri) if by_uri else self._board.withdraw(key):
            self._publish_uri(uri, always=False)

    def contributed(self, uri: str, path: str | None) -> list[tuple[Finding, Analysis]]:
        """The findings other documents' analyses made in the file at ``path`` (the document
        ``uri``), each with its analysis: hover explains them as it does the document's own."""
        if path is None:
            return []
        return [(finding, analysis) for key, analysis in self._results.items()
                if key != uri for finding in analysis.findings_in_file(path)]

    def _send(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        if self._pulled:  # the client pulls (graphlife.lsp.pull_diagnostics): tell it to pull again
            if self._refresh:
                self.server.workspace_diagnostic_refresh(None)
            return
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )

    def serve_pulls(self, refresh: bool) -> None:
        """Answer pulls instead of pushing; ``refresh``: the client can be asked to pull again."""
        self._pulled, self._refresh = True, refresh

    def diagnostics_for(self, uri: str, analysis: Analysis | None) -> list[types.Diagnostic]:
        """What every open document's analysis says about ``uri``, with ``analysis`` (the
        document's own, maybe newer than the last published one) in place of its key's."""
        if analysis is None:
            return self._board.merged(uri)
        own = self._diagnostics_of(analysis)
        return self._board.merged_with(uri, analysis.snapshot.key, own.get(uri, []))

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
        language = self.settings.language
        for error in analysis.syntax_errors:
            where = f"{name}:{error.line}:{error.column}"
            log(self.server, SYNTAX_ERROR_LOG(where=where, error=error.message).in_language(language),
                types.MessageType.Warning)
        for note in analysis.notes:
            log(self.server, f"{name}: {localized(note, language)}", types.MessageType.Warning)
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

