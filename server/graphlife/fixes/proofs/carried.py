"""The fix for state carried across loop iterations, shared by GL101 and GL203.

Why every carried name at once: an LSTM hands ``h`` and ``c`` to the next iteration, a
GRU its state and a running average of it; each one that still reaches the old graph
makes the next backward walk into it, so detaching one of them leaves the bug. The
detach must match each name's shape: a tuple is detached item by item, and state that
starts as ``None`` needs a guard. A name the loop already detaches at its top carries
nothing, and is neither reported nor detached again.
"""

from __future__ import annotations

import ast

from graphlife.analysis.rule_api import RuleContext
from graphlife.analysis.state import State
from graphlife.analysis.values import HeapRef, TensorVal, TupleVal, Value
from graphlife.findings import Applicability, FixRecipe, MessageTemplate
from graphlife.phrases import joined
from graphlife.recipes import SAFE, CarriedName, DetachCarriedState

DETACH_TITLE = MessageTemplate("fix.detach-carried", "Detach {names} at the top of each iteration",
                               zh_cn="在每次迭代开始时分离 {names}（`detach()`）")


def detach_recipe(ctx: RuleContext, carried: list[tuple[str, ast.AST]], state: State,
                  applicability: Applicability = SAFE) -> FixRecipe:
    """`DetachCarriedState` for every carried name (a variable or `obj.attr`) at the top of their loop."""
    before = ctx.state_before_loop()
    if before is None:
        before = state
    loop = carried[0][1]
    targets = tuple(
        CarriedName(name, is_tuple=isinstance(lookup(name, state), TupleVal),
                    maybe_none=may_be_none(lookup(name, before)))
        for name, _ in carried
    )
    return DetachCarriedState(title=DETACH_TITLE(names=names_text(carried)),
                              applicability=applicability, loop=ctx.span(loop), targets=targets)


def names_text(carried: list[tuple[str, ast.AST]]) -> str:
    """`` `h` `` or `` `h` and `c` `` or `` `a`, `b` and `c` ``, for a message or a title."""
    return joined([f"`{name}`" for name, _ in carried])


def still_carried(carried: list[tuple[str, ast.AST]]) -> list[tuple[str, ast.AST]]:
    """``carried`` without the names the loop detaches before anything else rebinds them."""
    return [(name, loop) for name, loop in carried if not detached_at_top(loop, name)]


def detached_at_top(loop: ast.AST, name: str) -> bool:
    """The loop's body rebinds ``name`` first with a detached value (``h = h.detach()``, also
    under ``if h is not None:``): what the previous iteration left in it reaches no graph."""
    for stmt in getattr(loop, "body", ()):
        verdict = _rebinds(stmt, name)
        if verdict is not None:
            return verdict
    return False


def _rebinds(stmt: ast.stmt, name: str) -> bool | None:
    """``True``: ``stmt`` rebinds ``name`` to a detached value; ``False``: to something else;
    ``None``: it does not rebind it."""
    if isinstance(stmt, ast.If) and not stmt.orelse and _is_none_test(stmt.test, name):
        verdicts = [v for v in (_rebinds(s, name) for s in stmt.body) if v is not None]
        return verdicts[0] if verdicts else None
    if isinstance(stmt, ast.Assign) and any(_binds(t, name) for t in stmt.targets):
        return len(stmt.targets) == 1 and ast.unparse(stmt.targets[0]) == name and _detaches(stmt.value, name)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and _binds(stmt.target, name):
        return False
    if any(isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and _stores(n, name) for n in ast.walk(stmt)):
        return False
    return None


def _detaches(value: ast.expr, name: str) -> bool:
    """``value`` detaches what ``name`` held: ``name.detach()``, ``cell(x, name.detach())``, or each
    item of it (``tuple(t.detach() for t in name)``). ``cell(x.detach(), name)`` does not."""
    items = {ast.unparse(g.target) for n in ast.walk(value) if isinstance(n, (ast.GeneratorExp, ast.ListComp))
             for g in n.generators if ast.unparse(g.iter) == name}
    for node in ast.walk(value):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("detach", "detach_")):
            receiver = {ast.unparse(n) for n in ast.walk(node.func.value) if isinstance(n, (ast.Name, ast.Attribute))}
            if name in receiver or receiver & items:
                return True
    return False


def _binds(target: ast.expr, name: str) -> bool:
    return any(ast.unparse(n) == name for n in ast.walk(target) if isinstance(n, (ast.Name, ast.Attribute)))


def _stores(node: ast.AST, name: str) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return any(t is not None and _binds(t, name) for t in targets)


def _is_none_test(test: ast.expr, name: str) -> bool:
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
            and ast.unparse(test.left) == name and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None)


def lookup(name: str, state: State) -> Value | None:
    """The value of `x` or `obj.attr` in ``state`` (None when it cannot be followed)."""
    parts = name.split(".")
    value = state.env.get(parts[0])
    for attr in parts[1:]:
        if isinstance(value, HeapRef) and value.oid in state.heap:
            value = state.heap[value.oid].attrs.get(attr)
        else:
            return None
    return value


def may_be_none(value: Value | None) -> bool:
    """Before the loop, could the carried state be None (`hidden = None`)? Then the detach needs a guard."""
    if isinstance(value, TupleVal):
        return False
    if isinstance(value, TensorVal):
        return value.nullable
    return True
