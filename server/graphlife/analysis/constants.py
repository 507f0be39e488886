"""Arithmetic and comparisons of Python constants the engine knows on every path.

``Tree(block, c, c, level=level - 1)`` and ``if level == 1:`` in a module that builds
itself recursively, ``if mode == "train":`` after ``mode = "train"``: the branch taken is
certain when both sides are known numbers or strings, and taking only that branch keeps the
modules and graphs it builds known (both branches joined would make them unknown).
Only small, exact values are folded: an ``int`` result stays within ``SMALL_INT``, a string
within ``MAX_TEXT``; anything else is an unknown number, as before. Arithmetic is not folded
inside a loop (the engine's second run of a loop body stands for every later iteration, so a
counter must not hold one iteration's value there); comparisons are, as the first run of a
body is the first iteration.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

SMALL_INT = 2**31
MAX_TEXT = 256

_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}

#: What a fold gives when it cannot fold (the callers' "unknown number").
NOT_FOLDED = object()


def _kind(value: Any) -> str | None:
    """``int`` (bools count as ints, as in Python's arithmetic), ``str``, or ``None``: floats
    are left alone (their rounding is not worth deciding a branch on)."""
    if isinstance(value, (bool, int)):
        return "int"
    if isinstance(value, str):
        return "str"
    return None


def fold_binop(op: ast.operator, left: Any, right: Any) -> Any:
    """``left op right`` for two known constants of one kind, or :data:`NOT_FOLDED`."""
    function = _ARITHMETIC.get(type(op))
    kind = _kind(left)
    if function is None or kind is None or kind != _kind(right):
        return NOT_FOLDED
    if kind == "str" and not isinstance(op, ast.Add):
        return NOT_FOLDED
    if isinstance(op, (ast.FloorDiv, ast.Mod)) and right == 0:
        return NOT_FOLDED  # Python raises: not the engine's to decide
    if kind == "int" and max(abs(int(left)), abs(int(right))) >= SMALL_INT:
        return NOT_FOLDED
    result = function(left, right)
    if (kind == "int" and abs(result) >= SMALL_INT) or (kind == "str" and len(result) > MAX_TEXT):
        return NOT_FOLDED
    return result


def fold_compare(ops: list[ast.cmpop], values: list[Any]) -> Any:
    """A chain of comparisons (``a < b <= c``) of known constants of one kind, or :data:`NOT_FOLDED`."""
    kinds = {_kind(value) for value in values}
    if len(kinds) != 1 or None in kinds:
        return NOT_FOLDED
    result = True
    for op, left, right in zip(ops, values, values[1:]):
        function = _COMPARISONS.get(type(op))
        if function is None:
            return NOT_FOLDED
        result = result and function(left, right)
    return result


def known_truth(const: Any) -> bool | None:
    """The truth of a known constant (an ``int``, ``bool`` or ``str``), else ``None``."""
    return bool(const) if _kind(const) is not None else None
