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
The backward is not run here (torch runs it at ``loss.backward()``).

What the rules read of a Function comes from these runs too: every run of forward tells
them (``FunctionForwardEvent``) its inputs, its output and what it stored and saved on the
ctx. A forward nothing in the file applies (a library of custom ops) runs as a unit of its
own with abstract inputs; an ``apply`` given a value the engine does not know runs forward
once more, quietly, with an abstract input there. backward runs as a unit with a ctx and
its gradient tensors (``start_backward``; ``FunctionBackwardEvent``).
"""

from __future__ import annotations

import ast

from graphlife.analysis import torch_api
from graphlife.analysis.engine.core import EngineCore
from graphlife.analysis.events import CtxSave, CtxStore, FunctionBackwardEvent, FunctionForwardEvent, SavedEvent
from graphlife.analysis.semantics.names import scope_nodes
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
    """``Function.apply``, forward run alone, and the methods of its ``ctx``."""

    def apply_autograd_function(self, ref: ClassRef, args: list[Value], kwargs: dict[str, Value], state: State,
                                call: ast.Call) -> Value:
        forward = self.find_method(ref, "forward", state)
        if forward is None:
            self.unseen_call([*args, *kwargs.values()], state)
            return UNKNOWN
        before = state.copy() if any(value is UNKNOWN for value in [*args, *kwargs.values()]) else None
        ctx, output, event = self._forward_event(ref, forward, args, kwargs, state, call, alone=False)
        self.emit(event)
        if before is not None and _kept_unknowns(event):
            self._probe_forward(ref, forward, args, kwargs, before, call)
        return self._function_node(ref, ctx, [*args, *kwargs.values()], output, state, call)

    def _probe_forward(self, ref: ClassRef, forward: ast.FunctionDef | ast.AsyncFunctionDef, args: list[Value],
                       kwargs: dict[str, Value], state: State, call: ast.Call) -> None:
        """Forward once more, for the rules only, with an abstract input (:meth:`_abstract_inputs`)
        for each argument the engine does not know: what forward does with it shows what it is
        (``x.t()`` on a weight from a library module). Quiet, on a copy of the state before the
        program's run: that run, with the values given, is what the caller gets. Only when that run
        kept on the ctx a value the engine does not know: else the rules would learn nothing more."""
        abstract = self._abstract_inputs(ref, forward, state)
        names = _input_names(forward, self.find_method(ref, "setup_context", state) is not None)
        probe_args = [abstract[i] if value is UNKNOWN and i < len(abstract) else value for i, value in enumerate(args)]
        probe_kwargs = {name: abstract[names.index(name)] if value is UNKNOWN and name in names else value
                        for name, value in kwargs.items()}
        probe = state
        run = self.run_state
        path_ends = run.path_ends
        with self.quiet():
            event = self._forward_event(ref, forward, probe_args, probe_kwargs, probe, call, alone=False)[2]
        run.path_ends = path_ends
        self.emit(event)

    def run_forward_alone(self, ref: ClassRef, forward: ast.FunctionDef | ast.AsyncFunctionDef,
                          state: State) -> None:
        """Forward of a Function nothing in the file applies (a library of custom ops), run as
        ``apply`` would run it, with abstract inputs (:meth:`_abstract_inputs`)."""
        self._run_forward(ref, forward, self._abstract_inputs(ref, forward, state), {}, state, forward, alone=True)

    def _abstract_inputs(self, ref: ClassRef, forward: ast.FunctionDef | ast.AsyncFunctionDef,
                         state: State) -> list[Value]:
        """One value per input of forward, for a run without the caller's values: a parameter with
        a non-tensor annotation or default is unknown; one annotated ``Tensor`` is a tensor; any
        other may be a tensor (opaque, without graph: forward runs under ``no_grad``) until the run
        uses it as one (:func:`torch_api.note_tensor_use`)."""
        params = _call_params(forward)
        inputs = params if self.find_method(ref, "setup_context", state) is not None else params[1:]
        defaults = dict(zip(reversed([p.arg for p in params]), reversed(forward.args.defaults)))
        backward = self.find_method(ref, "backward", state)
        graded: set[int] = set()
        if backward is not None and not forward.args.vararg:
            self.touch(backward)  # what forward's inputs are depends on backward's code
            graded = _graded_inputs(backward, len(inputs))
        args: list[Value] = []
        for index, param in enumerate(inputs):
            if _not_a_tensor(param, defaults.get(param.arg)):
                args.append(UNKNOWN)
            else:
                known = _annotated_tensor(param) or index in graded
                args.append(TensorVal(requires_grad=None, leaf=None, storage=self.fresh(), origin=param,
                                      desc=param.arg, opaque=not known))
        return args

    def _run_forward(self, ref: ClassRef, forward: ast.FunctionDef | ast.AsyncFunctionDef, args: list[Value],
                     kwargs: dict[str, Value], state: State, site: ast.AST, *, alone: bool) -> tuple[HeapRef, Value]:
        """Forward (and ``setup_context``) with gradients off and a fresh ctx; what the run kept on
        the ctx is told to the rules (:class:`FunctionForwardEvent`)."""
        ctx, output, event = self._forward_event(ref, forward, args, kwargs, state, site, alone=alone)
        self.emit(event)
        return ctx, output

    def _forward_event(self, ref: ClassRef, forward: ast.FunctionDef | ast.AsyncFunctionDef, args: list[Value],
                       kwargs: dict[str, Value], state: State, site: ast.AST, *,
                       alone: bool) -> tuple[HeapRef, Value, FunctionForwardEvent]:
        """Run forward (and ``setup_context``) as ``apply`` does; the ctx, the output, and the event
        that tells the rules what the run kept on the ctx."""
        ctx = self.new_object(state, "autograd_ctx", site, cls=ref.node.name)
        state.heap[ctx.oid].extra.update(saved=(), ctx_stores=(), ctx_saves=())
        setup = self.find_method(ref, "setup_context", state)
        grad, assumed, inference = state.grad_enabled, state.grad_assumed, state.inference_mode
        state.grad_enabled, state.grad_assumed = False, False  # torch runs forward under no_grad
        try:
            if setup is not None:
                output = self.call_function(FunctionRef(node=forward, key=id(forward)), args, kwargs, state, site)
                self.call_function(FunctionRef(node=setup, key=id(setup)), [ctx, TupleVal(tuple(args)), output], {},
                                   state, site)
            else:
                output = self.call_function(FunctionRef(node=forward, key=id(forward)), [ctx, *args], kwargs, state,
                                            site)
        finally:
            state.grad_enabled, state.grad_assumed, state.inference_mode = grad, assumed, inference
        obj = state.heap.get(ctx.oid)
        names = _input_names(forward, setup is not None)
        inputs = tuple(zip(names, args))
        inputs += tuple((name, value) for name, value in kwargs.items() if name in names)
        event = FunctionForwardEvent(
            stmt=self.current_stmt(), state=state, function=ref.node, forward=forward, setup_context=setup,
            inputs=inputs, output=output, stores=obj.extra.get("ctx_stores", ()) if obj is not None else (),
            saves=obj.extra.get("ctx_saves", ()) if obj is not None else (), alone=alone,
        )
        return ctx, output, event

    def start_backward(self, ref: ClassRef, backward: ast.FunctionDef | ast.AsyncFunctionDef, state: State) -> None:
        """Before backward runs alone: its ctx is a ctx, each gradient parameter a tensor without
        graph (torch hands it the gradients of forward's outputs), ``*grads`` a list of such."""
        params = _call_params(backward)
        if not params:
            return
        site = backward
        state.env[params[0].arg] = self.new_object(state, "autograd_ctx", site, cls=ref.node.name)
        grads: list[tuple[str, TensorVal]] = []
        for param in params[1:]:
            grad = TensorVal(requires_grad=False, leaf=True, storage=self.fresh(), origin=param, desc=param.arg)
            state.env[param.arg] = grad
            grads.append((param.arg, grad))
        star = backward.args.vararg.arg if backward.args.vararg else None
        if star is not None:
            grad = TensorVal(requires_grad=False, leaf=True, storage=self.fresh(), origin=backward.args.vararg,
                             desc=star)
            items = self.new_list(state, (), site, literal=False)
            state.heap[items.oid].elem = grad
            state.env[star] = items
            grads.append((star, grad))
        self.emit(FunctionBackwardEvent(stmt=backward, state=state, function=ref.node, backward=backward,
                                        grads=tuple(grads), star=star))

    def note_ctx_store(self, ctx: HeapRef, target: ast.Attribute, value: Value, state: State) -> None:
        """``ctx.attr = value``: kept on the ctx for the rules (:class:`FunctionForwardEvent`)."""
        obj = state.heap_write(ctx.oid)
        store = CtxStore(attr=target.attr, value=value, target=target, stmt=self.current_stmt())
        obj.extra["ctx_stores"] = (*obj.extra.get("ctx_stores", ()), store)

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
            for value in args:
                torch_api.note_tensor_use(self, value)  # torch saves tensors (and None) only
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
            starred = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))
            save = CtxSave(call=call, values=tuple(args[:starred]), stmt=self.current_stmt())
            obj.extra["ctx_saves"] = (*obj.extra.get("ctx_saves", ()), save)
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


def _kept_unknowns(event: FunctionForwardEvent) -> bool:
    """Did forward store or save on the ctx a value the engine does not know?"""
    return any(store.value is UNKNOWN for store in event.stores) or any(
        value is UNKNOWN for save in event.saves for value in save.values)


def _input_names(forward: ast.FunctionDef | ast.AsyncFunctionDef, setup_context_style: bool) -> list[str]:
    """The names of forward's inputs (after the ctx, unless ``setup_context`` takes it)."""
    params = [p.arg for p in _call_params(forward)]
    return params if setup_context_style else params[1:]


def _call_params(method: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    """The parameters ``apply`` fills: all of a static method's, all but ``cls`` of a class method's."""
    params = [*method.args.posonlyargs, *method.args.args]
    classmethod_ = any(isinstance(d, ast.Name) and d.id == "classmethod" for d in method.decorator_list)
    return params[1:] if classmethod_ else params


def _graded_inputs(backward: ast.FunctionDef | ast.AsyncFunctionDef, inputs: int) -> set[int]:
    """The inputs backward returns a gradient (not ``None``) for, in a ``return`` of one value per
    input: torch accepts a gradient only for an input that is a tensor (else it raises "returned
    a gradient different than None at position ..., but the corresponding forward input was not
    a Variable"), so a Function that works is given tensors there."""
    graded: set[int] = set()
    for node in scope_nodes(backward.body):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        if len(values) != inputs or any(isinstance(v, ast.Starred) for v in values):
            continue
        graded.update(i for i, v in enumerate(values) if not (isinstance(v, ast.Constant) and v.value is None))
    return graded


def _annotation_name(param: ast.arg) -> str | None:
    """The last part of a parameter's annotation (``Tensor`` for ``torch.Tensor`` or ``"torch.Tensor"``)."""
    annotation = param.annotation
    if isinstance(annotation, ast.Attribute):
        return annotation.attr
    if isinstance(annotation, ast.Name):
        return annotation.id
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.rsplit(".", 1)[-1]
    return None


def _annotated_tensor(param: ast.arg) -> bool:
    return _annotation_name(param) == "Tensor"


def _not_a_tensor(param: ast.arg, default: ast.expr | None) -> bool:
    """The author says the parameter is no tensor: an annotation other than ``Tensor`` (a union
    too), or a default that is a number, string, bool or container (``None`` says nothing)."""
    if param.annotation is not None and not _annotated_tensor(param):
        return True
    if isinstance(default, ast.Constant):
        return default.value is not None and default.value is not Ellipsis
    if isinstance(default, ast.UnaryOp):
        return isinstance(default.operand, ast.Constant) and isinstance(default.operand.value, (int, float, complex))
    return isinstance(default, (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.JoinedStr))
