"""Events the engine emits in program order, and what rules may ask at each.

A rule registers hooks by event name (``RULE.hooks = {"backward": fn}``); each
hook is called as ``fn(event, ctx)`` where ``ctx`` is the :class:`EventContext`
(spans, source text, the graph, the loop the event is in, carried variables).

Event names and payloads:

- ``backward`` (:class:`BackwardEvent`): ``.backward()``, ``torch.autograd.backward``,
  ``torch.autograd.grad``; emitted *before* the graph is freed, with the nodes
  the backward reaches on every path (``must``) and on some path (``may``).
- ``inplace`` (:class:`InplaceEvent`): an in-place change of a tensor (``x += y``,
  ``x.add_()``, ``x[i] = v``, ``out=``, an in-place module or functional flag).
- ``optimizer_created`` (:class:`OptimizerEvent`): ``torch.optim.X(params, ...)``.
- ``requires_grad_set`` (:class:`RequiresGradEvent`): ``t.requires_grad = flag`` or
  ``t.requires_grad_(flag)``.
- ``saved`` (:class:`SavedEvent`): an op saved an input tensor for backward.
- ``step`` (:class:`StepEvent`): ``optimizer.step()`` updated parameters in place.
- ``zero_grad`` (:class:`ZeroGradEvent`): ``optimizer.zero_grad()``, ``model.zero_grad()``,
  ``p.grad = None``, ``p.grad.zero_()``.
- ``grad_read`` (:class:`GradReadEvent`): ``t.grad`` read.
- ``store`` (:class:`StoreEvent`): a tensor stored where it outlives the loop iteration
  (a container or object made before the loop, an accumulator variable).
- ``loop_end`` (:class:`LoopEndEvent`): a loop finished; which nodes and backwards it saw.
- ``unit_end`` (:class:`UnitEndEvent`): the analyzed unit finished, with its final state.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphlife.analysis.values import Tri, Value

if TYPE_CHECKING:  # pragma: no cover
    from graphlife.analysis.state import GraphStore, State


@dataclass
class Event:
    stmt: ast.stmt  # the statement (innermost, in user code) where it happens
    state: "State"  # the state just before the event takes effect


@dataclass
class BackwardEvent(Event):
    call: ast.Call
    root: Value
    root_expr: ast.expr | None
    retain_graph: Tri
    kind: str  # "backward" | "grad"
    must: set[int] = field(default_factory=set)
    may: set[int] = field(default_factory=set)
    create_graph: Tri = False
    leaves: frozenset[int] = frozenset()  # leaf storages the backward accumulates into


@dataclass
class InplaceEvent(Event):
    site: ast.AST
    target: Value
    target_expr: ast.expr | None
    op: str
    construction: ast.AST | None = None  # the nn.X(inplace=True) that does it, if any
    via_data: bool = False


@dataclass
class OptimizerEvent(Event):
    call: ast.Call
    params: list[tuple[Value, ast.expr | None]] = field(default_factory=list)


@dataclass
class RequiresGradEvent(Event):
    target: Value
    target_expr: ast.expr | None
    flag: Tri
    form: str  # "attribute" | "method"


@dataclass
class SavedEvent(Event):
    site: ast.AST
    tensor: Value
    tensor_expr: ast.expr | None
    op: str


@dataclass
class StepEvent(Event):
    call: ast.Call
    storages: frozenset[int] | None


@dataclass
class ZeroGradEvent(Event):
    call: ast.AST
    storages: frozenset[int] | None
    set_to_none: Tri


@dataclass
class GradReadEvent(Event):
    tensor: Value
    expr: ast.expr


@dataclass
class StoreEvent(Event):
    value: Value
    target: str  # how the place is written: `losses`, `history["loss"]`, `self.last`, `total`
    kind: str  # "append" | "setitem" | "attribute" | "accumulate"
    whole: Value | None = None  # the stored value itself (a tensor, or a tuple holding one)


@dataclass
class LoopEndEvent(Event):
    loop: ast.AST
    first_node: int  # nodes created by the loop are those with nid >= first_node
    last_node: int
    backwards: int  # backward events seen while the loop ran
    module_calls: list = field(default_factory=list)  # (heap object, call) of modules called


@dataclass
class UnitEndEvent(Event):
    unit: ast.AST | None


@dataclass
class EventContext:
    """What a hook can ask about: text and spans, the graph, loops and carried state."""

    interpreter: Any  # graphlife.analysis.interpreter.Interpreter (kept loose to avoid a cycle)

    @property
    def graph(self) -> "GraphStore":
        return self.interpreter.graph

    def span(self, node: ast.AST):
        return self.interpreter.span(node)

    def text(self, node: ast.AST | None) -> str:
        return self.interpreter.text(node)

    def carried_names(self, node_ids: set[int], state: "State") -> list[tuple[str, ast.AST]]:
        return self.interpreter.carried_names(node_ids, state)

    def current_loop(self) -> ast.AST | None:
        return self.interpreter.current_loop()
