"""``torch.autograd.Function.apply``: a custom op, run as torch runs it.

Why: custom ops are where people write their own backward (straight-through
estimators, gradient reversal, fused kernels), and torch treats their forward
specially: it runs with gradients off, the tensors handed to
``ctx.save_for_backward`` are saved at their versions (an in-place change of one
before the backward makes it raise; an inference tensor cannot be saved at all),
and what ``apply`` returns is one graph node whose parents are the inputs that
require grad. An engine that did not run it saw an unknown value: no graph, no
saved tensor, nothing for the training loop's rules.

So ``Fn.apply(*args)`` runs ``Fn.forward(ctx, *args)`` (or ``forward(*args)`` then
``setup_context(ctx, inputs, output)``) inlined under ``no_grad`` with a context
object; ``ctx.save_for_backward`` records the saved tensors; then one node is made
for the call, saving what the context recorded, and the outputs become its results.
The backward is not run here (torch runs it at ``loss.backward()``; the GL4xx rules
check it against the forward).
"""

from __future__ import annotations

import ast

from graphlife.analysis import torch_api
from graphlife.analysis.engine.core import EngineCore
from graphlife.analysis.events import SavedEvent
from graphlife.analysis.state import SavedRef, State
from graphlife.analysis.values import (
    NONE,
    UNKNOWN,
    ClassRef,
    FunctionRef,
    HeapRef,
    TensorVal,
    TupleVal,
    Value,
    replace,
)

#: Methods of ``ctx`` that change nothing the engine follows.
_CTX_NO_EFFECT = frozenset({"mark_dirty", "mark_non_differentiable", "set_materialize_grads", "save_for_forward"})


class AutogradFunctionParts(EngineCore):
    """``Function.apply`` and the methods of its ``ctx``."""

    def apply_autograd_function(self, ref: ClassRef, args: list[Value], kwargs: dict[str, Value], state: State,
                                call: ast.Call) -> Value:
        forward = self.find_method(ref, "forward", state)
        if forward is None:
            self.unseen_call([*args, *kwargs.values()], state)
            return UNKNOWN
        ctx = self.new_object(state, "autograd_ctx", call, cls=ref.node.name)
        state.heap[ctx.oid].extra["saved"] = ()
        setup = self.find_method(ref, "setup_context", state)
        grad, assumed, inference = state.grad_enabled, state.grad_assumed, state.inference_mode
        state.grad_enabled, state.grad_assumed = False, False  # torch runs forward under no_grad
        try:
            if setup is not None:
                output = self.call_function(FunctionRef(node=forward, key=id(forward)), args, kwargs, state, call)
                self.call_function(FunctionRef(node=setup, key=id(setup)), [ctx, TupleVal(tuple(args)), output], {},
                                   state, call)
            else:
                output = self.call_function(FunctionRef(node=forward, key=id(forward)), [ctx, *args], kwargs, state,
                                            call)
        finally:
            state.grad_enabled, state.grad_assumed, state.inference_mode = grad, assumed, inference
        return self._function_node(ref, ctx, [*args, *kwargs.values()], output, state, call)

    def _function_node(self, ref: ClassRef, ctx: HeapRef, inputs: list[Value], output: Value, state: State,
                       call: ast.Call) -> Value:
        """The node ``apply`` makes: its parents the inputs' graphs, its saved tensors the context's."""
        flat = torch_api.flatten_tensor_args(inputs, state)
        tensors = [t for t in flat if isinstance(t, TensorVal)]
        unknown = any(torch_api.may_carry_graph(v) for v in flat if not isinstance(v, TensorVal))
        if state.grad_enabled is False or (all(t.requires_grad is False for t in tensors) and not unknown):
            return output
        needs_grad: bool | None = True if any(t.requires_grad for t in tensors) else None
        if state.grad_enabled is None:
            needs_grad = None
        ctx_obj = state.heap.get(ctx.oid)
        saved: tuple[SavedRef, ...] = ctx_obj.extra.get("saved", ()) if ctx_obj is not None else ()
        certain = all(t.certain for t in tensors)
        node = self.run_state.graph.add(
            op=f"{ref.node.name}.apply", site=call, parents=frozenset().union(*(t.grad_fn for t in tensors)),
            parents_certain=certain, saves=saved, saves_certain=bool(saved), iteration=self.iteration(),
            line_desc=self.text(call), leaves=torch_api.leaf_storages(tensors, state),
            pattern="".join(torch_api.pattern_char(v) for v in inputs), partial=unknown,
        )
        return _as_results(output, node.nid, needs_grad, certain and needs_grad is True)

    def ctx_method(self, ctx: HeapRef, name: str, args: list[Value], call: ast.Call, state: State) -> Value:
        """``ctx.save_for_backward(*tensors)`` records them at their versions (an inference tensor
        cannot be saved: a saved event); the other methods of ``ctx`` change nothing followed here."""
        if name == "save_for_backward":
            exprs: list[ast.expr | None] = list(call.args)
            refs: list[SavedRef] = []
            for index, value in enumerate(args):
                expr = exprs[index] if index < len(exprs) else None
                if not isinstance(value, TensorVal):
                    continue
                if value.storage is not None:
                    refs.append(SavedRef(value.storage, max(state.version_of(value.storage)), "input",
                                         self.text(expr)))
                if value.inference:
                    self.emit(SavedEvent(stmt=self.current_stmt(), state=state, site=call, tensor=value,
                                         tensor_expr=expr, op="save_for_backward"))
            obj = state.heap_write(ctx.oid)
            obj.extra["saved"] = (*obj.extra.get("saved", ()), *refs)
            obj.attrs["saved_tensors"] = TupleVal(tuple(args))
            return NONE
        if name in _CTX_NO_EFFECT:
            return NONE
        return UNKNOWN


def _as_results(output: Value, nid: int, needs_grad: bool | None, certain: bool) -> Value:
    """The forward's outputs as results of the node (a tensor, or the tensors of a tuple)."""
    if isinstance(output, TensorVal):
        return replace(output, requires_grad=needs_grad, leaf=False if needs_grad else None,
                       grad_fn=frozenset({nid}), certain=certain, why="", why_site=None, opaque=False)
    if isinstance(output, TupleVal):
        return TupleVal(tuple(_as_results(item, nid, needs_grad, certain) for item in output.items))
    return output
