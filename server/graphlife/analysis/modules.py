"""The user's other modules, as the engine sees them: parsed files it may import.

Why here: real training code is split across modules (the model in ``models.py``,
the losses in ``losses.py``, a trainer class in ``trainer.py``), and the bugs
cross them. The engine follows an import into a module of the user's project and
runs that module's code with the caller's values, as it runs the file's own. It
never reads files itself: a :class:`ModuleProvider` (the project layer,
:mod:`graphlife.project`) resolves an import the way Python would and hands back
the parsed module, or ``None`` for a module outside the project (a library, which
stays an unknown value as before) or one it could not read.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from graphlife.analysis.tree_index import TreeIndex

if TYPE_CHECKING:  # the engine's values are not loaded for a check answered from the cache
    from graphlife.analysis.unseen_writes import AttributeWrites


@dataclass(eq=False)
class SourceModule:
    """One parsed module of the user's project.

    ``path`` is how findings in it name the file (the same spelling the front end
    uses for the file it checks); ``name`` its dotted module name (``pkg.nets``,
    as found from the project's roots, also for the file being checked); ``is_package`` is
    true for a package's ``__init__.py`` (relative imports in it start from the package
    itself); ``is_main`` for the file being checked, which runs as ``__main__`` (its
    ``if __name__ == "__main__":`` block runs; an imported module's does not)."""

    path: str
    name: str
    tree: ast.Module
    source: str
    lines: list[str]
    index: TreeIndex
    is_package: bool = False
    is_main: bool = False
    #: The file has the token ``:=`` (else only statements bind names: :mod:`graphlife.analysis.scopes`).
    walrus_possible: bool = field(init=False)

    def __post_init__(self) -> None:
        self.walrus_possible = ":=" in self.source

    @property
    def package(self) -> str:
        """The package a relative import in this module starts from (``__package__``)."""
        if self.is_package:
            return self.name
        return self.name.rpartition(".")[0]


class ModuleProvider(Protocol):
    """Finds the modules of the user's project (see the module's docstring)."""

    def find(self, importer: SourceModule, module: str, level: int) -> SourceModule | None:
        """The module ``import module`` (``level`` 0) or ``from .module import ...`` (``level``
        dots; ``module`` may be empty for ``from . import x``) names when it runs in
        ``importer``; ``None`` when it is not a module of the project or cannot be read."""
        ...

    def entry(self, path: str | None, tree: ast.Module, source: str, lines: list[str],
              index: TreeIndex) -> SourceModule:
        """The file being checked as a module (``is_main``): its path, and its dotted name as
        found from the project's roots, so that its relative imports resolve (as they do when
        the user runs it with ``python -m pkg.train``)."""
        ...

    def lines_of(self, path: str) -> list[str] | None:
        """The lines of a module found so far, by its path (``None``: none found there)."""
        ...

    def attribute_writes_elsewhere(self, names: frozenset[str], classes: frozenset[str]) -> AttributeWrites:
        """Which of ``names`` the project's other files may write on instances of the checked
        file's ``classes`` (a method analyzed alone must not trust what ``__init__`` put there)."""
        ...

    def exists(self, module: str) -> bool:
        """Is ``module`` (an absolute dotted name) a module of the project? Without reading it:
        an import of a module whose names are never used costs no parse."""
        ...


def relative_base(importer: SourceModule, level: int) -> str | None:
    """The package that ``level`` dots name from ``importer`` (``from ..x import y`` in
    ``a.b.c`` names ``a``); ``None`` above the top package, which Python rejects
    ("attempted relative import beyond top-level package")."""
    parts = importer.package.split(".") if importer.package else []
    if level <= 0:
        return ""
    if level - 1 >= len(parts):
        return None
    return ".".join(parts[: len(parts) - (level - 1)])


_NAMESPACE_PREFIX = "<module "


def namespace_key(module_name: str) -> str:
    """The state's name for the object that stands for an imported module's namespace (a
    name no Python code can spell: :mod:`graphlife.analysis.engine.imports`)."""
    return f"{_NAMESPACE_PREFIX}{module_name}>"


def is_namespace_key(name: str) -> bool:
    """Is ``name`` the state's name of a module's namespace (not a name of the code)?"""
    return name.startswith(_NAMESPACE_PREFIX)
