"""The order in which the functions of a file are analyzed alone: callers before the functions they call.

Why: a function that an analyzed unit inlined is not analyzed alone (its caller's values
know more), but one analyzed alone before its caller runs is analyzed twice: alone, then
inlined again in its caller. In file order that happens whenever a helper is written
above its caller: on DeepSpeed's ``runtime/engine.py``, ``allreduce_gradients`` (1,365
statements with what it inlines) ran alone and then again inside ``backward``, a fifth of
the file's work. Callers first, a callee is usually inlined before its turn comes, and
then skipped; one its callers never reached (a branch not taken, the inlining depth) is
analyzed alone as before.

The calls are read from the code, not run: ``name(...)`` of a function defined at the top
of the module, and ``self.name(...)`` / ``cls.name(...)`` of a method of the same class.
Functions in a cycle of calls keep their order in the file.
"""

from __future__ import annotations

import ast
import heapq
from collections.abc import Mapping

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def callers_first(functions: list[tuple[_Function, ast.ClassDef | None]], calls: list[ast.AST],
                  parents: Mapping[int, ast.AST]) -> list[tuple[_Function, ast.ClassDef | None]]:
    """``functions`` (in file order, with their classes) reordered so that each comes after the
    functions that call it, where the calls (the file's ``ast.Call`` nodes, whose enclosing
    nodes ``parents`` gives) allow; otherwise in the given order."""
    position = {id(func): index for index, (func, _) in enumerate(functions)}
    top_level = {func.name: func for func, owner in functions
                 if owner is None and isinstance(parents.get(id(func)), ast.Module)}
    methods: dict[tuple[int, str], _Function] = {(id(owner), func.name): func for func, owner in functions
                                                  if owner is not None and parents.get(id(func)) is owner}
    method_names = {name for _, name in methods}
    owners = {id(func): owner for func, owner in functions}
    callees: dict[int, set[int]] = {}
    waiting = dict.fromkeys(position, 0)  # callers not yet placed, per function
    for call in calls:
        if not isinstance(call, ast.Call):
            continue
        # Most calls are of torch or of objects: no walk up to their function (this loop sees
        # every call of the file, at every check).
        target = call.func
        if isinstance(target, ast.Name):
            if target.id not in top_level:
                continue
        elif not (isinstance(target, ast.Attribute) and _on_self(target, method_names)):
            continue
        caller = _enclosing_function(call, parents)
        if caller is None or id(caller) not in position:
            continue
        callee = _callee(call.func, owners.get(id(caller)), top_level, methods)
        if callee is None or callee is caller or id(callee) not in position:
            continue
        edges = callees.setdefault(id(caller), set())
        if id(callee) not in edges:
            edges.add(id(callee))
            waiting[id(callee)] += 1
    if not callees:
        return functions
    ready = [index for index, (func, _) in enumerate(functions) if waiting[id(func)] == 0]
    heapq.heapify(ready)
    placed: list[tuple[_Function, ast.ClassDef | None]] = []
    done: set[int] = set()
    next_unplaced = 0
    while len(placed) < len(functions):
        if not ready:  # a cycle: the first function of the file not placed yet goes next
            while id(functions[next_unplaced][0]) in done:
                next_unplaced += 1
            heapq.heappush(ready, next_unplaced)
        index = heapq.heappop(ready)
        func = functions[index][0]
        if id(func) in done:
            continue
        done.add(id(func))
        placed.append(functions[index])
        for callee_id in callees.get(id(func), ()):
            waiting[callee_id] -= 1
            if waiting[callee_id] == 0 and callee_id not in done:
                heapq.heappush(ready, position[callee_id])
    return placed


def _on_self(target: ast.Attribute, method_names: set[str]) -> bool:
    """``self.name`` / ``cls.name`` with ``name`` the name of a method of the file."""
    return target.attr in method_names and isinstance(target.value, ast.Name) and target.value.id in ("self", "cls")


def _enclosing_function(node: ast.AST, parents: Mapping[int, ast.AST]) -> _Function | None:
    current = parents.get(id(node))
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
        current = parents.get(id(current))
    return current


def _callee(func: ast.expr, owner: ast.ClassDef | None, top_level: Mapping[str, _Function],
            methods: Mapping[tuple[int, str], _Function]) -> _Function | None:
    """The function of the file a call's target names, when the code says which."""
    if isinstance(func, ast.Name):
        return top_level.get(func.id)
    if (owner is not None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")):
        return methods.get((id(owner), func.attr))
    return None
