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
from typing import TYPE_CHECKING, Any, Protocol

from graphlife.analysis.node_walk import child_nodes, children_checked, descendants, iter_nodes, node_fields

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
#: The walks of :mod:`graphlife.analysis.node_walk`, still read from here by the engine's modules.
__all__ = ["KINDS", "Positioned", "TreeIndex", "child_nodes", "descendants", "index_of", "iter_nodes", "node_fields"]


class Positioned(Protocol):
    """A node with a place in the source (statements, expressions, arguments, ...): the
    ``ast.AST`` base class declares no position, its subclasses that have one do."""

    lineno: int
    end_lineno: int | None


#: What :meth:`TreeIndex.of_statements` does with a node besides filing its children: nothing,
#: note an ``if``, a ``yield``, a name bound, a definition's name bound, an attribute or subscript
#: that may be written; or file the node by kind (:data:`KINDS`, and :attr:`TreeIndex.by_kind`).
_NO_ROLE, _IF, _YIELD, _NAME, _DEFINITION, _ATTRIBUTE, _SUBSCRIPT, _KIND = (
    "", "if", "yield", "name", "definition", "attribute", "subscript", "kind")
#: Per node class: its fields that may hold nodes, whether its nodes may have a position, its role,
#: whether its children are checked to be nodes.
_CLASS_FACTS: dict[type[ast.AST], tuple[tuple[str, ...], bool, str, bool]] = {}


def _class_facts(cls: type[ast.AST]) -> tuple[tuple[str, ...], bool, str, bool]:
    if issubclass(cls, ast.If):
        role = _IF
    elif issubclass(cls, (ast.Yield, ast.YieldFrom)):
        role = _YIELD
    elif issubclass(cls, ast.Name):
        role = _NAME
    elif issubclass(cls, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        role = _DEFINITION
    elif issubclass(cls, ast.Attribute):
        role = _ATTRIBUTE
    elif issubclass(cls, ast.Subscript):
        role = _SUBSCRIPT
    elif cls in KINDS:
        role = _KIND
    else:
        role = _NO_ROLE
    # The parser and ast.copy_location give a position only to classes that declare one; those
    # that do are asked per node (a node made by code may lack it).
    locatable = "lineno" in getattr(cls, "_attributes", ()) or not hasattr(cls, "_attributes")
    fields = node_fields(cls)
    found = _CLASS_FACTS[cls] = (fields, locatable, role, children_checked(cls))
    return found



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
    #: The attributes and subscripts stored or deleted, and the attributes ``__dict__`` loaded (what
    #: :func:`graphlife.analysis.unseen_writes.attribute_writes` reads), in no particular order.
    written: list[ast.AST] = field(default_factory=list)
    #: Made by :meth:`of_module` from every node of the tree (a merged index is made of blocks').
    whole_file: bool = False
    #: The file's semantic model, made on first use (:func:`graphlife.analysis.semantics.semantics_of`);
    #: it refers to the index's tables, never to the index itself.
    semantics: Semantics | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of_module(cls, tree: ast.Module) -> TreeIndex:
        """The index of a whole file (without :attr:`located`: only the language server's blocks
        move their nodes)."""
        index = cls.of_statements(tree.body, locate=False)
        for stmt in tree.body:
            index.parents[id(stmt)] = tree
        index.whole_file = True
        index._attach(tree)
        return index

    @classmethod
    def of_statements(cls, statements: list[ast.stmt], *, locate: bool = True) -> TreeIndex:
        """The index of top-level statements, without their parent (the module); ``locate``:
        fill :attr:`located` too.

        One loop with what it needs of each node class looked up once per class
        (:func:`_class_facts`): a function call and an ``isinstance`` chain per node made
        this walk cost three quarters of parsing the file. The fields that never hold a node
        are not read (:func:`node_fields`), and a node without a role (most of them) costs
        a dict lookup, its fields and its children."""
        index = cls()
        parents = index.parents
        counts = index.binding_counts
        yields: list[ast.AST] = []
        located = index.located
        if_nodes = index.if_nodes
        written = index.written
        by_kind = index.by_kind
        facts = _CLASS_FACTS
        load, store = ast.Load, ast.Store
        name_class, constant_class = ast.Name, ast.Constant
        stack: list[Any] = list(statements)  # nodes, and the None of some lists (`{**a}`'s key)
        pop, push = stack.pop, stack.append
        while stack:
            parent = pop()
            klass = parent.__class__
            known = facts.get(klass)
            if known is None:
                if parent is None:
                    continue  # a key of `{**a}`, a keyword-only parameter without a default
                known = _class_facts(klass)
            fields, locatable, role, unchecked = known
            if locate and locatable and hasattr(parent, "lineno") and hasattr(parent, "end_lineno"):
                located.append(parent)  # it has a position: checked just above
            if unchecked:
                for node in child_nodes(parent):
                    parents[id(node)] = parent
                    push(node)
            elif locate:
                for name in fields:
                    child = getattr(parent, name, None)
                    if child is None:
                        continue
                    if child.__class__ is list:
                        for item in child:
                            parents[id(item)] = parent
                            push(item)
                    else:
                        parents[id(child)] = parent
                        push(child)
            else:  # names and constants (half the nodes) are done here, never pushed
                for name in fields:
                    child = getattr(parent, name, None)
                    if child is None:
                        continue
                    if child.__class__ is list:
                        for item in child:
                            parents[id(item)] = parent
                            leaf = item.__class__
                            if leaf is name_class:
                                if item.ctx.__class__ is store:
                                    name_id = item.id
                                    counts[name_id] = counts.get(name_id, 0) + 1
                            elif leaf is not constant_class:
                                push(item)
                    else:
                        parents[id(child)] = parent
                        leaf = child.__class__
                        if leaf is name_class:
                            if child.ctx.__class__ is store:
                                name_id = child.id
                                counts[name_id] = counts.get(name_id, 0) + 1
                        elif leaf is not constant_class:
                            push(child)
            if role is _NO_ROLE:
                continue
            if role is _NAME:
                if parent.ctx.__class__ is store:  # an ast.Name
                    name_id = parent.id
                    counts[name_id] = counts.get(name_id, 0) + 1
            elif role is _ATTRIBUTE:
                if parent.ctx.__class__ is not load or parent.attr == "__dict__":
                    written.append(parent)
            elif role is _KIND:
                by_kind[klass].append(parent)
            elif role is _SUBSCRIPT:
                if parent.ctx.__class__ is not load:  # an ast.Subscript
                    written.append(parent)
            elif role is _IF:
                if_nodes.append(parent)  # the role of ast.If and its subclasses
            elif role is _YIELD:
                yields.append(parent)
            else:  # a definition
                defined = parent.name
                counts[defined] = counts.get(defined, 0) + 1
                bucket = by_kind.get(klass)
                if bucket is not None:
                    bucket.append(parent)
        parents.pop(id(None), None)
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
            merged.written.extend(part.written)
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
