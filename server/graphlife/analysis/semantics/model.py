"""One file's semantic model, made once per tree from the tree index's walk.

Why no walk of its own: the checker's :class:`~graphlife.analysis.tree_index.TreeIndex`
already visits every node (parents, binding counts) and files the imports, classes,
functions, calls and assignments by kind on the way; the model reads those lists
and the parent map. It is kept on the index (which the tree refers to only weakly):
the tree never refers to the model, so nothing here puts the tree in a reference
cycle, and the model goes with the index when the check that made it ends.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from typing import TypeVar, cast

from graphlife.analysis.semantics.functions import FunctionModel
from graphlife.analysis.semantics.grad import Grad
from graphlife.analysis.semantics.names import Names
from graphlife.analysis.tree_index import TreeIndex, descendants, index_of

NodeT = TypeVar("NodeT", bound=ast.AST)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Semantics:
    """What the syntax of one file says: names and scopes (:attr:`names`), grad-mode switches
    (:attr:`grad`), the custom autograd Functions (:attr:`functions`), and the tree around a node."""

    def __init__(self, tree: ast.Module, index: TreeIndex) -> None:
        self.tree = tree
        self._parents: dict[int, ast.AST] = index.parents
        self._by_kind = index.by_kind
        self._sorted: dict[type[ast.AST], list[ast.AST]] = {}
        self._mentions: dict[str, list[ast.AST]] | None = None
        self._classes_by_name: dict[str, ast.ClassDef] | None = None

    # -- the tree --------------------------------------------------------------------
    def nodes(self, kind: type[NodeT]) -> Sequence[NodeT]:
        """Every node of ``kind`` (one of :data:`~graphlife.analysis.tree_index.KINDS`) in
        source order."""
        found = self._sorted.get(kind)
        if found is None:
            found = self._sorted[kind] = _in_source_order(self._by_kind[kind])
        return cast("list[NodeT]", found)

    def nodes_where(self, kind: type[NodeT], keep: Callable[[NodeT], bool]) -> list[NodeT]:
        """The nodes of ``kind`` that ``keep`` accepts, in source order (the order of
        :meth:`nodes`), without sorting every node of the kind: a rule that looks for a rare
        call among every call of the file (at each keystroke, in the language server) sorts
        only what it found."""
        found = self._sorted.get(kind)
        if found is not None:
            return [node for node in cast("list[NodeT]", found) if keep(node)]
        return _in_source_order([node for node in cast("list[NodeT]", self._by_kind[kind]) if keep(node)])

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node ``node`` is a child of (``None`` for the module)."""
        return self._parents.get(id(node))

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        """The parent of ``node``, its parent, ... up to the module."""
        current = self._parents.get(id(node))
        while current is not None:
            yield current
            current = self._parents.get(id(current))

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        """The innermost statement holding ``node`` (not ``node`` itself)."""
        return next((a for a in self.ancestors(node) if isinstance(a, ast.stmt)), None)

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The innermost function around ``node`` (its body, signature or decorators)."""
        return next((a for a in self.ancestors(node) if isinstance(a, _FUNCTIONS)), None)

    def mentions(self, name: str) -> Sequence[ast.AST]:
        """Every place the file may refer to ``name``: a ``Name`` (read or written), an attribute
        ``.name``, a string constant ``"name"`` (``getattr(obj, "name")``, registries). Found in one
        walk of the file on first use (only the proofs that look for every caller need it)."""
        if self._mentions is None:
            found: dict[str, list[ast.AST]] = {}
            for node in descendants(self.tree):
                if isinstance(node, ast.Name):
                    found.setdefault(node.id, []).append(node)
                elif isinstance(node, ast.Attribute):
                    found.setdefault(node.attr, []).append(node)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                    found.setdefault(node.value, []).append(node)
            for nodes in found.values():
                nodes.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
            self._mentions = found
        return self._mentions.get(name, [])

    # -- classes of the file and where they are built -------------------------------------
    def class_constructed(self, call: ast.AST) -> ast.ClassDef | None:
        """The class of this file that ``call`` builds (``Block(dim)``: a call of a name one of its
        classes has; the last of that name when several do), else ``None``."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            return None
        if self._classes_by_name is None:
            self._classes_by_name = {node.name: node for node in self.nodes(ast.ClassDef)}
        return self._classes_by_name.get(call.func.id)

    def constructions(self, klass: ast.ClassDef) -> list[ast.Assign]:
        """Every ``target = Klass(...)`` of the file that builds an instance of ``klass`` (by its name)."""
        return [
            assign for assign in self.nodes(ast.Assign)
            if self.class_constructed(assign.value) is not None
            and isinstance(assign.value, ast.Call) and isinstance(assign.value.func, ast.Name)
            and assign.value.func.id == klass.name
        ]

    # -- what the syntax says --------------------------------------------------------
    @cached_property
    def names(self) -> Names:
        """Imports, aliases and scopes: what a name means at a node."""
        return Names(
            self.tree,
            self._parents,
            [*self.nodes(ast.Import), *self.nodes(ast.ImportFrom)],
            self.nodes(ast.Assign),
            walrus_possible=bool(self._by_kind[ast.NamedExpr]),
        )

    @cached_property
    def grad(self) -> Grad:
        """The grad-mode switches (``with torch.no_grad():``, ``@torch.inference_mode()``)."""
        return Grad(self.names, self._parents)

    @cached_property
    def functions(self) -> FunctionModel:
        """The custom ``torch.autograd.Function`` classes and their ``apply`` calls."""
        return FunctionModel(self.names, self.nodes(ast.ClassDef), self.nodes(ast.Assign), lambda: self.nodes(ast.Call))


#: A node's position, read in one call (a node made by code may lack it: :func:`_in_source_order`).
_POSITION = operator.attrgetter("lineno", "col_offset")


def _in_source_order(nodes: list[NodeT]) -> list[NodeT]:
    """``nodes`` sorted by position (one made by code without a position counts as at 0, 0)."""
    try:
        return sorted(nodes, key=_POSITION)
    except AttributeError:
        return sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def semantics_of(tree: ast.Module, index: TreeIndex | None = None) -> Semantics:
    """The semantic model of ``tree``: the one the running check's index holds, made on first use.
    Without a live index (a tree checked by nothing), an index is made for it, once per call."""
    index = index if index is not None else index_of(tree)
    if index is None:
        index = TreeIndex.of_module(tree)
    if index.semantics is None:
        index.semantics = Semantics(tree, index)
    return index.semantics

