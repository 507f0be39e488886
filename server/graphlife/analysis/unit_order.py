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


def callers_first(functions: list[tuple[_Function, ast.ClassDef | None]],
                  parents: Mapping[int, ast.AST]) -> list[tuple[_Function, ast.ClassDef | None]]:
    """``functions`` (in file order, with their classes) reordered so that each comes after the
    functions that call it, where the calls (the names each function calls, :func:`calls_named_in`;
    ``parents`` gives the nodes enclosing a function) allow; otherwise in the given order."""
    position = {id(func): index for index, (func, _) in enumerate(functions)}
    top_level = {func.name: func for func, owner in functions
                 if owner is None and isinstance(parents.get(id(func)), ast.Module)}
    methods: dict[tuple[int, str], _Function] = {(id(owner), func.name): func for func, owner in functions
                                                  if owner is not None and parents.get(id(func)) is owner}
    callees: dict[int, set[int]] = {}
    waiting = dict.fromkeys(position, 0)  # callers not yet placed, per function
    for caller, owner in functions:
        for on_self, name in calls_named_in(caller):
            callee = methods.get((id(owner), name)) if on_self else top_level.get(name)
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


def calls_named_in(func: _Function) -> tuple[tuple[bool, str], ...]:
    """The calls ``func`` makes that may name a function of the file: ``(False, name)`` for
    ``name(...)``, ``(True, name)`` for ``self.name(...)`` / ``cls.name(...)``, each once.

    A call belongs to its nearest enclosing function: the calls of a function defined inside
    ``func`` (its decorators and defaults too) are that function's, a lambda's are ``func``'s.
    Kept on the function's node: the language server reuses the nodes of the functions an edit
    did not touch, so a keystroke walks only the edited function, not every call of the file."""
    found: tuple[tuple[bool, str], ...] | None = getattr(func, "_graphlife_calls_named", None)
    if found is not None:
        return found
    names: dict[tuple[bool, str], None] = {}
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue  # its calls are its own
        if isinstance(node, ast.Call):
            target = node.func
            if isinstance(target, ast.Name):
                names[(False, target.id)] = None
            elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id in ("self", "cls")):
                names[(True, target.attr)] = None
        stack.extend(ast.iter_child_nodes(node))
    found = tuple(names)
    setattr(func, "_graphlife_calls_named", found)  # noqa: B010 - a cache hung on the node
    return found
