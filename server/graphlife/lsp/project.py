"""What the open documents' analyses say about each other's files.

An analysis follows the checked file's imports into the user's other modules
(:class:`graphlife.project.provider.ProjectModules`), so it can find a bug in a
file that is not the one analyzed: ``train.py``'s check finds the in-place op in
``layers.py``. Two consequences for the server, one class each:

- :class:`DiagnosticBoard`: a document's diagnostics are its own analysis's plus
  those the analyses of other open documents found in it, published on its URI
  even when it is not open (the Problems panel shows them, as Pylance's do). One
  per range and rule, the strongest severity deciding. When a contributor's
  analysis changes or its document closes, what it said is withdrawn.
- :class:`Dependents`: which open documents read which files, so that an edit of
  ``layers.py`` (in its buffer, or on disk) re-analyzes ``train.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from lsprotocol import types

from graphlife.checker import CheckResult
from graphlife.lsp.diagnostics import merge_diagnostics
from graphlife.lsp.positions import split_lines
from graphlife.project.provider import ProjectModules


def path_key(path: str) -> str:
    """One spelling per file, to compare the paths of documents and of files read."""
    return os.path.normcase(os.path.normpath(os.path.abspath(path)))


class DiagnosticBoard:
    """Per analysis key, the diagnostics it found per URI; per URI, their merge."""

    def __init__(self) -> None:
        self._by_key: dict[str, dict[str, list[types.Diagnostic]]] = {}
        self._sent: dict[str, list[types.Diagnostic]] = {}

    def post(self, key: str, by_uri: Mapping[str, list[types.Diagnostic]]) -> set[str]:
        """Replace what ``key``'s analysis says; the URIs whose diagnostics may have changed."""
        before = self._by_key.get(key, {})
        self._by_key[key] = dict(by_uri)
        return set(before) | set(by_uri)

    def withdraw(self, key: str) -> set[str]:
        """``key`` closed: forget what it said; the URIs it had said something about."""
        return set(self._by_key.pop(key, {}))

    def uris_of(self, key: str) -> set[str]:
        return set(self._by_key.get(key, {}))

    def merged(self, uri: str) -> list[types.Diagnostic]:
        """What the editor should show on ``uri`` now."""
        return merge_diagnostics(by_uri[uri] for by_uri in self._by_key.values() if uri in by_uri)

    def merged_with(self, uri: str, key: str, own: list[types.Diagnostic]) -> list[types.Diagnostic]:
        """What the editor should show on ``uri`` with ``own`` as ``key``'s part (a pull)."""
        others = [by_uri[uri] for other, by_uri in self._by_key.items() if other != key and uri in by_uri]
        return merge_diagnostics([own, *others])

    def differs_from_sent(self, uri: str, diagnostics: list[types.Diagnostic]) -> bool:
        """Whether ``diagnostics`` differ from what was last published on ``uri`` (and note them
        as published): a contributor's re-analysis that says the same need not be re-sent."""
        changed = self._sent.get(uri) != diagnostics
        if diagnostics:
            self._sent[uri] = diagnostics
        else:
            self._sent.pop(uri, None)
        return changed


class Dependents:
    """Which analysis keys read which files of the project in their last analysis."""

    def __init__(self) -> None:
        self._reads: dict[str, frozenset[str]] = {}

    def record(self, key: str, paths: Iterable[str]) -> None:
        self._reads[key] = frozenset(path_key(path) for path in paths)

    def forget(self, key: str) -> None:
        self._reads.pop(key, None)

    def of(self, paths: Iterable[str], but: str | None = None) -> list[str]:
        """The keys (other than ``but``) whose last analysis read one of ``paths``."""
        wanted = {path_key(path) for path in paths}
        return [key for key, read in self._reads.items() if key != but and read & wanted]


def other_lines(result: CheckResult, modules: ProjectModules) -> dict[str, list[str]]:
    """The lines of each other file the findings name (their own or a related place), split
    as LSP counts lines, to convert positions there with that file's text."""
    named = {finding.span.path for finding in result.findings}
    named |= {item.span.path for finding in result.findings for item in finding.related}
    named.discard(None)
    return {module.path: split_lines(module.source) for module in modules.found() if module.path in named}


def unreadable_notes(modules: ProjectModules) -> list[str]:
    """Imported files of the project that could not be analyzed, for the log (as the CLI says)."""
    return [f"cannot analyze {where} (imported): {reason}" for where, reason in modules.unreadable.items()]
