"""Graph growth decided from the graph: a new value chains an earlier iteration's value by arithmetic.

Why from the graph and not the spelling: `total += loss`, `total = total + loss`,
`ema = 0.9 * ema + 0.1 * loss`, `self.total = self.total + loss`, `acc.add_(loss)` and
`w = w - lr * g` (outside `no_grad`) all leak the same way, and only the graph says so
for all of them: the value written into a place is computed, through additions,
multiplications and the like, from the value the same place held in an earlier iteration
of a running loop, and that value had a graph. Each iteration then adds nodes on top of
all the earlier ones, and none of them can be freed while the place lives.

The walk follows only elementwise arithmetic written in the writing statement itself, from the
new value down to the old one: a recurrent state (`h = cell(x, h)`) also reaches the previous
iteration's graph, but through the ops of a call - the carried-state shape GL101 and GL203
report, not a running total.
"""

from __future__ import annotations

import ast

from graphlife.analysis import library_models
from graphlife.analysis.node_walk import iter_nodes
from graphlife.analysis.state import GraphStore
from graphlife.analysis.values import TensorVal, Value

#: The arithmetic a running total, an average or a hand-written update is made of (the last part
#: of an op's key, without its underscores: `Tensor.__radd__` -> `radd`, `Tensor.add_` -> `add`).
_ARITHMETIC = frozenset({
    "add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "truediv", "rtruediv", "itruediv",
    "div", "neg", "lerp", "addcmul", "addcdiv", "sum", "mean", "clamp", "clip", "clamp_min", "clamp_max",
})
#: How many arithmetic nodes the walk crosses (`0.9 * ema + 0.1 * loss` is two).
_MAX_DEPTH = 4


def _arithmetic(op: str) -> bool:
    return op.rsplit(".", 1)[-1].strip("_") in _ARITHMETIC


def earlier_iteration(node_iteration: tuple[int, ...], current: tuple[int, ...]) -> bool:
    """Was a node made in an earlier iteration of one of the loops running now (the same
    iterations of the loops around that one)?"""
    for depth, index in enumerate(current):
        if depth >= len(node_iteration):
            return False  # made before this loop started
        if node_iteration[depth] != index:
            return node_iteration[depth] < index
    return False


def grows(graph: GraphStore, old: Value | None, new: Value, current: tuple[int, ...], statement: ast.stmt) -> bool:
    """Does ``new`` (the value written into a place) chain ``old`` (what the place held), a
    value with a graph from an earlier iteration, through arithmetic written in ``statement``
    itself? (`hidden = cell(x, hidden)` chains it too, through the ops of a call: a carried
    state, not a running total.)"""
    if not isinstance(old, TensorVal) or not isinstance(new, TensorVal) or not old.grad_fn or not new.grad_fn:
        return False
    nodes = graph.nodes
    frontier = [nid for nid in new.grad_fn if nid not in old.grad_fn]
    if not frontier:
        return False
    written_here = _nodes_of(statement)
    if not any(id(nodes[nid].site) in written_here and _arithmetic(nodes[nid].op) for nid in frontier):
        return False  # the walk below would stop at once: asked first, it is the cheapest test
    if not library_models.stores_graph(graph, new):
        return False
    targets = {nid for nid in old.grad_fn if earlier_iteration(nodes[nid].iteration, current)}
    if not targets:
        return False
    seen: set[int] = set()
    for _ in range(_MAX_DEPTH):
        following: list[int] = []
        for nid in frontier:
            if nid in seen:
                continue
            seen.add(nid)
            node = nodes[nid]
            if id(node.site) not in written_here or not _arithmetic(node.op):
                continue
            if node.parents & targets:
                return True
            following.extend(node.parents)
        frontier = following
    return False


def _nodes_of(statement: ast.stmt) -> frozenset[int]:
    """The ids of the nodes of ``statement``, kept on it: a write in a loop asks at every
    iteration of every call that runs it, and the nodes of a statement never change."""
    found: frozenset[int] | None = getattr(statement, "_graphlife_node_ids", None)
    if found is None:
        found = frozenset(map(id, iter_nodes(statement)))  # the nodes `ast.walk` gives, but `ctx`
        setattr(statement, "_graphlife_node_ids", found)  # noqa: B010 - a cache hung on the node
    return found
