"""The language server's checker: the same findings as :func:`graphlife.checker.check_source`,
at the cost of the code that changed.

One :class:`IncrementalChecker` lives per open document. Between versions it
keeps the parsed top-level blocks (:mod:`graphlife.analysis.blocks`: only the
blocks whose text changed are parsed again, and in an edited class only the methods
whose lines changed: :mod:`graphlife.analysis.class_body`) and what each unit of the engine
reported (:mod:`graphlife.analysis.unit_cache`: a function analyzed alone is
analyzed again only when its own code, the code it inlined, or the file's
definitions changed; a method when the part of the ``self`` it starts from that it read, built
again after an edit of the code ``__init__`` runs, is another: :mod:`graphlife.analysis.self_print`,
:mod:`graphlife.analysis.self_reads`; the module body
when any of its statements or the functions it calls changed, and then each call in it that
takes and gives no graph only when its own code or values changed). The result is the one a full check of the same
text gives; the tests compare the two after every edit they make.

With a :class:`~graphlife.project.provider.ProjectModules` the check follows the file's
imports into the user's other modules. The unit cache knows only the checked file's code: a
unit it replays may have read a value of an imported module (a constant, a class it did not
inline), so when any file the previous check read holds other content now, or the search
roots changed, or :meth:`IncrementalChecker.invalidate_project` says a file appeared, the
cache starts over (the blocks stay parsed). That is cheap next to the analysis, and sound.
"""

from __future__ import annotations

import ast
import threading

from graphlife.analysis.blocks import BlockParser
from graphlife.analysis.tree_index import TreeIndex
from graphlife.analysis.unit_cache import UnitCache
from graphlife.checker import DEFAULT_TIME_BUDGET, CheckResult, SyntaxProblem, check_source, run_checks
from graphlife.config import Config
from graphlife.project.provider import ProjectModules


class IncrementalChecker:
    """Checks successive versions of one document, reusing what an edit did not change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self.parser = BlockParser()
        self.units = UnitCache()
        self._interrupted = False
        #: What the last check read of the project: its search roots and, per file, the content
        #: hash (``None``: the last check did not follow imports, or nothing is cached yet).
        self._project: tuple[tuple[str, ...], dict[str, str]] | None = None
        self._files_appeared = False

    def invalidate_project(self) -> None:
        """A file appeared on disk: an import the last check could not resolve (or resolved to
        a later root) may name it now, which no content hash of the files read can tell."""
        self._files_appeared = True  # read by the next check (never waits for a running one)

    def check(
        self, source: str, config: Config | None = None, *, time_budget: float = DEFAULT_TIME_BUDGET,
        modules: ProjectModules | None = None, path: str | None = None,
    ) -> CheckResult:
        """The findings for ``source`` (the document's newest text).

        The language server runs one analysis per document at a time, so the lock is only a
        guard; it is never waited for. A cancellation is an exception raised inside the
        running thread at any point, possibly between taking the lock and the ``try``: a
        check that finds the lock taken does a full check instead of hanging."""
        if not self._lock.acquire(blocking=False):
            return check_source(source, path, config, time_budget=time_budget, modules=modules)
        try:
            if self._interrupted:
                self._reset()  # a cancelled check may have left the caches half updated
            if self._files_appeared or self._project_changed(modules):
                self.units = UnitCache()
            self._files_appeared = False
            self._project = None
            self._interrupted = True
            result = run_checks(source, config, time_budget, self._parse, unit_cache=self.units,
                                modules=modules, path=path)
            self._interrupted = False
            if modules is not None:
                self._project = (tuple(modules.roots.folders), modules.dependencies())
            return result
        finally:
            self._lock.release()

    def _project_changed(self, modules: ProjectModules | None) -> bool:
        """Whether what the cached units saw of the project may differ from what ``modules``
        gives now (a check without a provider after one with counts as a change, and back)."""
        if modules is None:
            return self._project is not None
        if self._project is None:
            return self.units.entries != {} or self.units.calls != {}
        roots, read = self._project
        return roots != tuple(modules.roots.folders) or modules.changed_since(read)

    def _parse(self, source: str) -> tuple[ast.Module, list[SyntaxProblem], TreeIndex]:
        parsed = self.parser.parse(source)
        self.units.begin(parsed)
        problems = [SyntaxProblem(line, column, message) for line, column, message in parsed.errors]
        return parsed.tree, problems, parsed.index

    @property
    def statistics(self) -> dict[str, int]:
        """How many units, and calls analyzed apart, the last check replayed and ran (for logs
        and benchmarks)."""
        return {"replayed": self.units.replayed, "ran": self.units.ran,
                "calls_replayed": self.units.calls_replayed, "calls_ran": self.units.calls_ran}


__all__ = ["CheckResult", "IncrementalChecker"]
