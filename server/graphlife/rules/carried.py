"""The fix for state carried across loop iterations, shared by GL101 and GL203.

Detaching at the top of the loop must match the state's shape: a tuple (an LSTM's
`(h, c)`) is detached item by item, and state that starts as `None` needs a guard.
"""

from __future__ import annotations

import ast

from graphlife.analysis.rule_api import RuleContext
from graphlife.analysis.state import State
from graphlife.analysis.values import HeapRef, TensorVal, TupleVal, Value
from graphlife.findings import FixRecipe


def detach_recipe(ctx: RuleContext, name: str, loop: ast.AST, state: State) -> FixRecipe:
    """`detach_carried_state` for ``name`` (a variable or `obj.attr`) at the top of ``loop``."""
    before = ctx.state_before_loop()
    if before is None:
        before = state
    return FixRecipe(
        "detach_carried_state", f"Detach `{name}` at the top of each iteration",
        {"target": name, "loop": ctx.span(loop), "is_tuple": isinstance(lookup(name, state), TupleVal),
         "maybe_none": may_be_none(lookup(name, before))},
    )


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
