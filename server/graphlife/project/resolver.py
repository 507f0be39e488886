"""Which file an import names, found as Python's path finder would, without importing.

Why it copies Python's rules rather than a simpler "look for ``name.py``": the user's
program imports what Python finds, and a bug is only real in the module that actually
runs. So, as in ``importlib``'s path finder:

- a top-level name is searched in the roots in order (:mod:`.roots`); a submodule only in
  its parent package's folders (``a.b.c`` needs ``a`` and ``a.b`` to be packages);
- in one folder, a package (``name/__init__.py``) beats a module (``name.py``), which beats
  a folder without ``__init__.py``; such a folder is only a portion of a namespace package,
  so the search goes on in the next roots, and a regular module or package found there wins;
  the namespace package spans every portion found;
- a compiled extension (``name.cpython-311-x86_64-linux-gnu.so``, ``.pyd``) or a bare
  ``name.pyc`` is what Python would import: it hides later roots, but it is not source, so
  the name is not found; ``.pyi`` stubs are never imported;
- modules the interpreter has loaded before the user's code runs (built into it, frozen, or
  imported at start-up: ``sys``, ``os``, ``io``, ...) are never taken from the user's
  folders, even where a local ``os.py`` exists; any other local module wins over a library
  of the same name, as it does in Python (a local ``random.py`` or ``torch/``).

This module decides names and paths only; :mod:`.sources` reads the files.
"""

from __future__ import annotations

import enum
import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from graphlife.analysis.modules import SourceModule, relative_base

#: Top-level modules that are in ``sys.modules`` before a script's first import (built in,
#: frozen, or loaded by start-up and ``site``), so a file of the same name never replaces them.
PRELOADED_MODULES = frozenset({
    "builtins", "sys", "marshal", "posix", "nt", "gc", "time", "itertools", "errno", "atexit",
    "faulthandler", "pwd", "abc", "codecs", "encodings", "io", "os", "posixpath", "ntpath",
    "genericpath", "stat", "site", "zipimport", "runpy",
})

_EXTENSION_ENDINGS = (".so", ".pyd")


class Kind(enum.Enum):
    """What a name resolved to."""

    MODULE = "module"  # name.py
    PACKAGE = "package"  # name/__init__.py
    NAMESPACE = "namespace"  # folders without __init__.py
    NOT_SOURCE = "not source"  # what Python would import is compiled: no source to analyze


@dataclass(frozen=True)
class Location:
    """Where a module lives: ``path`` is its file (for a namespace package its first folder);
    ``search_locations`` are the folders its submodules are searched in (packages only)."""

    name: str
    kind: Kind
    path: str
    search_locations: tuple[str, ...] = ()

    @property
    def is_package(self) -> bool:
        return self.kind in (Kind.PACKAGE, Kind.NAMESPACE)


class Listing(Protocol):
    """The names in a folder: name -> whether it is a folder. Empty for a missing folder."""

    def entries(self, folder: str) -> Mapping[str, bool]: ...


class FolderListing:
    """Folder contents read once each from disk, plus files that exist only as open
    buffers (a new file the editor has not saved): they are seen as files."""

    def __init__(self, extra_files: Iterable[str] = ()) -> None:
        self._cache: dict[str, dict[str, bool]] = {}
        self._extra: dict[str, list[str]] = {}
        for path in extra_files:
            folder, name = os.path.split(os.path.abspath(path))
            self._extra.setdefault(folder, []).append(name)

    def entries(self, folder: str) -> Mapping[str, bool]:
        cached = self._cache.get(folder)
        if cached is not None:
            return cached
        found: dict[str, bool] = {}
        try:
            with os.scandir(folder) as scan:
                for entry in scan:
                    try:
                        if entry.is_dir():
                            found[entry.name] = True
                        elif entry.is_file():
                            found[entry.name] = False
                    except OSError:  # a broken symlink, a file gone meanwhile
                        continue
        except OSError:  # missing, not a folder, no permission
            pass
        for name in self._extra.get(folder, ()):
            found.setdefault(name, False)
        self._cache[folder] = found
        return found

    def listed(self) -> dict[str, Mapping[str, bool]]:
        """Every folder listed so far (a missing one as empty), as it was listed."""
        return dict(self._cache)


def listing_digest(entries: Mapping[str, bool]) -> str:
    """A fingerprint of the names in a folder that can change what an import finds: folders,
    and files Python could import (source, bytecode, compiled extensions). A file created
    where an import found nothing, or that shadows the module it found, changes it; an
    editor's swap file, a data file or the ``__pycache__`` a run of the program creates does
    not."""
    names = sorted(f"{name}/" if is_folder else name for name, is_folder in entries.items()
                   if _may_be_imported(name, is_folder))
    return "listing:" + hashlib.sha256("\n".join(names).encode("utf-8", "surrogatepass")).hexdigest()


def _may_be_imported(name: str, is_folder: bool) -> bool:
    if is_folder:
        return name.isidentifier() and name != "__pycache__"
    return name.partition(".")[0].isidentifier() and name.endswith((".py", ".pyc", *_EXTENSION_ENDINGS))


def absolute_name(importer: SourceModule, module: str, level: int) -> str | None:
    """The absolute module name an import in ``importer`` names: ``module`` itself for
    ``level`` 0; for ``level`` dots, ``module`` under the package they name. ``None`` when
    Python would refuse the import (above the top-level package, or no package at all)."""
    if level <= 0:
        return module or None
    base = relative_base(importer, level)
    if not base:  # None: beyond the top-level package; "": a script has no package
        return None
    return f"{base}.{module}" if module else base


class Resolver:
    """Resolves absolute module names against search roots (each name once)."""

    def __init__(self, roots: Sequence[str], listing: Listing) -> None:
        self._roots = tuple(roots)
        self._listing = listing
        self._memo: dict[str, Location | None] = {}
        self._extensions: dict[str, dict[str, str]] = {}

    def resolve(self, name: str) -> Location | None:
        """Where ``name`` lives; ``None`` when it is not in the roots (a library, a typo, a
        preloaded module), when a parent is not a package, or when a part is not a name."""
        if name in self._memo:
            return self._memo[name]
        parent, _, last = name.rpartition(".")
        location: Location | None = None
        if last.isidentifier():
            if parent:
                package = self.resolve(parent)
                if package is not None and package.is_package:
                    location = self._find(name, last, package.search_locations)
            elif name not in PRELOADED_MODULES:
                location = self._find(name, last, self._roots)
        self._memo[name] = location
        return location

    def _find(self, name: str, last: str, folders: Sequence[str]) -> Location | None:
        portions: list[str] = []
        for folder in folders:
            entries = self._listing.entries(folder)
            if not entries:
                continue
            candidate = os.path.join(folder, last)
            if entries.get(last):
                init = self._module_file(self._listing.entries(candidate), "__init__", candidate)
                if init is not None:
                    kind = Kind.PACKAGE if init.endswith(".py") else Kind.NOT_SOURCE
                    return Location(name, kind, init, (candidate,))
            module = self._module_file(entries, last, folder)
            if module is not None:
                return Location(name, Kind.MODULE if module.endswith(".py") else Kind.NOT_SOURCE, module)
            if entries.get(last):
                portions.append(candidate)
        if portions:
            return Location(name, Kind.NAMESPACE, portions[0], tuple(portions))
        return None

    def _module_file(self, entries: Mapping[str, bool], stem: str, folder: str) -> str | None:
        """The file Python would load for ``stem`` in a folder, in its order of suffixes:
        compiled extensions, then source, then bytecode."""
        extension = self._extensions_in(folder, entries).get(stem)
        if extension is not None:
            return os.path.join(folder, extension)
        for suffix in (".py", ".pyc"):
            if entries.get(stem + suffix) is False:
                return os.path.join(folder, stem + suffix)
        return None

    def _extensions_in(self, folder: str, entries: Mapping[str, bool]) -> dict[str, str]:
        """The compiled extension modules of a folder, by module name (once per folder: a folder
        may hold thousands of files, and every lookup in it asks)."""
        found = self._extensions.get(folder)
        if found is None:
            found = {}
            for file_name, is_folder in entries.items():
                stem, dot, suffix = file_name.partition(".")
                if not is_folder and dot and _is_extension_suffix(dot + suffix):
                    found.setdefault(stem, file_name)
            self._extensions[folder] = found
        return found


def _is_extension_suffix(suffix: str) -> bool:
    """``.so``, ``.abi3.so``, ``.cpython-311-x86_64-linux-gnu.so``, ``.cp311-win_amd64.pyd``."""
    return suffix.endswith(_EXTENSION_ENDINGS) and suffix.count(".") <= 2
