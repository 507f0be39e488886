"""Where Python would look for the modules a checked file imports, and the file's own name.

Why these roots, in this order: ``python train.py`` puts the script's folder first on
``sys.path``, so a module next to the entry file wins over everything else. Users also run
their code from the project root (``python -m pkg.train``) or install it in editable mode,
so the project root (the nearest folder with ``pyproject.toml``, ``setup.py``,
``setup.cfg`` or ``.git``) comes next, then ``<root>/src`` for a src layout, then the
folders the user names in ``[tool.graphlife] src = [...]``.

The entry file's dotted name decides where its relative imports start (``from . import
losses`` in ``pkg/train.py`` means ``pkg.losses``, as under ``python -m pkg.train``).
"""

from __future__ import annotations

import keyword
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from graphlife.project.cache_record import PROJECT_MARKERS, find_project_root


@dataclass(frozen=True)
class SearchRoots:
    """The folders searched for a top-level module, in order (absolute, each once)."""

    entry_folder: str
    project_root: str | None
    folders: tuple[str, ...]


@dataclass(frozen=True)
class EntryName:
    """The checked file's dotted module name, and whether it is a package's ``__init__.py``."""

    name: str
    is_package: bool


def search_roots(entry_path: str | None, extra_roots: Iterable[str] = (), cwd: str | None = None) -> SearchRoots:
    """The roots for a checked file. Without a path (an unsaved buffer) the current folder
    stands in for the entry folder, as it does on ``sys.path`` for ``python -c`` and stdin.
    Relative extra roots are taken from ``cwd`` (the configuration has already made the ones
    from ``pyproject.toml`` absolute)."""
    base = os.path.abspath(cwd or os.getcwd())
    entry_folder = os.path.dirname(os.path.join(base, entry_path)) if entry_path else base
    entry_folder = os.path.normpath(entry_folder)
    project_root = find_project_root(entry_folder)
    ordered = [entry_folder]
    package_parent = _above_top_package(entry_folder)
    if package_parent is not None:
        ordered.append(package_parent)
    if project_root is not None:
        ordered.append(project_root)
        src = os.path.join(project_root, "src")
        if os.path.isdir(src):
            ordered.append(src)
    ordered.extend(os.path.normpath(os.path.join(base, extra)) for extra in extra_roots)
    return SearchRoots(entry_folder, project_root, tuple(dict.fromkeys(ordered)))


def entry_module_name(entry_path: str, roots: SearchRoots, resolves_to: Callable[[str], str | None]) -> EntryName:
    """The name the entry file has when imported from the deepest root above its own folder
    (``pkg/train.py`` under the project root is ``pkg.train``; folders without ``__init__.py``
    count, as namespace packages), provided importing that name from the roots gives back this
    very file (``resolves_to(name)`` is the absolute path a name resolves to). Otherwise, as
    for a plain script in its own folder, the file's stem."""
    path = os.path.normpath(os.path.abspath(entry_path))
    stem = os.path.splitext(os.path.basename(path))[0]
    ancestors = [root for root in roots.folders if root != roots.entry_folder and _is_above(root, roots.entry_folder)]
    for root in sorted(ancestors, key=len, reverse=True):
        parts = os.path.relpath(path, root).split(os.sep)
        parts[-1] = os.path.splitext(parts[-1])[0]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        if not all(_is_module_word(part) for part in parts):
            continue
        name = ".".join(parts)
        if resolves_to(name) == path:
            return EntryName(name, is_package)
    return EntryName(stem, False)


def _above_top_package(folder: str) -> str | None:
    """The folder above the top package that ``folder`` belongs to (its folders up to there
    all have an ``__init__.py``), ``None`` when ``folder`` is no package. Why: a file in a
    package is run as ``python -m pkg.train`` from there, so its relative imports and the
    absolute imports of its package resolve from that folder, with or without a project
    marker (mypy finds a package's root the same way)."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return folder


def _is_above(root: str, folder: str) -> bool:
    return folder.startswith(root.rstrip(os.sep) + os.sep)


__all__ = ["PROJECT_MARKERS", "EntryName", "SearchRoots", "entry_module_name", "find_project_root", "search_roots"]


def _is_module_word(part: str) -> bool:
    return part.isidentifier() and not keyword.iskeyword(part)
