"""Walks of a syntax tree that read only the fields that may hold a node.

Why a module of its own: the tree index (:mod:`graphlife.analysis.tree_index`) and modules
below the semantic layer (the graph-growth test walks a statement's nodes) share these walks,
and the index refers to the semantic model it carries; these refer to nothing but ``ast``.
A walk of every field (``ast.walk``, ``ast.iter_child_nodes``) reads names, constants and
``ctx`` too, and makes a generator per node.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}

#: Fields of ast nodes that hold identifiers, constants or the Load/Store context, never a child to visit
#: (for a node class whose signature :func:`_signature_fields` cannot read).
_LEAF_FIELDS = {"ctx", "id", "attr", "name", "arg", "asname", "module", "level", "kind", "type_comment",
                "is_async", "conversion", "simple"}
#: The types of the abstract grammar that are not nodes (``ast.Name(identifier id, expr_context ctx)``).
_LEAF_TYPES = frozenset({"identifier", "string", "constant", "int", "object", "bytes", "expr_context"})
#: One field of a node class's signature in its docstring: its type, ``*`` or ``?``, its name.
_SIGNATURE_FIELD = re.compile(r"\s*([A-Za-z_]+)([*?]?)\s+([A-Za-z_]+)\s*")


def _signature_fields(cls: type[ast.AST]) -> tuple[str, ...] | None:
    """The fields of ``cls`` that hold nodes (or lists of nodes, or ``None``), read from the
    signature of the abstract grammar that the ``ast`` module puts in each node class's
    docstring (``Global(identifier* names)``: no field holds a node); ``None`` when the
    docstring is not such a signature, or does not name the class's fields in order."""
    doc = cls.__doc__ or ""
    head, _, rest = doc.partition("(")
    if head.strip() != cls.__name__ or not rest.rstrip().endswith(")"):
        return () if doc.strip() == cls.__name__ and not cls._fields else None
    parts = [part for part in rest.rstrip()[:-1].split(",") if part.strip()]
    found: list[str] = []
    names: list[str] = []
    for part in parts:
        match = _SIGNATURE_FIELD.fullmatch(part)
        if match is None:
            return None
        kind, _, name = match.groups()
        names.append(name)
        if kind not in _LEAF_TYPES:
            found.append(name)
    return tuple(found) if tuple(names) == tuple(cls._fields) else None


def node_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    """The fields of ``cls`` that may hold a node: none of the others holds one (a name, a
    constant, ``ctx``), so the walks below never look at them. A list in one of these fields
    holds nodes or ``None`` (the keys of ``{**a}``), never a string or a number."""
    fields = _FIELDS.get(cls)
    if fields is None:
        signature = _signature_fields(cls) if cls.__module__ == "ast" else None
        if signature is None:  # a class the grammar does not describe: every field, checked per child
            fields = tuple(name for name in cls._fields if name not in _LEAF_FIELDS)
            _UNCHECKED.add(cls)
        else:
            fields = signature
        _FIELDS[cls] = fields
    return fields


#: Node classes whose fields :func:`_signature_fields` could not read: their children are checked to be nodes.
_UNCHECKED: set[type[ast.AST]] = set()


def children_checked(cls: type[ast.AST]) -> bool:
    """Are the children of ``cls``'s nodes checked to be nodes (a class whose fields the grammar
    does not describe: :func:`node_fields` reads every field but names, ``ctx`` and constants)?"""
    node_fields(cls)
    return cls in _UNCHECKED


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without the generator, skipping the fields that
    never hold a node (names, ``ctx``): the walks below visit every node of the file."""
    out: list[ast.AST] = []
    cls = node.__class__
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = node_fields(cls)
    if cls in _UNCHECKED:
        for name in fields:
            child = getattr(node, name, None)
            if child.__class__ is list:
                out.extend(item for item in child if isinstance(item, ast.AST))
            elif isinstance(child, ast.AST):
                out.append(child)
        return out
    for name in fields:
        child = getattr(node, name, None)
        if child is None:
            continue
        if child.__class__ is list:
            out.extend(child)
        else:
            out.append(child)
    if None in out:
        out = [item for item in out if item is not None]
    return out


def iter_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """``root`` and every node under it, depth first, the last child first (``ast.walk`` in another
    order, without its queue and generator per node)."""
    stack: list[Any] = [root]
    pop, push, extend = stack.pop, stack.append, stack.extend
    fields_of = _FIELDS
    unchecked = _UNCHECKED
    while stack:
        node = pop()
        if node is None:
            continue  # a key of `{**a}`
        yield node
        cls = node.__class__
        fields = fields_of.get(cls)
        if fields is None:
            fields = node_fields(cls)
        if cls in unchecked:
            extend(child_nodes(node))
            continue
        for name in fields:
            child = getattr(node, name, None)
            if child is None:
                continue
            if child.__class__ is list:
                extend(child)
            else:
                push(child)


def descendants(root: ast.AST) -> list[ast.AST]:
    """``root`` and every node under it (``list(ast.walk(root))`` in another order, faster)."""
    return list(iter_nodes(root))
