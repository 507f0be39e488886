"""Which names a function binds, and which it may read: found once per function, cheaply.

Why: the interpreter asks for a function's locals at every call it inlines (the
caller's names stay visible except those), and the memo of calls
(:mod:`graphlife.analysis.call_memo`) asks which names a function may read. A walk
of every node of every function cost about a tenth of a check. Names are bound
only by statements (assignment targets, loops, ``with``, ``del``, imports,
``except``, definitions), except through ``:=``, which a file without that token
cannot hold: so only statements and their targets are walked, and expressions
only when the file has ``:=``. The names a function may read are the identifiers
of its source text (more than it loads, never fewer), when the text is plain
ASCII (Python normalizes other identifiers, so their spelling may differ).
"""

from __future__ import annotations

import ast
import re

from graphlife.analysis.node_walk import child_nodes, node_fields

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OTHER_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def local_names(
    func: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module, walrus_possible: bool
) -> frozenset[str]:
    """The names a function binds (its locals), without those it declares global or nonlocal
    and those bound only in nested functions, classes, lambdas and comprehensions. Kept on the
    node: it outlives one check. ``walrus_possible``: the file has the token ``:=``."""
    found: frozenset[str] | None = getattr(func, "_graphlife_locals", None)
    if found is None:
        bound, declared = bindings(func, walrus_possible)
        found = frozenset(bound) - declared
        setattr(func, "_graphlife_locals", found)  # noqa: B010 - kept on the node: it outlives one check
    return found


#: Per statement class, the fields whose nodes may bind a name of the scope when the file has no
#: ``:=``: nested statements, handlers, match cases, imported names, assignment and loop targets,
#: ``with`` items. A walk of every field cost a list of children per statement.
_BINDING_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}
_MAY_BIND = frozenset({"body", "orelse", "finalbody", "handlers", "cases", "names", "targets", "target", "items"})


def _binding_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    fields = node_fields(cls)
    if cls.__name__ != "TypeAlias":  # every child of a type alias statement is walked (_is_target)
        fields = tuple(name for name in fields if name in _MAY_BIND)
    _BINDING_FIELDS[cls] = fields
    return fields


def bindings(
    scope: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module, walrus_possible: bool
) -> tuple[list[str], frozenset[str]]:
    """Each name the scope's body binds, once per binding (definitions, imports, assignment and
    loop targets, ``with ... as``, ``del``, ``except ... as``, match captures, ``:=`` when the
    file has it), and the names it declares ``global`` or ``nonlocal``. Parameters are not
    in the body: callers add them. The one walk behind :func:`local_names` and the semantic
    layer's count of bindings (:mod:`graphlife.analysis.semantics.names`).

    What to do with a node is looked up once per class (:func:`_role`), and a target that is
    a plain name is read where it is found: an ``isinstance`` chain per statement and child
    cost a third of this walk."""
    bound: list[str] = []
    declared: set[str] = set()
    statements: list[ast.stmt] = list(scope.body)
    known = _BINDING_FIELDS
    roles = _ROLES
    load = ast.Load
    while statements:
        stmt = statements.pop()
        klass = stmt.__class__
        role = roles.get(klass)
        if role is None:
            role = _role(klass)
        if role is _DECLARATION:
            declared.update(stmt.names)  # type: ignore[attr-defined]  # ast.Global, ast.Nonlocal
            continue
        if role is _DEFINITION:
            bound.append(stmt.name)  # type: ignore[attr-defined]  # a def or a class
            continue  # their bodies are other scopes
        if walrus_possible:
            children = child_nodes(stmt)
        else:
            fields = known.get(klass)
            if fields is None:
                fields = _binding_fields(klass)
            children = []
            for name in fields:
                child = getattr(stmt, name, None)
                if child.__class__ is list:
                    children.extend(child)
                elif child is not None:
                    children.append(child)
        for child in children:
            child_class = child.__class__
            role = roles.get(child_class)
            if role is None:
                role = _role(child_class)
            if role is _NAME:
                if child.ctx.__class__ is not load:  # type: ignore[attr-defined]  # an ast.Name
                    bound.append(child.id)  # type: ignore[attr-defined]
            elif role is _STATEMENT or role is _DECLARATION or role is _DEFINITION:
                statements.append(child)  # type: ignore[arg-type]  # a statement
            elif role is _HANDLER:
                if child.name:  # type: ignore[attr-defined]  # an ast.ExceptHandler
                    bound.append(child.name)  # type: ignore[attr-defined]
                statements.extend(child.body)  # type: ignore[attr-defined]
            elif role is _CASE:
                _bindings(child.pattern, bound)  # type: ignore[attr-defined]  # an ast.match_case
                statements.extend(child.body)  # type: ignore[attr-defined]
                if walrus_possible and child.guard is not None:  # type: ignore[attr-defined]
                    _bindings(child.guard, bound)  # type: ignore[attr-defined]
            elif role is _ALIAS:
                bound.append((child.asname or child.name).split(".")[0])  # type: ignore[attr-defined]
            elif walrus_possible:
                _bindings(child, bound)
            elif role is _ITEM:  # without `:=`, only what follows `as` binds
                if child.optional_vars is not None:  # type: ignore[attr-defined]  # an ast.withitem
                    _bindings(child.optional_vars, bound)  # type: ignore[attr-defined]
            elif role is not _PART and _is_target(stmt, child):
                _bindings(child, bound)
    return bound, frozenset(declared)


#: What :func:`bindings` does with a node, per class: a declaration (``global``, ``nonlocal``),
#: a definition, another statement, a handler, a match case, an imported name, a name, a ``with``
#: item, an attribute or subscript (a target that binds no name of the scope but through ``:=``),
#: or anything else (walked for the names it stores).
_DECLARATION, _DEFINITION, _STATEMENT, _HANDLER, _CASE, _ALIAS, _NAME, _ITEM, _PART, _OTHER = (
    "declaration", "definition", "statement", "handler", "case", "alias", "name", "item", "part", "other")
_ROLES: dict[type, str] = {}


def _role(cls: type) -> str:
    if issubclass(cls, (ast.Global, ast.Nonlocal)):
        role = _DECLARATION
    elif issubclass(cls, _DEFINITIONS):
        role = _DEFINITION
    elif issubclass(cls, ast.stmt):
        role = _STATEMENT
    elif issubclass(cls, ast.ExceptHandler):
        role = _HANDLER
    elif issubclass(cls, ast.match_case):
        role = _CASE
    elif issubclass(cls, ast.alias):
        role = _ALIAS
    elif cls is ast.Name:
        role = _NAME
    elif cls is ast.withitem:
        role = _ITEM
    elif cls is ast.Attribute or cls is ast.Subscript:
        role = _PART
    else:
        role = _OTHER
    _ROLES[cls] = role
    return role


def _is_target(stmt: ast.stmt, child: ast.AST) -> bool:
    """Does ``child`` (of ``stmt``) hold names ``stmt`` binds?"""
    if isinstance(stmt, (ast.Assign, ast.Delete)):
        return any(child is target for target in stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return child is stmt.target
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return isinstance(child, ast.withitem)
    return type(stmt).__name__ == "TypeAlias"


def _bindings(root: ast.AST, bound: list[str]) -> None:
    """The names stored in an expression or a match pattern (a target, or one holding ``:=``),
    lambdas and comprehensions left out (their names are theirs)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, _OTHER_SCOPES):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.append(node.id)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name is not None:
            bound.append(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest is not None:
            bound.append(node.rest)
        stack.extend(child_nodes(node))


def names_read(func: ast.AST, text: str | None) -> frozenset[str]:
    """Every name the function (its body, defaults, nested functions) may load; ``text`` is its
    source. Kept on the node."""
    found: frozenset[str] | None = getattr(func, "_graphlife_reads", None)
    if found is None:
        if text is not None and text.isascii():
            found = frozenset(_IDENTIFIER.findall(text))
        else:
            found = frozenset(n.id for n in ast.walk(func) if isinstance(n, ast.Name))
        setattr(func, "_graphlife_reads", found)  # noqa: B010 - kept on the node: it outlives one check
    return found
