"""Events the engine emits in program order: what happened, where, and the state there.

A rule hooks an event by its class (``@RULE.on(BackwardEvent)``, see
:mod:`graphlife.analysis.rule_api`); the engine calls each hook as
``hook(event, ctx)`` where ``ctx`` is the :class:`~graphlife.analysis.rule_api.RuleContext`
(spans, source text, the graph, the loop the event is in, carried variables, the
rule's state for the running unit). Dispatch is on the event's exact class.

The events:

- :class:`BackwardEvent`: ``.backward()``, ``torch.autograd.backward``,
  ``torch.autograd.grad``; emitted *before* the graph is freed, with the nodes
  the backward reaches on every path (``must``) and on some path (``may``).
- :class:`InplaceEvent`: an in-place change of a tensor (``x += y``,
  ``x.add_()``, ``x[i] = v``, ``out=``, an in-place module or functional flag).
- :class:`OptimizerEvent`: ``torch.optim.X(params, ...)``.
- :class:`RequiresGradEvent`: ``t.requires_grad = flag`` or ``t.requires_grad_(flag)``.
- :class:`SavedEvent`: an op saved an inference tensor for backward.
- :class:`StepEvent`: ``optimizer.step()`` updated parameters in place.
- :class:`ZeroGradEvent`: ``optimizer.zero_grad()``, ``model.zero_grad()``,
  ``p.grad = None``, ``p.grad.zero_()``.
- :class:`GradReadEvent`: ``t.grad`` read.
- :class:`NumpyEvent`: ``t.numpy()`` (a tensor handed to NumPy, which keeps no graph).
- :class:`StoreEvent`: a tensor stored where it outlives the loop iteration
  (a container or object made before the loop, an accumulator variable).
- :class:`LoopEndEvent`: a loop finished; which nodes and backwards it saw.
- :class:`FunctionForwardEvent`: a custom ``autograd.Function``'s forward ran (through
  ``apply``, or alone with abstract inputs): its inputs, output, and what it kept on ``ctx``.
- :class:`FunctionBackwardEvent`: a custom Function's backward starts, analyzed alone (torch
  calls it, never the file): the gradient tensors it receives.
- :class:`UnreplayedDecisionEvent`: inside a function a ``checkpoint`` runs, a value its
  recomputation does not give again (Python's or NumPy's random, the clock, state the function
  writes) decided the control flow or a shape.
- :class:`UnreplayedDrawEvent`: inside a function a ``checkpoint(..., preserve_rng_state=False)``
  runs, torch drew random numbers (a random op, dropout) that its recomputation draws anew.
- :class:`UnitEndEvent`: the analyzed unit finished (or a call analyzed apart returned),
  with its final state: rules report what they kept pending.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphlife.analysis.values import HeapRef, TensorVal, Tri, Unreplayed, Value

if TYPE_CHECKING:  # pragma: no cover
    from graphlife.analysis.state import State


@dataclass
class Event:
    """What every event has: where it happens and the state there."""

    stmt: ast.stmt  # the statement (innermost, in user code) where it happens
    state: State  # the state just before the event takes effect


@dataclass
class BackwardEvent(Event):
    call: ast.Call
    root: Value  # what is backpropagated: a tensor, a tuple of them, or unknown
    root_expr: ast.expr | None
    retain_graph: Tri
    kind: str  # "backward" (`.backward()`, `torch.autograd.backward`) | "grad" (`torch.autograd.grad`)
    must: set[int] = field(default_factory=set)
    may: set[int] = field(default_factory=set)
    create_graph: Tri = False
    leaves: frozenset[int] = frozenset()  # leaf storages the backward accumulates into
    #: What the gradients are asked for: ``autograd.grad``'s inputs, ``backward(inputs=...)`` (else None).
    inputs: Value | None = None
    #: It runs inside a hook of other backwards (a hook calling ``aux.backward()``): the graph
    #: nodes those may still go through once the hook returns.
    enclosing_may: frozenset[int] = frozenset()


@dataclass
class OpaqueCallEvent(Event):
    """A call the engine cannot follow (an unknown callable: a model built by a library, a deep
    copy) was given tensors with graphs: whatever it returns may carry those graphs, which the
    engine then no longer sees (the nodes of a later value made from it are ``partial``)."""

    call: ast.Call
    nodes: frozenset[int]  # the graph nodes of the tensors it was given


@dataclass
class InplaceEvent(Event):
    site: ast.AST
    target: TensorVal
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
    target: TensorVal
    target_expr: ast.expr | None
    flag: Tri
    form: str  # "attribute" (`t.requires_grad = flag`) | "method" (`t.requires_grad_(flag)`)


@dataclass
class SavedEvent(Event):
    site: ast.AST
    tensor: TensorVal
    tensor_expr: ast.expr | None
    op: str


@dataclass
class StepEvent(Event):
    call: ast.Call
    storages: frozenset[int] | None  # the parameters it updates (None: unknown)
    #: It runs in a post-accumulate-grad hook (the optimizer step fused into the backward):
    #: its gradients are reset there, after the step, not at the top of a loop.
    in_backward: bool = False


@dataclass
class ZeroGradEvent(Event):
    call: ast.AST  # the call, or the `p.grad` of `p.grad = None`
    storages: frozenset[int] | None
    set_to_none: Tri


@dataclass
class GradShareEvent(Event):
    """``global_param._grad = local_param.grad``: the parameters ``storages`` now hold the gradient
    tensor of the leaves ``sources`` (the A3C pattern: one model's backward, another's step)."""

    target: ast.Attribute  # `global_param._grad`
    storages: frozenset[int]
    sources: frozenset[int]


@dataclass
class GradReadEvent(Event):
    tensor: TensorVal  # the tensor whose `.grad` is read
    expr: ast.Attribute  # the `t.grad` expression


@dataclass
class NumpyEvent(Event):
    """``t.numpy()``: NumPy cannot carry a graph, so torch refuses a tensor that requires grad
    (unless ``force=True`` detaches it)."""

    tensor: TensorVal
    call: ast.Call  # the `t.numpy()` call
    receiver: ast.expr  # `t`


@dataclass
class StoreEvent(Event):
    value: TensorVal  # the tensor with a graph that is kept
    target: str  # how the place is written: `losses`, `history["loss"]`, `self.last`, `total`
    kind: str  # "append" | "setitem" | "attribute" | "accumulate"
    whole: Value | None = None  # the stored value itself (a tensor, or a tuple holding one)
    #: The store replaces what one slot held (an item whose key has one known value): one graph
    #: is kept, not one per iteration.
    same_slot: bool = False


@dataclass
class LoopEndEvent(Event):
    loop: ast.stmt  # the `for` or `while` statement
    first_node: int  # nodes created by the loop are those with nid >= first_node
    last_node: int
    backwards: int  # backward events seen while the loop ran
    module_calls: list[tuple[HeapRef, ast.AST]] = field(default_factory=list)  # modules called, and where


@dataclass(frozen=True)
class CtxStore:
    """``ctx.attr = value`` in a custom Function's forward or ``setup_context``."""

    attr: str
    value: Value
    target: ast.Attribute  # the `ctx.attr` written
    stmt: ast.stmt  # the statement that writes it


@dataclass(frozen=True)
class CtxSave:
    """``ctx.save_for_backward(...)``: the values it was given, one per positional argument
    (``None`` after a ``*args``, whose values are not known one by one)."""

    call: ast.Call
    values: tuple[Value, ...]
    stmt: ast.stmt


@dataclass
class FunctionForwardEvent(Event):
    """A custom ``torch.autograd.Function``'s forward ran: through ``Fn.apply(...)`` with the
    values it was given, or alone (nothing in the file applies it) with abstract inputs: values
    that may not be tensors (opaque) until the run uses them as tensors. ``stores`` and ``saves``
    are what forward (and ``setup_context``) did to the ctx, on some path; ``output`` is what
    forward returned."""

    function: ast.ClassDef  # the Function class whose apply ran
    forward: ast.FunctionDef | ast.AsyncFunctionDef
    setup_context: ast.FunctionDef | ast.AsyncFunctionDef | None
    inputs: tuple[tuple[str, Value], ...]  # forward's input parameters and their values
    output: Value
    stores: tuple[CtxStore, ...]
    saves: tuple[CtxSave, ...]
    alone: bool  # analyzed without its callers


@dataclass
class FunctionBackwardEvent(Event):
    """A custom ``torch.autograd.Function``'s backward starts (analyzed as a unit of its own, with a
    ctx and one tensor per gradient it receives; a ``*grads`` parameter holds tensors too)."""

    function: ast.ClassDef
    backward: ast.FunctionDef | ast.AsyncFunctionDef
    grads: tuple[tuple[str, TensorVal], ...]  # the gradient parameters and the tensors they hold
    star: str | None  # the name of a ``*grads`` parameter (its items are ``grads`` of that name)


@dataclass
class FunctionBackwardEndEvent(Event):
    """A custom ``torch.autograd.Function``'s backward, analyzed as a unit of its own, ended: what
    each of its own ``return`` statements gave (with the state there, whose heap holds what the
    value refers to), once per path that reached it (a statement in a
    loop may give several), and whether a path falls off its end (backward then returns ``None``).
    A statement the run never reached is not there."""

    function: ast.ClassDef
    backward: ast.FunctionDef | ast.AsyncFunctionDef
    returns: tuple[tuple[ast.Return, Value, State], ...]  # the statement, its value, the state there
    falls_through: bool


@dataclass
class CheckpointEvent(Event):
    """What every event about a checkpoint region has: the ``checkpoint(...)`` call whose function
    runs, how the messages name that function, and how torch runs it again during backward."""

    checkpoint: ast.Call
    function: str  # `Block.forward`, `mixer`, `lambda`
    reentrant: Tri
    restores_rng: bool


@dataclass
class UnreplayedDecisionEvent(CheckpointEvent):
    """A value that the recomputation does not give again (``source``: where it comes from) decided
    the control flow (``what == "flow"``: an ``if``, a loop, a conditional expression, an ``assert``,
    ``range``) or a shape (``"shape"``: a slice of a tensor, the sizes of ``view``/``reshape``...)
    at ``decided``. Values read from state (``source.key``) come only once the region also
    writes that state (before or after the read)."""

    source: Unreplayed = field(default_factory=lambda: Unreplayed(0, ""))
    decided: ast.AST | None = None
    what: str = "flow"


@dataclass
class UnreplayedDrawEvent(CheckpointEvent):
    """torch's own random state was drawn from (``draw``: a random op, functional dropout, a
    dropout module's call) in a region whose checkpoint does not restore it (``preserve_rng_state=False``)."""

    draw: ast.AST | None = None
    op: str = ""


@dataclass
class UnitEndEvent(Event):
    unit: ast.AST | None  # the module or function analyzed (``None``: outside any)
