"""``graphlife.reportingScope: "workspace"``: diagnostics for every Python file of the workspace.

By default the server reports on the open documents (and on the modules their
analyses reach). A user who wants the whole project checked, as ``graphlife
check .`` in CI does, sets the scope to ``workspace``: then every ``.py`` file of
the workspace folders that is not open is checked too, each with the project-wide
analysis (its imports followed through the server's shared parse cache), and its
diagnostics are published on its URI, so the Problems panel lists them. The files
are those ``graphlife check .`` would check (:mod:`graphlife.discovery`): what
``exclude`` / ``extend-exclude`` of the nearest ``[tool.graphlife]`` (and the editor's
settings) leave out, and what git ignores, is not reported, nor checked when it changes.

An open document is the linter's (its buffer wins): the workspace's diagnostics
of that file are withdrawn when it opens and made again when it closes. A file
changed on disk is checked again; a deleted one loses its diagnostics. The files
are checked on a worker thread, one after the other, so that the open documents'
analyses are never held back by more than one file.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable

from lsprotocol import types

from graphlife.checker import check_source
from graphlife.config import Config
from graphlife.discovery import discover, forget_ignore_files, left_out
from graphlife.lsp.diagnostics import diagnostics_by_uri, file_uri
from graphlife.lsp.documents import Snapshot, fs_path
from graphlife.lsp.linting import Linter
from graphlife.lsp.log import log
from graphlife.lsp.notebooks import JoinedCell
from graphlife.lsp.project import other_lines, path_key
from graphlife.lsp.unanalyzed import unanalyzed_diagnostics
from graphlife.project.limits import MAX_SOURCE_BYTES
from graphlife.project.provider import ProjectModules
from graphlife.project.sources import Unreadable, read_text
from graphlife.text_lines import split_lines

#: Files checked at most per workspace (a monorepo must not keep the server busy for an hour).
MAX_FILES = 2_000
#: Prefix of the linter keys under which the workspace's diagnostics are posted.
KEY_PREFIX = "workspace:"


class WorkspaceScope:
    """The closed files of the workspace, checked when the scope is ``workspace``."""

    def __init__(self, linter: Linter, in_scope: Callable[[str], bool]) -> None:
        self.linter = linter
        self.in_scope = in_scope  # whether a file's settings say reportingScope == "workspace"
        self._checked: set[str] = set()  # path keys with diagnostics posted
        self._task: asyncio.Task | None = None
        self._single_checks: set[asyncio.Task] = set()

    def refresh(self, folders: Iterable[str], open_paths: Iterable[str]) -> None:
        """Check every file of ``folders`` in scope that is not open (again); drop the others.
        Nothing is walked while no folder is in scope and nothing was reported."""
        folders = list(folders)
        if not self._checked and not any(self.in_scope(os.path.join(folder, "_")) for folder in folders):
            return
        if self._task is not None:
            self._task.cancel()
        self._task = asyncio.ensure_future(self._refresh(folders, {path_key(p) for p in open_paths}))

    def opened(self, path: str) -> None:
        """The file opened: its buffer is the linter's now."""
        if path_key(path) in self._checked:
            self.forget(path)

    def closed_or_changed(self, path: str) -> None:
        """The file closed, or changed on disk while closed: check it again when in scope."""
        if (self.in_scope(path) and os.path.isfile(path) and not self._is_open(file_uri(path))
                and not left_out(path, False, self.linter.settings.config_for(path))):
            task = asyncio.ensure_future(self.check(path))
            self._single_checks.add(task)  # kept until done: a task only the loop refers to may be collected
            task.add_done_callback(self._single_checks.discard)
        elif path_key(path) in self._checked:
            self.forget(path)

    def _is_open(self, uri: str) -> bool:
        documents = self.linter.server.workspace.text_documents
        return uri in documents or any(path_key(p) == path_key(fs) for p, fs in
                                       ((fs_path(u), fs_path(uri)) for u in documents) if p and fs)

    async def _refresh(self, folders: list[str], open_keys: set[str]) -> None:
        loop = asyncio.get_running_loop()
        files = await loop.run_in_executor(self.linter.executor, _listed, folders, self.linter.settings.config_for)
        wanted = [path for path in files if path_key(path) not in open_keys and self.in_scope(path)]
        if len(wanted) > MAX_FILES:
            log(self.linter.server, f"reportingScope workspace: {len(wanted)} Python files; checking the first "
                f"{MAX_FILES}", types.MessageType.Warning)
            wanted = wanted[:MAX_FILES]
        for stale in self._checked - {path_key(p) for p in wanted}:
            self.forget(stale)
        for path in wanted:
            await self.check(path)
        if wanted:
            log(self.linter.server, f"reportingScope workspace: checked {len(wanted)} closed file(s)",
                types.MessageType.Log)

    async def check(self, path: str) -> None:
        """Check one closed file and post its diagnostics (those in other files it reaches too)."""
        loop = asyncio.get_running_loop()
        by_uri = await loop.run_in_executor(self.linter.executor, self._diagnostics, path)
        # An open document's diagnostics are its own analysis's (its buffer may differ from the disk).
        by_uri = {uri: diagnostics for uri, diagnostics in by_uri.items() if not self._is_open(uri)}
        self.linter.post(KEY_PREFIX + path_key(path), by_uri)
        if by_uri:
            self._checked.add(path_key(path))

    def forget(self, path: str) -> None:
        """The file opened, was deleted or left the scope: withdraw what its check said."""
        self._checked.discard(path_key(path))
        self.linter.post(KEY_PREFIX + path_key(path), {})

    def _diagnostics(self, path: str) -> dict[str, list[types.Diagnostic]]:
        try:
            stat = os.stat(path)
        except OSError:
            return {}
        if stat.st_size > MAX_SOURCE_BYTES:
            return {}
        text = read_text(path, stat)
        if isinstance(text, Unreadable):
            return {}
        config = self.linter.settings.config_for(path)
        if not config.enable:
            return {}
        modules = ProjectModules(path, config.src, sources=self.linter.sources)
        result = check_source(text, path, config, modules=modules)
        uri = file_uri(path)
        snapshot = Snapshot(key=uri, source=text, path=path, stamp=(),
                            segments=(JoinedCell(uri, None, 0, tuple(split_lines(text))),), is_notebook=False)
        codec = self.linter.server.workspace.position_codec
        language = self.linter.settings.language
        by_uri = diagnostics_by_uri(result.findings, snapshot, codec, other_lines(result, modules), language)
        show = bool(self.linter.settings.option(path, "showSyntaxErrors"))
        for where, diagnostics in unanalyzed_diagnostics(snapshot, result.syntax_errors, result.notes, codec,
                                                         show, language).items():
            by_uri.setdefault(where, []).extend(diagnostics)
        return {where: diagnostics for where, diagnostics in by_uri.items() if diagnostics}


def _listed(folders: list[str], config_for: Callable[[str], Config]) -> list[str]:
    """The Python files of ``folders`` that ``graphlife check`` would check there (notebooks
    are the open documents' only), with the ``.gitignore`` files as they are now."""
    forget_ignore_files()
    settings: dict[str, Config] = {}

    def settings_for(folder: str) -> Config:
        if folder not in settings:
            settings[folder] = config_for(folder)
        return settings[folder]

    files, _ = discover(folders, settings_for)
    return [path for path in files if path.endswith(".py")]
