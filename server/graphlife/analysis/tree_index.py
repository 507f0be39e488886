"""Facts about a parsed file that the engine looks up on every statement, found in one walk.

The interpreter needs each node's parent (to find the enclosing function or
loop), the ``if`` statements (guards around a step), which functions are
generators, and how often each name is bound (a top-level definition bound
once lives in a shared table). Walking a 5,000-line tree for these costs about
as much as parsing it, so the language server keeps one index per top-level
block and merges them (:meth:`TreeIndex.merge`) instead of walking the whole
file after every keystroke.

The same walk files the nodes the semantic layer reads (imports, classes,
functions, calls, assignments: :data:`KINDS`) by kind, so that it answers
without a walk of its own; a whole file's index is reachable from its tree
(:func:`index_of`) for as long as the check that made it keeps it.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from graphlife.analysis.semantics.model import Semantics

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
#: The kinds of node filed by kind in the walk (what :mod:`graphlife.analysis.semantics` reads).
KINDS: tuple[type[ast.AST], ...] = (
    ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Call, ast.Assign,
    ast.NamedExpr, ast.Global,
)
#: The attribute of a tree that holds a weak reference to its index (never a strong one: the index
#: maps the top-level statements to the tree, and a strong reference would make a cycle).
_INDEX_ATTRIBUTE = "_graphlife_index"


_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


class Positioned(Protocol):
    """A node with a place in the source (statements, expressions, arguments, ...): the
    ``ast.AST`` base class declares no position, its subclasses that have one do."""

    lineno: int
    end_lineno: int | None

#: Fields of ast nodes that hold identifiers, constants or the Load/Store context, never a child to visit.
_LEAF_FIELDS = {"ctx", "id", "attr", "name", "arg", "asname", "module", "level", "kind", "type_comment",
                "is_async", "conversion", "simple"}


def _node_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = tuple(name for name in cls._fields if name not in _LEAF_FIELDS)
    return fields


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without the generator, skipping the fields that
    never hold a node (names, ``ctx``): the walks below visit every node of the file."""
    out: list[ast.AST] = []
    for name in _node_fields(node.__class__):
        child = getattr(node, name, None)
        if child is None:
            continue
        if child.__class__ is list:
            out.extend(item for item in child if isinstance(item, ast.AST))
        elif isinstance(child, ast.AST):
            out.append(child)
    return out


#: What :meth:`TreeIndex.of_statements` does with a node besides filing its children: nothing,
#: note an ``if``, a ``yield``, a name bound, or a definition's name bound.
_NO_ROLE, _IF, _YIELD, _NAME, _DEFINITION = "", "if", "yield", "name", "definition"
#: Per node class: its fields that may hold nodes, whether its nodes may have a position, its role.
_CLASS_FACTS: dict[type[ast.AST], tuple[tuple[str, ...], bool, str]] = {}


def _class_facts(cls: type[ast.AST]) -> tuple[tuple[str, ...], bool, str]:
    if issubclass(cls, ast.If):
        role = _IF
    elif issubclass(cls, (ast.Yield, ast.YieldFrom)):
        role = _YIELD
    elif issubclass(cls, ast.Name):
        role = _NAME
    elif issubclass(cls, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        role = _DEFINITION
    else:
        role = _NO_ROLE
    # The parser and ast.copy_location give a position only to classes that declare one; those
    # that do are asked per node (a node made by code may lack it).
    locatable = "lineno" in getattr(cls, "_attributes", ()) or not hasattr(cls, "_attributes")
    found = _CLASS_FACTS[cls] = (_node_fields(cls), locatable, role)
    return found


def descendants(root: ast.AST) -> list[ast.AST]:
    """``root`` and every node under it (``list(ast.walk(root))`` in another order, faster)."""
    out: list[ast.AST] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(child_nodes(node))
    return out


@dataclass
class TreeIndex:
    """Parents, ``if`` nodes, generator functions and binding counts of some statements."""

    parents: dict[int, ast.AST] = field(default_factory=dict)
    if_nodes: list[ast.If] = field(default_factory=list)
    generators: set[int] = field(default_factory=set)
    binding_counts: dict[str, int] = field(default_factory=dict)
    #: Every node with a line number, for moving a block without parsing it again.
    located: list[Positioned] = field(default_factory=list)
    #: The nodes of each of :data:`KINDS`, in no particular order.
    by_kind: dict[type[ast.AST], list[ast.AST]] = field(default_factory=lambda: {kind: [] for kind in KINDS})
    #: The file's semantic model, made on first use (:func:`graphlife.analysis.semantics.semantics_of`);
    #: it refers to the index's tables, never to the index itself.
    semantics: Semantics | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of_module(cls, tree: ast.Module) -> TreeIndex:
        """The index of a whole file."""
        index = cls.of_statements(tree.body)
        for stmt in tree.body:
            index.parents[id(stmt)] = tree
        index._attach(tree)
        return index

    @classmethod
    def of_statements(cls, statements: list[ast.stmt]) -> TreeIndex:
        """The index of top-level statements, without their parent (the module).

        One loop with what it needs of each node class looked up once per class
        (:func:`_class_facts`): a function call and an ``isinstance`` chain per node made
        this walk cost three quarters of parsing the file."""
        index = cls()
        parents = index.parents
        counts = index.binding_counts
        yields: list[ast.AST] = []
        located = index.located
        if_nodes = index.if_nodes
        by_kind = index.by_kind
        facts = _CLASS_FACTS
        node_class = ast.AST
        stack: list[ast.AST] = list(statements)
        pop, push = stack.pop, stack.append
        while stack:
            parent = pop()
            klass = parent.__class__
            known = facts.get(klass)
            if known is None:
                known = _class_facts(klass)
            fields, locatable, role = known
            if locatable and hasattr(parent, "lineno") and hasattr(parent, "end_lineno"):
                located.append(parent)  # it has a position: checked just above
            bucket = by_kind.get(klass)
            if bucket is not None:
                bucket.append(parent)
            for name in fields:
                child = getattr(parent, name, None)
                if child is None:
                    continue
                if child.__class__ is list:
                    for item in child:
                        if isinstance(item, node_class):
                            parents[id(item)] = parent
                            push(item)
                elif isinstance(child, node_class):
                    parents[id(child)] = parent
                    push(child)
            if role is _NO_ROLE:
                continue
            if role is _IF:
                if_nodes.append(parent)  # type: ignore[arg-type]  # the role of ast.If and its subclasses
            elif role is _YIELD:
                yields.append(parent)
            elif role is _NAME:
                if isinstance(parent.ctx, ast.Store):  # type: ignore[attr-defined]  # an ast.Name
                    name_id = parent.id  # type: ignore[attr-defined]
                    counts[name_id] = counts.get(name_id, 0) + 1
            else:  # a definition
                defined = parent.name  # type: ignore[attr-defined]
                counts[defined] = counts.get(defined, 0) + 1
        index.if_nodes.sort(key=lambda node: (node.lineno, node.col_offset))
        for node in yields:
            current = node
            while id(current) in parents:
                current = parents[id(current)]
                if isinstance(current, _SCOPES):
                    index.generators.add(id(current))
                    break
        return index

    @classmethod
    def merge(cls, tree: ast.Module, parts: list[TreeIndex]) -> TreeIndex:
        """One index for ``tree`` from the indexes of its blocks (in file order)."""
        merged = cls()
        counts = merged.binding_counts
        for part in parts:
            merged.parents.update(part.parents)
            merged.if_nodes.extend(part.if_nodes)
            merged.generators.update(part.generators)
            for name, count in part.binding_counts.items():
                counts[name] = counts.get(name, 0) + count
            for kind, nodes in part.by_kind.items():
                merged.by_kind[kind].extend(nodes)
        for stmt in tree.body:
            merged.parents[id(stmt)] = tree
        merged._attach(tree)
        return merged

    def _attach(self, tree: ast.Module) -> None:
        """Let :func:`index_of` find this index from ``tree`` (weakly: see :data:`_INDEX_ATTRIBUTE`)."""
        tree.__dict__[_INDEX_ATTRIBUTE] = weakref.ref(self)

    @property
    def declared_global(self) -> frozenset[str]:
        """The names some function of the module declares ``global``: it may rebind them at any time."""
        return frozenset(name for node in self.by_kind[ast.Global] if isinstance(node, ast.Global)
                         for name in node.names)

    @property
    def rebound(self) -> dict[str, bool]:
        return {name: count > 1 for name, count in self.binding_counts.items()}


def index_of(tree: ast.Module) -> TreeIndex | None:
    """The index of the whole ``tree`` that a running check made (:meth:`TreeIndex.of_module`,
    :meth:`TreeIndex.merge`), or ``None`` when none is alive any more."""
    ref = tree.__dict__.get(_INDEX_ATTRIBUTE)
    return ref() if isinstance(ref, weakref.ref) else None
