"""Which qualified name a local name means at a node: imports, aliases and scopes.

Why here: the rules that read the shape of code (``class Fn(F)`` with ``from
torch.autograd import Function as F``, ``cp.checkpoint(...)``), the fix proofs
(``with no_grad():`` after ``from torch import no_grad``) and the interpreter all
need to know what a name means; each used to resolve imports its own way, and
they disagreed on function-local imports and on aliases.

The meaning of a name at a node follows Python's scopes. The node's scope is the
function, lambda, class body or comprehension whose namespace the name is looked
up in first (a decorator, a default value or a base class belongs to the scope
around its definition); then the enclosing functions; then the module (class
bodies are skipped, as Python skips them for the functions inside). In a scope:

- an ``import`` or ``from ... import`` binds its name to a qualified name
  (``import torch.nn as nn``: ``nn`` -> ``torch.nn``; ``import torch.nn``:
  ``torch`` -> ``torch``; a relative import keeps its dots: ``.utils.f``);
- ``X = <a torch name>`` (``Function = torch.autograd.Function``) is an alias;
- in a function, lambda, class body or comprehension, any other binding of the
  name (a parameter, an assignment, a loop variable) hides the outer meaning;
- at module level the last import or alias of the name in the file wins, and other
  bindings do not hide it (a script that rebinds an imported torch name is rare;
  the interpreter, which follows the flow, decides those).

A name no scope binds is a builtin (or comes from a star import): no meaning.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from graphlife.analysis.scopes import bindings, local_names

#: What a name is looked up in: the module, a function, a lambda, a class body or a comprehension.
Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef | ast.expr
#: Called with the code a lookup read (a function, a class, a top-level statement): the engine
#: rules pass ``RuleContext.touch`` so that the language server's unit cache knows.
Reader = Callable[[ast.AST], None]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: Top-level statements the unit cache keeps in every unit's key (``unit_cache._definitions_key``):
#: a lookup that reads the module scope notes the other top-level statements as read.
_IN_DEFINITIONS_KEY = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class ImportBinding:
    """A name an import statement binds, and the qualified name it then means."""

    name: str
    qualified: str


def import_bindings(stmt: ast.Import | ast.ImportFrom) -> tuple[ImportBinding, ...]:
    """What ``stmt`` binds, as Python binds it: ``import a.b`` binds ``a`` to ``a``, ``import
    a.b as c`` binds ``c`` to ``a.b``, ``from m import x as y`` binds ``y`` to ``m.x``; a
    relative import keeps its leading dots (``from .m import x``: ``x`` -> ``.m.x``); a star
    import binds nothing this can name."""
    if isinstance(stmt, ast.Import):
        found = []
        for alias in stmt.names:
            if alias.asname:
                found.append(ImportBinding(alias.asname, alias.name))
            else:
                top = alias.name.split(".")[0]
                found.append(ImportBinding(top, top))
        return tuple(found)
    prefix = "." * stmt.level + (stmt.module or "")
    return tuple(
        ImportBinding(alias.asname or alias.name, f"{prefix}.{alias.name}" if prefix and not prefix.endswith(".")
                      else f"{prefix}{alias.name}")
        for alias in stmt.names
        if alias.name != "*"
    )


def dotted_parts(expr: ast.AST) -> tuple[str, tuple[str, ...]] | None:
    """``a.b.c`` as ``("a", ("b", "c"))``; ``None`` when ``expr`` is not a name with attributes."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return expr.id, tuple(reversed(parts))


def parameter_names(args: ast.arguments) -> set[str]:
    """Every parameter a signature binds."""
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    if args.vararg:
        names.add(args.vararg.arg)
    if args.kwarg:
        names.add(args.kwarg.arg)
    return names


@dataclass
class _ScopeNames:
    """What one scope binds: its imports and aliases (name -> qualified name) and every other name."""

    meanings: dict[str, str] = field(default_factory=dict)
    hidden: frozenset[str] = frozenset()  # bound otherwise: hides the outer meaning


class Names:
    """Imports, aliases and scopes of one file (see the module docstring).

    Built from the file's imports and assignments (found by the tree index's walk) and its
    parent map; each scope's names are found on first use."""

    def __init__(
        self,
        tree: ast.Module,
        parents: Mapping[int, ast.AST],
        imports: Sequence[ast.Import | ast.ImportFrom],
        assignments: Sequence[ast.Assign],
        walrus_possible: bool,
    ) -> None:
        self._tree = tree
        self._parents = parents
        self._walrus = walrus_possible
        self._imports_by_scope: dict[int, list[ast.Import | ast.ImportFrom]] = {}
        self._aliases_by_scope: dict[int, list[ast.Assign]] = {}
        #: What each name an import binds somewhere may mean (in some scope), and the names an
        #: alias may bind: other names never mean a qualified name.
        self._imported: dict[str, set[str]] = {}
        self._aliased: set[str] = set()
        for stmt in imports:
            scope = self.scope_of(stmt)
            self._imports_by_scope.setdefault(id(scope), []).append(stmt)
            for binding in import_bindings(stmt):
                self._imported.setdefault(binding.name, set()).add(binding.qualified)
        # Alias candidates: `X = a.b` where `a` is imported, or is itself such an `X` (in any scope).
        pending: dict[str, list[tuple[str, ast.Assign]]] = {}  # base name -> (target, assignment)
        for assign in assignments:
            target = assign.targets[0]
            if len(assign.targets) != 1 or not isinstance(target, ast.Name):
                continue
            parts = dotted_parts(assign.value)
            if parts is not None:
                pending.setdefault(parts[0], []).append((target.id, assign))
        reachable = [base for base in pending if base in self._imported]
        while reachable:
            for name, assign in pending.pop(reachable.pop(), ()):
                self._aliases_by_scope.setdefault(id(self.scope_of(assign)), []).append(assign)
                if name not in self._aliased:
                    self._aliased.add(name)
                    if name in pending:
                        reachable.append(name)
        self._scopes: dict[int, _ScopeNames] = {}
        self._building: set[int] = set()
        #: Per collection asked about (``qualified_name_in``): it, and the last parts of its names.
        self._last_parts: dict[int, tuple[Collection[str], frozenset[str]]] = {}

    # -- scopes ----------------------------------------------------------------------
    def scope_of(self, node: ast.AST) -> Scope:
        """The scope a name written at ``node`` is looked up in first."""
        inner: ast.AST | None = None  # the child of `child` on the way up
        child: ast.AST = node
        parent = self._parents.get(id(child))
        while parent is not None:
            if isinstance(parent, (*_FUNCTIONS, ast.ClassDef)):
                if isinstance(child, ast.stmt):
                    return parent  # its body; decorators, defaults, bases belong to the scope around
            elif isinstance(parent, ast.Lambda):
                if child is parent.body:
                    return parent
            elif isinstance(parent, _COMPREHENSIONS):
                first = parent.generators[0]
                if not (child is first and inner is first.iter):
                    return parent  # the first iterable is evaluated in the scope around
            elif isinstance(parent, ast.Module):
                return parent
            inner, child = child, parent
            parent = self._parents.get(id(child))
        return self._tree

    def scopes_around(self, node: ast.AST) -> Iterator[Scope]:
        """The scopes a name at ``node`` is looked up in, innermost first, the module last
        (class bodies only when ``node`` is directly in one)."""
        scope = self.scope_of(node)
        yield scope
        while not isinstance(scope, ast.Module):
            outer = self.scope_of(scope)
            if not isinstance(outer, ast.ClassDef):
                yield outer
            scope = outer

    def _names_of(self, scope: Scope) -> _ScopeNames:
        found = self._scopes.get(id(scope))
        if found is not None:
            return found
        found = _ScopeNames()
        self._scopes[id(scope)] = found
        self._building.add(id(scope))
        try:
            if isinstance(scope, ast.Module):
                self._module_names(found)
            else:
                self._local_names(scope, found)
        finally:
            self._building.discard(id(scope))
        return found

    def _statements_of(self, scope: Scope) -> list[ast.Import | ast.ImportFrom | ast.Assign]:
        """The scope's imports and alias candidates, in source order."""
        ordered: list[ast.Import | ast.ImportFrom | ast.Assign] = [
            *self._imports_by_scope.get(id(scope), ()), *self._aliases_by_scope.get(id(scope), ())
        ]
        ordered.sort(key=lambda stmt: (stmt.lineno, stmt.col_offset))
        return ordered

    def _module_names(self, found: _ScopeNames) -> None:
        """At module level the last import of a name wins (``try: from torch... except ImportError:
        from ...``: the torch one runs where torch has it), and an alias counts when every
        assignment of the name at module level is the same alias."""
        imported: dict[str, str] = {}
        aliases: dict[str, list[str | None]] = {}
        for stmt in self._statements_of(self._tree):
            if isinstance(stmt, ast.Assign):
                target = stmt.targets[0]
                if not isinstance(target, ast.Name):
                    continue  # (only single names are alias candidates)
                name = target.id
                values = aliases.setdefault(name, [])
                values.append(self._alias_meaning(stmt, found.meanings))
                if values[0] is not None and all(value == values[0] for value in values):
                    found.meanings[name] = values[0]
                elif name in imported:
                    found.meanings[name] = imported[name]
                else:
                    found.meanings.pop(name, None)
                continue
            for binding in import_bindings(stmt):
                imported[binding.name] = found.meanings[binding.name] = binding.qualified
                aliases.pop(binding.name, None)

    def _local_names(self, scope: Scope, found: _ScopeNames) -> None:
        """In a function or class body a name means a qualified name when every binding of it
        there is an import or alias of that name; any other binding hides the outer meaning."""
        meanings: dict[str, list[str | None]] = {}
        latest: dict[str, str] = {}  # what each name means so far, in source order (for aliases of aliases)
        for stmt in self._statements_of(scope):
            if isinstance(stmt, ast.Assign):
                target = stmt.targets[0]
                if not isinstance(target, ast.Name):
                    continue  # (only single names are alias candidates)
                name = target.id
                value = self._alias_meaning(stmt, latest)
                meanings.setdefault(name, []).append(value)
                if value is None:
                    latest.pop(name, None)
                else:
                    latest[name] = value
            else:
                for binding in import_bindings(stmt):
                    meanings.setdefault(binding.name, []).append(binding.qualified)
                    latest[binding.name] = binding.qualified
        bound = self._bound_in(scope)
        if meanings and isinstance(scope, (*_FUNCTIONS, ast.ClassDef)):
            sites = _binding_sites(scope, set(meanings), self._walrus)
            for name, values in meanings.items():
                first = values[0]
                if first is not None and sites.get(name, 0) == len(values) and all(v == first for v in values):
                    found.meanings[name] = first
        found.hidden = frozenset(bound - found.meanings.keys())

    def _alias_meaning(self, assign: ast.Assign, so_far: Mapping[str, str]) -> str | None:
        """What ``X = torch.y`` makes ``X`` mean (the value read in the assignment's scope as
        built so far, ``so_far``, so that an alias of an alias works in source order); ``None``
        when the value is not a torch name."""
        parts = dotted_parts(assign.value)
        if parts is None:
            return None
        base, rest = parts
        meaning = so_far[base] if base in so_far else self._meaning_outside(base, assign)
        if meaning is None or meaning.split(".")[0] != "torch":
            return None
        return ".".join([meaning, *rest])

    def _meaning_outside(self, name: str, node: ast.AST) -> str | None:
        """The meaning of ``name`` in the scopes around the one ``node`` is in (for an alias)."""
        scopes = self.scopes_around(node)
        next(scopes, None)
        for scope in scopes:
            if id(scope) in self._building:
                return None
            names = self._names_of(scope)
            if name in names.meanings:
                return names.meanings[name]
            if name in names.hidden:
                return None
        return None

    def _bound_in(self, scope: Scope) -> set[str]:
        """Every name ``scope`` binds (the module's are not needed: nothing hides there)."""
        if isinstance(scope, _FUNCTIONS):
            return set(local_names(scope, self._walrus)) | parameter_names(scope.args)
        if isinstance(scope, ast.Lambda):
            return parameter_names(scope.args)
        if isinstance(scope, ast.ClassDef):
            return set(local_names(scope, self._walrus))
        if isinstance(scope, _COMPREHENSIONS):
            return {
                n.id for generator in scope.generators for n in ast.walk(generator.target) if isinstance(n, ast.Name)
            }
        return set()

    # -- meanings --------------------------------------------------------------------
    def meaning(self, name: str, at: ast.AST, read: Reader | None = None) -> str | None:
        """The qualified name ``name`` means at node ``at``, or ``None`` (a local variable, a
        builtin, a definition of this file). ``read`` is told which code the answer read."""
        if name not in self._imported and name not in self._aliased and read is None:
            return None  # (with a reader, the scopes are read: a later import may change the answer)
        for scope in self.scopes_around(at):
            if read is not None:
                self._note_read(scope, read)
            names = self._names_of(scope)
            if name in names.meanings:
                return names.meanings[name]
            if name in names.hidden:
                return None
        return None

    def qualified_name(self, expr: ast.AST, read: Reader | None = None) -> str | None:
        """``nn.functional.relu`` -> ``torch.nn.functional.relu`` where ``nn`` means ``torch.nn``;
        ``None`` when ``expr`` is not a dotted name whose first name means a qualified name."""
        parts = dotted_parts(expr)
        if parts is None:
            return None
        base, rest = parts
        meaning = self.meaning(base, expr, read)
        return ".".join([meaning, *rest]) if meaning is not None else None

    def qualified_name_in(self, expr: ast.AST, wanted: Collection[str]) -> str | None:
        """``qualified_name(expr)`` when it is one of ``wanted``, else ``None``; without a look at
        scopes when no import of the file can make ``expr`` one of them (a rule that looks for
        one function among every call of a file asks this)."""
        # The cheapest test first: the last name written is the last part of what it would mean.
        last = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else None
        if last is None:
            return None
        ends = self._last_parts.get(id(wanted))
        if ends is None or ends[0] is not wanted:
            ends = self._last_parts[id(wanted)] = (wanted, frozenset(w.rpartition(".")[2] for w in wanted))
        if isinstance(expr, ast.Attribute):
            if last not in ends[1]:
                return None
        elif last not in self._imported and last not in self._aliased:
            return None  # a plain name no import or alias binds means no qualified name
        parts = dotted_parts(expr)
        if parts is None:
            return None
        base, rest = parts
        if base not in self._aliased:
            suffix = "".join(f".{attr}" for attr in rest)
            if not any(f"{meaning}{suffix}" in wanted for meaning in self._imported.get(base, ())):
                return None
        found = self.qualified_name(expr)
        return found if found in wanted else None

    def binds(self, name: str, at: ast.AST, read: Reader | None = None) -> bool:
        """Does ``name`` at ``at`` mean something the file binds (not a builtin)? Every binding
        counts here, at module level too."""
        for scope in self.scopes_around(at):
            if read is not None:
                self._note_read(scope, read)
            if isinstance(scope, ast.Module):
                return name in local_names(scope, self._walrus)
            names = self._names_of(scope)
            if name in names.meanings or name in names.hidden:
                return True
        return False

    def imported(self) -> set[str]:
        """Every qualified name an import of the file binds, in any scope (what each name an
        import binds may mean, gathered when the table was built)."""
        return {qualified for meanings in self._imported.values() for qualified in meanings}

    def _note_read(self, scope: Scope, read: Reader) -> None:
        if not isinstance(scope, ast.Module):
            read(scope)
            return
        for stmt in self._tree.body:
            if not isinstance(stmt, _IN_DEFINITIONS_KEY) and not (
                isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)
            ):
                read(stmt)


def _binding_sites(
    scope: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, names: set[str], walrus_possible: bool
) -> dict[str, int]:
    """How many times the scope binds each of ``names`` (parameters and what
    :func:`graphlife.analysis.scopes.bindings` finds in its body); a name declared ``global`` or
    ``nonlocal`` is not the scope's (it gets no count)."""
    bound, declared = bindings(scope, walrus_possible)
    params = parameter_names(scope.args) if not isinstance(scope, ast.ClassDef) else ()
    counts: dict[str, int] = {}
    for name in (*params, *bound):
        if name in names and name not in declared:
            counts[name] = counts.get(name, 0) + 1
    return counts


def scope_nodes(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node of a scope's body in source order, not descending into nested functions,
    lambdas or classes (their nodes are another scope's; the nested definition itself is yielded)."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _NESTED_SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
