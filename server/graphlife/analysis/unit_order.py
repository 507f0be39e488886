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
Functions in a cycle of calls keep their order in the file. A whole file's check reads the
calls from its tree index (each call filed by kind, placed in its function through the parent
map) instead of walking every function: that walk was about a tenth of the check's time on the
generated 1,000-line file.
"""

from __future__ import annotations

import ast
import heapq
from collections.abc import Collection, Mapping

from graphlife.analysis.node_walk import child_nodes
from graphlife.analysis.tree_index import index_of

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
    from_index = _calls_from_index(functions, parents, top_level.keys(), {name for _, name in methods})
    for caller, owner in functions:
        calls = calls_named_in(caller) if from_index is None else from_index.get(id(caller), {})
        for on_self, name in calls:
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
    stack = child_nodes(func)
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
        stack.extend(child_nodes(node))
    found = tuple(names)
    setattr(func, "_graphlife_calls_named", found)  # noqa: B010 - a cache hung on the node
    return found


_Calls = dict[int, dict[tuple[bool, str], None]]


def _calls_from_index(functions: list[tuple[_Function, ast.ClassDef | None]], parents: Mapping[int, ast.AST],
                      plain: Collection[str], on_self: Collection[str]) -> _Calls | None:
    """What :func:`calls_named_in` answers, per function id, read from the calls the whole file's
    tree index filed (``None`` when ``parents`` is not such an index's: the language server's
    merged index keeps the answers on the functions' nodes, which an edit elsewhere leaves alone),
    but only the calls that name one of ``plain`` (``name(...)``) or ``on_self`` (``self.name(...)``):
    the others name no function of the file.

    Only those calls go up the parent map, to their nearest ``def``: a lambda or a class is not
    a ``def``, and a ``def``'s decorators, defaults and annotations are its children, as in the walk."""
    if not functions:
        return None
    node: ast.AST | None = functions[0][0]
    while node is not None and not isinstance(node, ast.Module):
        node = parents.get(id(node))
    index = index_of(node) if node is not None else None
    if index is None or not index.whole_file or index.parents is not parents:
        return None
    found: _Calls = {}
    function_classes = (ast.FunctionDef, ast.AsyncFunctionDef)
    name_class, attribute_class = ast.Name, ast.Attribute
    for call in index.by_kind[ast.Call]:
        target = call.func  # type: ignore[attr-defined]  # filed under ast.Call
        klass = target.__class__
        if klass is name_class:
            if target.id not in plain:
                continue
            key = (False, target.id)
        elif (klass is attribute_class and target.attr in on_self and target.value.__class__ is name_class
                and target.value.id in ("self", "cls")):
            key = (True, target.attr)
        else:
            continue
        owner = parents.get(id(call))
        while owner is not None and owner.__class__ not in function_classes:
            owner = parents.get(id(owner))
        if owner is not None:
            found.setdefault(id(owner), {})[key] = None
    return found
