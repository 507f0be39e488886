"""The engine's view of the user's project: :class:`ProjectModules` finds and loads modules.

Why per analysis: which file a name means depends on the file being checked (its folder is
searched first) and on the open buffers of the moment, so one provider serves one analysis
and remembers each name it resolved, as ``sys.modules`` would: an import of the same module
from anywhere gets the same :class:`SourceModule`. The parsing, which does not depend on
either, is shared through a :class:`.sources.SourceCache`.

It also records what it read (:meth:`ProjectModules.dependencies`) and where it looked
(:meth:`ProjectModules.folders_searched`), so that a result cached for the entry file can be
recognized as stale when one of those files changes or a new module would be found.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from graphlife.analysis.modules import SourceModule
from graphlife.analysis.tree_index import TreeIndex
from graphlife.project.resolver import FolderListing, Kind, Location, Resolver, absolute_name, listing_digest
from graphlife.project.roots import SearchRoots, entry_module_name, search_roots
from graphlife.project.sources import ParsedSource, SourceCache

if TYPE_CHECKING:  # loaded by the analysis only: a check answered from the cache needs neither
    from graphlife.analysis.unseen_writes import AttributeWrites
    from graphlife.project.foreign_writes import ProjectWrites


class ProjectModules:
    """A :class:`graphlife.analysis.modules.ModuleProvider` for one checked file.

    ``entry_path`` is the checked file as the front end spells it (``None`` for an unsaved
    buffer); ``extra_roots`` are the configured ``src`` folders; ``buffers`` maps absolute
    paths of open editor buffers to their text, which wins over the disk. Modules found are
    spelled like the entry path: relative to the current folder when it is relative,
    absolute otherwise, so findings in them read like findings in the entry file."""

    def __init__(self, entry_path: str | None, extra_roots: Iterable[str] = (), *,
                 buffers: Mapping[str, str] | None = None, sources: SourceCache | None = None,
                 cwd: str | None = None) -> None:
        self._cwd = os.path.abspath(cwd or os.getcwd())
        self._buffers = {os.path.normpath(os.path.join(self._cwd, path)): text
                         for path, text in (buffers or {}).items()}
        self.roots: SearchRoots = search_roots(entry_path, extra_roots, self._cwd)
        self._entry_path = os.path.normpath(os.path.join(self._cwd, entry_path)) if entry_path is not None else None
        self._listing = FolderListing(self._buffers)
        self._resolver = Resolver(self.roots.folders, self._listing)
        self._sources = sources if sources is not None else SourceCache()
        self._relative_spelling = entry_path is not None and not os.path.isabs(entry_path)
        self._modules: dict[str, SourceModule | None] = {}
        self._read: dict[str, str] = {}
        self._writes: ProjectWrites | None = None
        #: Files an import resolved to that could not be analyzed: absolute path -> reason.
        self.unreadable: dict[str, str] = {}

    def entry(self, path: str | None, tree: ast.Module, source: str, lines: list[str],
              index: TreeIndex) -> SourceModule:
        """The checked file as a module: named from the roots (``pkg.train``), else its stem."""
        if path is None:
            return SourceModule("<unsaved>", "__main__", tree, source, lines, index, is_main=True)
        named = entry_module_name(os.path.join(self._cwd, path), self.roots, self._resolved_path)
        return SourceModule(path, named.name, tree, source, lines, index, is_package=named.is_package, is_main=True)

    def find(self, importer: SourceModule, module: str, level: int) -> SourceModule | None:
        """The project's module that ``import module`` (or ``level`` dots of a ``from``
        import) names in ``importer``; ``None`` for a library, a name Python would not find,
        or a file that cannot be analyzed."""
        name = absolute_name(importer, module, level)
        if name is None:
            return None
        if name not in self._modules:
            location = self._resolver.resolve(name)
            self._modules[name] = self._load(location) if location is not None else None
        return self._modules[name]

    def exists(self, module: str) -> bool:
        """Is ``module`` (absolute dotted name) a module of the project, without reading it?"""
        if module in self._modules:
            return self._modules[module] is not None
        location = self._resolver.resolve(module)
        return location is not None and location.kind is not Kind.NOT_SOURCE

    def lines_of(self, path: str) -> list[str] | None:
        """The lines of a module found so far, by its path as findings in it spell it (the
        checker reads the ``# graphlife: ignore`` comments of another file with them)."""
        for module in self._modules.values():
            if module is not None and module.path == path:
                return module.lines
        return None

    def found(self) -> list[SourceModule]:
        """The project's modules found so far (for the language server's map of importers)."""
        return [module for module in self._modules.values() if module is not None]

    def attribute_writes_elsewhere(self, names: frozenset[str], classes: frozenset[str]) -> AttributeWrites:
        """Which of ``names`` the project's other files may assign (or change the content of)
        on instances of the checked file's ``classes`` (:mod:`.foreign_writes`); the files
        that decide it count as read. An unsaved buffer belongs to no project: nothing."""
        # Loaded here: a check answered from the cache imports this module, not the engine's values.
        from graphlife.analysis.unseen_writes import AttributeWrites  # noqa: PLC0415
        from graphlife.project.foreign_writes import ProjectWrites  # noqa: PLC0415

        if self._entry_path is None:
            return AttributeWrites()
        if self._writes is None:  # walked once per analysis, asked once per class
            root = self.roots.project_root or self.roots.entry_folder
            self._writes = ProjectWrites(root, self._entry_path, self._buffers)
        return self._writes.writes(names, classes, self._sources, self._read)

    def dependencies(self) -> dict[str, str]:
        """Every file read so far (absolute path) and the hash of the content used."""
        return dict(self._read)

    def folders_searched(self) -> dict[str, str]:
        """Every folder searched so far (absolute path) and the digest of its importable names
        (:func:`.resolver.listing_digest`): what the files read cannot tell, that an import
        would now find a module created since (where it found nothing, or ahead of the one
        it found)."""
        return {folder: listing_digest(entries) for folder, entries in self._listing.listed().items()}

    def changed_since(self, previous: Mapping[str, str]) -> bool:
        """Whether a file an earlier analysis read (``previous``: its :meth:`dependencies`)
        holds other content now, as this provider would read it (an open buffer winning).

        Why: a result kept for the entry file (the language server's unit cache, its last
        result) is stale once a module it imported changed. Each file costs a ``stat`` (its
        parse is cached by modification time and size) or a hash of the buffer; nothing is
        recorded as read."""
        for path, digest in previous.items():
            if self._sources.load(path, self._buffers.get(path)).digest != digest:
                return True
        return False

    def _load(self, location: Location) -> SourceModule | None:
        if location.kind is Kind.NOT_SOURCE:
            return None
        if location.kind is Kind.NAMESPACE:
            empty = ast.Module(body=[], type_ignores=[])
            return SourceModule(self._spell(location.path), location.name, empty, "", [], TreeIndex.of_module(empty),
                                is_package=True)
        loaded = self._sources.load(location.path, self._buffers.get(location.path))
        self._read[location.path] = loaded.digest
        if not isinstance(loaded, ParsedSource):
            self.unreadable[location.path] = loaded.reason
            return None
        return SourceModule(self._spell(location.path), location.name, loaded.tree, loaded.text, loaded.lines,
                            loaded.index, is_package=location.kind is Kind.PACKAGE)

    def _resolved_path(self, name: str) -> str | None:
        location = self._resolver.resolve(name)
        return location.path if location is not None else None

    def _spell(self, path: str) -> str:
        if not self._relative_spelling:
            return path
        try:
            return os.path.relpath(path, self._cwd)
        except ValueError:  # another drive (Windows): no relative spelling
            return path
