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

from graphlife.analysis.tree_index import child_nodes, node_fields

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
    layer's count of bindings (:mod:`graphlife.analysis.semantics.names`)."""
    bound: list[str] = []
    declared: set[str] = set()
    statements: list[ast.stmt] = list(scope.body)
    known = _BINDING_FIELDS
    while statements:
        stmt = statements.pop()
        if isinstance(stmt, (ast.Global, ast.Nonlocal)):
            declared.update(stmt.names)
            continue
        if isinstance(stmt, _DEFINITIONS):
            bound.append(stmt.name)
            continue  # their bodies are other scopes
        if walrus_possible:
            children = child_nodes(stmt)
        else:
            fields = known.get(stmt.__class__)
            if fields is None:
                fields = _binding_fields(stmt.__class__)
            children = []
            for name in fields:
                child = getattr(stmt, name, None)
                if child.__class__ is list:
                    children.extend(child)
                elif child is not None:
                    children.append(child)
        for child in children:
            if isinstance(child, ast.stmt):
                statements.append(child)
            elif isinstance(child, ast.ExceptHandler):
                if child.name:
                    bound.append(child.name)
                statements.extend(child.body)
            elif isinstance(child, ast.match_case):
                _bindings(child.pattern, bound)
                statements.extend(child.body)
                if walrus_possible and child.guard is not None:
                    _bindings(child.guard, bound)
            elif isinstance(child, ast.alias):
                bound.append((child.asname or child.name).split(".")[0])
            elif walrus_possible or _is_target(stmt, child):
                _bindings(child, bound)
    return bound, frozenset(declared)


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
