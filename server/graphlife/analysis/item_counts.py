"""How many values a value gives where Python or torch unpacks it as a tuple.

Why apart: a custom Function's backward must return one gradient per input of
forward, and torch counts what it returns as a tuple: a tuple's items, or one value
for anything else (a tensor, ``None``, a list). The engine's values say this in
several ways (:class:`TupleVal` exactly, a ``"list"`` heap object made by a tuple of
unknown length with ``extra["at_least"]``, a tensor standing for a multi-output op's
tuple with :attr:`TensorVal.parts`); this module reads them in one place, and says
"not known" whenever a value could be either a tuple or not.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from graphlife.analysis.state import State
from graphlife.analysis.values import HeapRef, NoneValue, Number, TensorVal, TupleVal, Value


@dataclass(frozen=True)
class ItemCount:
    """Between ``low`` and ``high`` values (``high`` ``None``: no bound); ``items`` when they are
    known one by one (a tuple of known items); ``is_tuple`` when it is a tuple (else one value)."""

    low: int
    high: int | None
    items: tuple[Value, ...] | None = None
    is_tuple: bool = True

    @property
    def exact(self) -> int | None:
        return self.low if self.low == self.high else None


ONE_VALUE = ItemCount(1, 1, None, is_tuple=False)


def item_count(value: Value, state: State) -> ItemCount | None:
    """How many values torch sees in ``value`` returned from a backward (``None``: not known)."""
    if isinstance(value, TupleVal):
        return ItemCount(len(value.items), len(value.items), value.items)
    if isinstance(value, (NoneValue, Number)):
        return ONE_VALUE
    if isinstance(value, TensorVal):
        if value.opaque:
            return None  # made by an unknown call: maybe not a tensor at all
        if value.parts is None:
            return ONE_VALUE
        return ItemCount(value.parts[0], value.parts[1])
    if isinstance(value, HeapRef):
        obj = state.heap.get(value.oid)
        if obj is None or obj.kind != "list":
            return None
        at_least = obj.extra.get("at_least")
        if isinstance(at_least, int):
            return ItemCount(at_least, None)  # `(*grads, None)`: a tuple of unknown length
        if isinstance(obj.site, (ast.List, ast.ListComp)):
            return ONE_VALUE  # made by a list display: a list, one value for torch
    return None


def certainly_not_none(value: Value) -> bool:
    """``value`` is something other than ``None`` on every path."""
    if isinstance(value, TensorVal):
        return not value.nullable and not value.opaque
    return isinstance(value, (Number, TupleVal, HeapRef))
