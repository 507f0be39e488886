"""Runs the checker for open documents and publishes what is still true.

Why it is shaped this way:

- The checker runs on one worker thread, never on the event loop, so that
  ``didChange``, hover and cancellation keep flowing while a big file is being
  analyzed (one thread: two analyses at once would only fight over the GIL).
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
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from lsprotocol import types

from graphlife.config import Config
from graphlife.findings import Finding
from graphlife.lsp.debounce import Debouncer
from graphlife.lsp.diagnostics import diagnostics_by_uri
from graphlife.lsp.documents import Snapshot, current_stamp, take_snapshot
from graphlife.lsp.log import log, log_exception

#: Test and debugging knob: an artificial delay (ms) inside each analysis, to make
#: "a slow analysis is overtaken by a newer version" reproducible.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
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


class Linter:
    """Debounced, off-loop, never-stale diagnostics for every open document and notebook."""

    def __init__(self, server, settings) -> None:
        self.server = server
        self.settings = settings
        self.debouncer = Debouncer()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphlife-check")
        self._generation: dict[str, int] = {}
        self._results: dict[str, Analysis] = {}
        self._published: dict[str, set[str]] = {}  # key -> URIs that got diagnostics
        self._last_cache: dict[str, tuple[str, str, object]] = {}  # key -> (source, config repr, CheckResult)
        self._last_report: dict[str, tuple] = {}  # key -> (syntax errors, notes) already logged

    # -- requests -------------------------------------------------------------------------

    def request(self, key: str, delay: float | None = None) -> None:
        """Analyze ``key`` after the debounce (or ``delay`` seconds), superseding earlier requests."""
        generation = self._generation.get(key, 0) + 1
        self._generation[key] = generation
        wait = self.settings.debounce if delay is None else delay
        self.debouncer.schedule(key, wait, lambda: self._lint(key, generation))

    def forget(self, key: str, uris: list[str] = ()) -> None:
        """The document or notebook closed: drop pending work and clear its diagnostics."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self.debouncer.cancel(key)
        self._results.pop(key, None)
        self._last_cache.pop(key, None)
        self._last_report.pop(key, None)
        for uri in set(uris) | self._published.pop(key, set()):
            self._send(uri, None, [])

    def result(self, key: str) -> Analysis | None:
        return self._results.get(key)

    # -- running the checker ----------------------------------------------------------------

    async def _lint(self, key: str, generation: int) -> None:
        try:
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
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the server
            log_exception(self.server, f"analysis of {key}", exc)

    async def analyze(self, key: str) -> Analysis | None:
        """Check a snapshot of ``key`` on the worker thread; ``None`` when it is not open."""
        snapshot = take_snapshot(self.server.workspace, key)
        if snapshot is None:
            return None
        config = self.settings.config_for(snapshot.path)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self._check, snapshot, config)

    async def fresh(self, key: str) -> Analysis | None:
        """The analysis of what the editor shows now: the published one, or a new one."""
        stamp = current_stamp(self.server.workspace, key)
        if stamp is None:
            return None
        known = self._results.get(key)
        if known is not None and known.snapshot.stamp == stamp:
            return known
        analysis = await self.analyze(key)
        if analysis is not None and current_stamp(self.server.workspace, key) == analysis.snapshot.stamp:
            self._results[key] = analysis
        return analysis

    def run_in_worker(self, function, *args):
        """Run ``function(*args)`` on the checker's thread (libcst fixes are slow too)."""
        return asyncio.get_running_loop().run_in_executor(self.executor, function, *args)

    def _check(self, snapshot: Snapshot, config: Config) -> Analysis:
        from graphlife.checker import check_source  # noqa: PLC0415

        started = time.perf_counter()
        if _TEST_DELAY:
            time.sleep(_TEST_DELAY)
        config_key = repr(config)
        cached = self._last_cache.get(snapshot.key)
        extra_notes: list[str] = []
        if cached is not None and cached[0] == snapshot.source and cached[1] == config_key:
            result, reused = cached[2], True
        else:
            source = snapshot.source
            if _LONE_SURROGATE.search(source):
                # Text the editor decoded from invalid bytes: one replacement character each keeps
                # every position where it was, and the rest of the file is still analyzed.
                source = _LONE_SURROGATE.sub("\ufffd", source)
                extra_notes.append("contains bytes that are not valid UTF-8; they were read as U+FFFD")
            result = check_source(source, snapshot.path, config, time_budget=self.settings.time_budget)
            result.notes[:0] = extra_notes
            reused = False
            self._last_cache[snapshot.key] = (snapshot.source, config_key, result)
        return Analysis(
            snapshot=snapshot,
            config=config,
            findings=list(result.findings),
            syntax_errors=list(result.syntax_errors),
            notes=list(result.notes),
            seconds=time.perf_counter() - started,
            reused=reused,
        )

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
        log(
            self.server,
            f"checked {name}: {len(analysis.findings)} finding(s) in {analysis.seconds * 1000:.0f} ms",
            types.MessageType.Log,
        )
