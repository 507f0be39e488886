"""Which argument of a call is which tensor input of a table op, by the op's real signature.

Why: the saved-tensor table lists an op's tensor inputs (``gather(input, index)``), but a
call also passes non-tensors among them: ``x.gather(1, idx)``, ``torch.gather(x, 1, idx)``,
``torch.einsum("ij,jk->ik", a, b)``, ``F.layer_norm(x, (d,), w, b)``. Matched by position,
the dimension takes the index's place and the real index falls off the end, so the engine
reads the wrong requires-grad pattern and misses what the op saves. The table records the
call it measured (``torch.gather(input, 1, index)``): the position of each input there is
its position in the signature, and its name is its keyword.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from graphlife.analysis.optable import OpInfo
from graphlife.analysis.values import Value


@dataclass(frozen=True)
class Binding:
    """The op's tensor inputs, in the table's order (the receiver first for a method), with the
    expression each came from, and the arguments that are none of them."""

    inputs: list[Value]
    exprs: list[ast.expr | None]
    others: list[Value]


@lru_cache(maxsize=512)
def _positions(call: str, method: bool) -> tuple[tuple[str, int], ...] | None:
    """(input name, positional index) for each input the measured call passes positionally by
    name; ``None`` when it cannot say (inputs inside a list, as ``torch.cat([t0, t1])``)."""
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call):
        return None
    if any(isinstance(arg, (ast.List, ast.Tuple, ast.Starred)) for arg in node.args):
        return None
    return tuple((arg.id, index) for index, arg in enumerate(node.args) if isinstance(arg, ast.Name))


def bind(info: OpInfo, receiver: Value | None, receiver_expr: ast.expr | None, args: Sequence[Value],
         kwargs: Mapping[str, Value], call: ast.Call) -> Binding | None:
    """The inputs of ``info`` in this call, when the measured call puts a non-tensor before one
    of them (else ``None``: matching by position is right, and the caller does that)."""
    method = receiver is not None
    positions = _positions(info.call, method)
    if positions is None or any(isinstance(arg, ast.Starred) for arg in call.args):
        return None
    names = info.inputs[1:] if method else info.inputs
    where = dict(positions)
    if all(where.get(name) == index for index, name in enumerate(names)):
        return None  # the inputs come first, in order: positions are right
    inputs: list[Value] = [receiver] if receiver is not None else []
    exprs: list[ast.expr | None] = [receiver_expr] if method else []
    used: set[int] = set()
    for name in names:
        index = where.get(name)
        if index is not None and index < len(args):
            inputs.append(args[index])
            exprs.append(call.args[index] if index < len(call.args) else None)
            used.add(index)
        elif name in kwargs:
            inputs.append(kwargs[name])
            exprs.append(next((k.value for k in call.keywords if k.arg == name), None))
        else:
            break  # an input left out (an optional weight): the table's pattern does not apply
    others = [value for index, value in enumerate(args) if index not in used]
    others += [value for name, value in kwargs.items() if name not in names and name != "out"]
    return Binding(inputs, exprs, others)
