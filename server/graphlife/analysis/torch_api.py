"""What torch calls do to abstract values: ops, modules, optimizers, grad modes.

Which op saves what comes from the measured table (:mod:`optable`); this module
adds the semantics the table cannot hold: factories and ``requires_grad=``,
conversions (``.to``/``.double``), leaves and parameters, modules built in
``__init__``, optimizers and their ``step()``, backward calls, grad-mode
context managers. Anything not known gives :data:`UNKNOWN` or a tensor whose
facts are "maybe": never the basis of an error.
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

from graphlife.analysis import (
    checkpoint_regions,
    constants,
    distributions,
    growth,
    library_models,
    module_tree,
    namedtuples,
    op_arguments,
    optable,
)
from graphlife.analysis import no_graph_reasons as reasons
from graphlife.analysis.engine_api import TorchEngine
from graphlife.analysis.events import (
    BackwardEvent,
    GradReadEvent,
    GradShareEvent,
    InplaceEvent,
    NumpyEvent,
    OptimizerEvent,
    RequiresGradEvent,
    SavedEvent,
    StepEvent,
    StoreEvent,
    ZeroGradEvent,
)
from graphlife.analysis.grad_hooks import BackwardReach
from graphlife.analysis.state import SavedRef, State
from graphlife.analysis.unseen_writes import MUTATING_METHODS, weaken_object
from graphlife.analysis.values import (
    INEXACT_ITEMS,
    NONE,
    UNKNOWN,
    BoundMethod,
    ContextVal,
    FunctionRef,
    HeapObject,
    HeapRef,
    NoneValue,
    Number,
    QualName,
    TensorVal,
    Tri,
    TupleVal,
    Unknown,
    Value,
    ValuesIndices,
    replace,
)

AUG_OPS = {
    ast.Add: "__iadd__", ast.Sub: "__isub__", ast.Mult: "__imul__", ast.Div: "__itruediv__",
    ast.Pow: "__ipow__", ast.MatMult: "__imatmul__", ast.FloorDiv: "__ifloordiv__", ast.Mod: "__imod__",
    ast.BitAnd: "__iand__", ast.BitOr: "__ior__",
}
BIN_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.Pow: "pow",
    ast.MatMult: "matmul", ast.FloorDiv: "floordiv", ast.Mod: "mod",
}
FACTORIES = {
    "randn", "rand", "zeros", "ones", "empty", "full", "tensor", "arange", "linspace", "eye", "randint",
    "randperm", "as_tensor", "from_numpy", "zeros_like", "ones_like", "randn_like", "rand_like", "empty_like",
    "full_like", "normal", "logspace", "Tensor", "FloatTensor", "LongTensor",
}
CONVERSIONS = {"to", "cuda", "cpu", "double", "float", "half", "bfloat16", "type", "long", "int", "bool"}
#: NumPy functions that turn a tensor into an array (through ``Tensor.__array__``, i.e. ``.numpy()``).
NUMPY_CONVERSIONS = frozenset({"numpy.array", "numpy.asarray", "numpy.asanyarray"})
NUMBER_METHODS = {
    "item", "tolist", "numpy", "__float__", "__int__", "dim", "size", "numel", "nelement", "ndimension", "element_size",
    "is_contiguous", "data_ptr", "get_device", "stride",
}
GRAD_CONTEXTS = {
    "torch.no_grad": ("no_grad", False),
    "torch.enable_grad": ("enable_grad", True),
    "torch.inference_mode": ("inference_mode", False),
    "torch.set_grad_enabled": ("set_grad_enabled", None),
    "torch.autograd.no_grad": ("no_grad", False),
    "torch.autograd.grad_mode.no_grad": ("no_grad", False),
}
DTYPES = {
    "torch.float64": "float64", "torch.double": "float64", "torch.float32": "float32", "torch.float": "float32",
    "torch.float16": "float16", "torch.half": "float16", "torch.bfloat16": "bfloat16",
}
RNN_OUTPUTS = {
    "nn.LSTM": "lstm", "nn.GRU": "rnn", "nn.RNN": "rnn", "nn.LSTMCell": "lstmcell", "nn.GRUCell": "cell",
    "nn.RNNCell": "cell",
}
CONTAINERS = {"nn.Sequential", "nn.ModuleList", "nn.ModuleDict", "nn.ParameterList"}
#: An ``nn.Sequential`` grown by ``add_module`` is followed child by child up to this many.
MAX_SEQUENTIAL_CHILDREN = 16
#: Containers whose constructor takes the modules as separate arguments: ``nn.Sequential(*blocks)``
#: is the container built from the list ``blocks``, whatever its length.
STARRED_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.modules.container.Sequential"})
#: The ``extra`` key of a list (or container module) built by ``[Block() for _ in range(n)]``:
#: at least one instance of one class, its ``elem``.
REPEATED_BLOCKS = "repeated_blocks"
#: Methods every nn.Module has (the engine models these; other unknown attributes are unknown values).
MODULE_METHODS = {
    "parameters", "named_parameters", "train", "eval", "to", "cuda", "cpu", "double", "float", "half", "apply",
    "requires_grad_", "zero_grad", "share_memory", "forward", "children", "modules", "state_dict",
    "load_state_dict", "register_buffer", "add_module", "register_forward_hook", "named_modules", "buffers",
}


def canonical(name: str) -> str:
    """Normalize import spellings: ``torch.nn.modules.linear.Linear`` stays; aliases folded."""
    return name.replace("torch.nn.modules.module.", "torch.nn.")


@functools.cache
def table_key(name: str) -> str:
    """The op table's key of a qualified name (asked at every library call: kept per name, as the
    op table's own lookups are; the names are those the checked code spells)."""
    return optable.normalize_key(canonical(name))


_BUILTINS = frozenset(dir(builtins))


def is_builtin(name: str) -> bool:
    """Is ``name`` one of Python's builtins?"""
    return name in _BUILTINS


def builtin_name(name: str) -> Value:
    """A name bound nowhere the engine can see: a builtin (``len``, ``zip``), or a global
    set where it cannot look (a ``global`` statement in another function, ``exec``, another
    cell, a block left out for a syntax error). Only the former is known; the latter may
    well be a tensor with a graph, so it is unknown."""
    return QualName(f"builtins.{name}") if name in _BUILTINS else UNKNOWN


# -- tensors ----------------------------------------------------------------------------


def may_carry_graph(value: Value) -> bool:
    """A value that is not a known tensor but could be one (anything we could not interpret).

    Only tensors, Python numbers, None and our own containers are known; everything else
    (an unknown call's result, an attribute we could not resolve) might be a tensor that
    requires grad, so it can never be the basis of "this has no graph".
    """
    return not isinstance(value, (TensorVal, Number, NoneValue, TupleVal, HeapRef, QualName, ContextVal))



def graph_left_out(args: list[Value], kwargs: dict[str, Value], positional_used: int, table: optable.OpInfo,
                   state: State) -> bool:
    """An argument the op table's inputs did not take may carry a graph.

    The table lists an op's tensor inputs (``scatter_add_(self, index, src)``) while the call
    also passes non-tensors among them (``x.scatter_add_(0, idx, src)``): matched by position,
    ``src`` falls off the end. Then whether the result requires grad cannot be read from the
    table's inputs, and the caller uses the generic op over every tensor argument instead."""
    rest = list(args[positional_used:]) + [value for name, value in kwargs.items()
                                           if name not in table.inputs and name != "out"]
    return any(tensor_may_need_grad(value) for value in flatten_tensor_args(rest, state))


def tensor_may_need_grad(value: Value) -> bool:
    """A tensor that requires grad, or may (unknown), or a value that may be such a tensor."""
    if isinstance(value, TensorVal):
        return value.requires_grad is not False
    return may_carry_graph(value)


_GRAD_CHARS: dict[bool | None, str] = {True: "1", False: "0", None: "?"}


def pattern_char(value: Value) -> str:
    if isinstance(value, TensorVal):
        return _GRAD_CHARS[value.requires_grad]
    if isinstance(value, Number):
        return "s"
    return "?"


def note_tensor_use(interp: TorchEngine, value: Value) -> None:
    """``value`` is used where only a tensor works (a tensor method or attribute, the tensor argument
    of a torch op, ``@``, ``save_for_backward``). For a value that may not be a tensor (``opaque``:
    an input of a custom Function analyzed without its callers), that proves it is one: had it
    not been, torch would have raised there. Noted for the run (``RuleContext.is_tensor`` reads it)."""
    if isinstance(value, TensorVal) and value.opaque and value.storage is not None:
        interp.run_state.tensor_uses.add(value.storage)


def tensors_in(value: Value, state: State, depth: int = 0) -> Iterable[TensorVal]:
    """Every tensor inside a value: tuples, lists, dicts, objects (bounded)."""
    if depth > 3:
        return
    if isinstance(value, TensorVal):
        yield value
    elif isinstance(value, TupleVal):
        for item in value.items:
            yield from tensors_in(item, state, depth + 1)
    elif isinstance(value, HeapRef):
        obj = state.heap.get(value.oid)
        if obj is None or obj.kind in ("module", "optimizer"):
            return
        if obj.elem is not None:
            yield from tensors_in(obj.elem, state, depth + 1)
        for attr in obj.attrs.values():
            yield from tensors_in(attr, state, depth + 1)


def apply_op(
    interp: TorchEngine, state: State, key: str, inputs: list[Value], input_exprs: list[ast.expr | None], site: ast.AST,
    *, info: optable.OpInfo | None = None,
) -> Value:
    """A differentiable op on abstract inputs: result facts, a graph node, what it saves."""
    info = info if info is not None else optable.lookup(key)
    tensors: list[TensorVal] = []
    any_unknown = False
    # One pass over the inputs (this runs for nearly every op of the file): the tensors, whether
    # one requires grad or all certainly do not, and the pattern of the op table's saved cases.
    some_grad = False
    all_without = True
    chars: list[str] = []
    for value in inputs:
        if type(value) is TensorVal:
            tensors.append(value)
            requires = value.requires_grad
            if requires:
                some_grad = True
            elif requires is not False:
                all_without = False
            chars.append(_GRAD_CHARS[requires])
        else:
            chars.append("s" if type(value) is Number else "?")
            if not any_unknown and may_carry_graph(value):
                any_unknown = True
    if info is not None and not info.returns_tensor:
        return Number(None)
    if not tensors and not any_unknown:
        if info is None:
            return UNKNOWN
        return TensorVal(requires_grad=False, leaf=True, storage=interp.fresh(), origin=site)
    needs_grad: bool | None
    if some_grad:
        needs_grad = True
    elif all_without and not any_unknown:
        needs_grad = False
    else:
        needs_grad = None
    if info is not None and not info.differentiable:
        needs_grad = False
    if state.grad_enabled is False:
        needs_grad = False
    elif state.grad_enabled is None and needs_grad:
        needs_grad = None
    first = tensors[0] if tensors else None
    storage = first.storage if (info is not None and info.view and first is not None) else interp.fresh()
    inference = True if state.inference_mode is True else (False if state.inference_mode is False else None)
    if info is not None and info.view and first is not None and first.inference:
        inference = True  # a view of an inference tensor is one too
    desc = interp.text(site)
    if needs_grad is False:
        why, why_site = _why_no_graph(interp, state, key, info, tensors, site)
        return TensorVal(requires_grad=False, leaf=True, storage=storage, inference=inference, origin=site,
                         desc=desc, why=why, why_site=why_site)
    if len(tensors) == 1:
        parents = tensors[0].grad_fn
    else:
        parents = frozenset().union(*[t.grad_fn for t in tensors]) if tensors else frozenset()
    # Unknown inputs may add edges, but never remove the known ones: the known parents stay certain.
    parents_certain = all(t.certain for t in tensors)
    saves: list[SavedRef] = []
    saves_certain = False
    pattern = "".join(chars)
    if info is not None and len(info.inputs) == len(inputs) and needs_grad:
        cases = info.saved_for_all(pattern)
        if cases:
            saves_certain = all(c.saves_anything for c in cases)
            saves.extend(saved_inputs(interp, state, cases, inputs, input_exprs, site, key))
            if all(c.result for c in cases) and storage is not None:
                saves.append(SavedRef(storage, max(state.version_of(storage)), "result", desc))
    node = interp.run_state.graph.add(
        op=key, site=site, parents=parents, parents_certain=parents_certain, saves=tuple(saves),
        saves_certain=saves_certain, iteration=interp.iteration(), line_desc=desc,
        leaves=leaf_storages(tensors, state), pattern=pattern,
        partial=any_unknown,
    )
    # The node itself certainly exists when the result certainly requires grad, whatever its inputs:
    # `certain` says the value's graph starts at exactly this node; how sure its edges are is the
    # node's `parents_certain` (an unknown batch from a loader makes the edges, not the node, unsure).
    return TensorVal(requires_grad=needs_grad, leaf=False, grad_fn=frozenset({node.nid}), certain=needs_grad is True,
                     storage=storage, inference=inference, origin=site, desc=desc)


def gradients_off_reason(interp: TorchEngine, state: State) -> str:
    """Why gradients are off here: a ``no_grad`` or ``inference_mode`` block, or a backward hook
    (torch runs hooks with gradients off unless the backward creates a graph)."""
    if interp.run_state.hooks_without_grad and not state.inference_mode:
        return reasons.IN_BACKWARD_HOOK()
    mode = "torch.inference_mode()" if state.inference_mode else "torch.no_grad()"
    return reasons.GRADIENTS_DISABLED(mode=mode)


def _why_no_graph(interp: TorchEngine, state: State, key: str, info: optable.OpInfo | None, tensors: list[TensorVal],
                  site: ast.AST) -> tuple[str, ast.AST | None]:
    """Why an op's result has no graph (for GL104's messages), and where that was decided."""
    if state.grad_enabled is False:
        return gradients_off_reason(interp, state), interp.current_stmt()
    if info is not None and not info.differentiable:
        return reasons.NOT_DIFFERENTIABLE(op=key.split('.')[-1]), site
    source = next((t for t in tensors if t.why), None)
    if source is not None:
        return source.why, source.why_site
    return reasons.BUILT_FROM_NO_GRAD(), site


def param_storages(tensor: TensorVal, state: State) -> frozenset[int]:
    """The storages a leaf stands for: its own, or all of its module's when it came from .parameters()."""
    if tensor.storage is not None:
        return frozenset({tensor.storage})
    if tensor.owner is not None and tensor.owner in state.heap:
        return module_params(state, HeapRef(tensor.owner))[0]
    return frozenset()


_NO_STORAGES: frozenset[int] = frozenset()


def leaf_storages(tensors: list[TensorVal], state: State) -> frozenset[int]:
    out: set[int] | None = None  # most ops take no leaf that requires grad: no set made then
    for tensor in tensors:
        if tensor.leaf is True and tensor.requires_grad:
            if out is None:
                out = set()
            out |= param_storages(tensor, state)
    return frozenset(out) if out else _NO_STORAGES


def saved_inputs(interp: TorchEngine, state: State, cases: tuple[optable.SavedCase, ...], inputs: list[Value],
                 exprs: list[ast.expr | None], site: ast.AST, key: str) -> list[SavedRef]:
    """The inputs every possible case saves, at their current versions; an inference tensor among
    them is a ``saved`` event (torch refuses to save it)."""
    refs: list[SavedRef] = []
    for index in sorted(set.intersection(*(set(c.saved) for c in cases))):
        value = inputs[index]
        expr = exprs[index] if index < len(exprs) else None
        if not isinstance(value, TensorVal):
            continue
        if value.storage is not None:
            refs.append(SavedRef(value.storage, max(state.version_of(value.storage)), "input", interp.text(expr)))
        if value.inference:
            interp.emit(SavedEvent(stmt=interp.current_stmt(), state=state, site=site, tensor=value,
                                            tensor_expr=expr, op=key))
    return refs


def apply_inplace(
    interp: TorchEngine, state: State, key: str, target: TensorVal, target_expr: ast.expr | None,
    args: list[Value], site: ast.AST, *, construction: ast.AST | None = None, info: optable.OpInfo | None = None,
    inplace_cases: bool = False, report_at_construction: bool = False,
) -> Value:
    """An in-place change of ``target``: event, version bump, and the node of the in-place op."""
    stmt = interp.current_stmt()
    interp.emit(InplaceEvent(stmt=stmt, state=state, site=site, target=target, target_expr=target_expr,
                                        op=key, construction=construction, via_data=target.via_data))
    if target.storage is not None and not target.via_data:
        state.bump(target.storage, construction if (report_at_construction and construction is not None) else stmt)
    if target.via_data:
        for storage in param_storages(target, state):
            change = (len(interp.run_state.graph.nodes), stmt)
            state.writable("data_bumps")[storage] = (*state.data_bumps.get(storage, ()), change)
    if target.grad_of and key in ("Tensor.zero_", "Tensor.mul_", "Tensor.fill_"):
        zero_grads(interp, state, target.grad_of, site, set_to_none=False)
    info = info if info is not None else optable.lookup(key)
    inputs = [target, *args]
    tensors = [v for v in inputs if isinstance(v, TensorVal)]
    grads = [t.requires_grad for t in tensors]
    if state.grad_enabled is False or (all(g is False for g in grads) and not any(may_carry_graph(v) for v in inputs)):
        return target
    needs = True if any(grads) else None
    parents = frozenset().union(*(t.grad_fn for t in tensors))
    saves: list[SavedRef] = []
    saves_certain = False
    if info is not None and needs and len(info.inputs) == len(inputs):
        pattern = "".join(pattern_char(v) for v in inputs)
        cases: tuple[optable.SavedCase, ...] | None
        if inplace_cases:
            case = info.inplace_saved_for(pattern)
            cases = (case,) if case is not None else None
        else:
            cases = info.saved_for_all(pattern)
        if cases:
            saves_certain = all(c.saves_anything for c in cases)
            if all(c.result for c in cases) and target.storage is not None:
                version = max(state.version_of(target.storage))
                saves.append(SavedRef(target.storage, version, "result", interp.text(target_expr)))
            for index in sorted(set.intersection(*(set(c.saved) for c in cases))):
                value = inputs[index]
                if index > 0 and isinstance(value, TensorVal) and value.storage is not None:
                    saves.append(SavedRef(value.storage, max(state.version_of(value.storage)), "input", ""))
    node = interp.run_state.graph.add(
        op=key, site=site, parents=parents, parents_certain=all(t.certain for t in tensors), saves=tuple(saves),
        saves_certain=saves_certain, iteration=interp.iteration(), line_desc=interp.text(site),
        leaves=leaf_storages(tensors, state), pattern="".join(pattern_char(v) for v in inputs),
    )
    result = replace(target, requires_grad=needs, leaf=False if needs else None, grad_fn=frozenset({node.nid}),
                     certain=target.certain and needs is True)
    if result.requires_grad != target.requires_grad:
        spread_inplace(interp, state, target, target_expr, result)
    note_growth(interp, state, target_expr, target, result, desc=interp.text(site))
    return result


def note_growth(interp: TorchEngine, state: State, place: ast.expr | None, old: Value | None, new: Value, *,
                desc: str = "") -> None:
    """A write whose new value chains, by arithmetic, the graph the place held in an earlier
    iteration (`total = total + loss`, `acc.add_(loss)`, `self.total = self.total + loss`) into a
    place that outlives the iteration: the graph grows every iteration, a store the leak rules
    read (:mod:`graphlife.analysis.growth`)."""
    run = interp.run_state
    if not run.loop_stack or place is None or not growth.grows(run.graph, old, new, interp.iteration(),
                                                               interp.current_stmt()):
        return
    if not _outlives_iteration(interp, state, place):
        return
    assert isinstance(new, TensorVal)
    value = replace(new, desc=desc) if desc else new
    interp.emit(StoreEvent(stmt=interp.current_stmt(), state=state, value=value, target=interp.text(place),
                           kind="accumulate", whole=value))


#: A loop over this many known items (a list literal, a model's layers) is part of one computation.
MAX_EXACT_ITEMS = 16


def _outlives_iteration(interp: TorchEngine, state: State, place: ast.expr) -> bool:
    """A name bound before the innermost running loop, in the function that runs it (not a
    parameter of a function the loop calls: a residual `x = x + f(x)` in a layer called once per
    layer is a new local each call), or an attribute of an object made before that loop."""
    run = interp.run_state
    loop = run.loop_stack[-1][0]
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        items = interp.known_items(interp.eval_quiet(loop.iter, state.copy()), state)
        if items is not None and len(items) <= MAX_EXACT_ITEMS:
            return False  # `for b in biases: a += b` over a known few: one computation, bounded
    if isinstance(place, ast.Name):
        at = next((i for i in range(len(run.stmt_stack) - 1, -1, -1) if run.stmt_stack[i] is loop), None)
        if at is None or not run.loop_pre_states:
            return False
        callers = {id(frame.stmt) for frame in run.frames}
        if any(id(stmt) in callers for stmt in run.stmt_stack[at + 1:]):
            return False  # the loop is in a caller
        return place.id in run.loop_pre_states[-1].env
    if isinstance(place, ast.Attribute):
        receiver = interp.eval_quiet(place.value, state)
        if isinstance(receiver, HeapRef) and receiver.oid in state.heap:
            return len(state.heap[receiver.oid].extra.get("born", ())) < len(run.loop_stack)
    return False


def spread_inplace(interp: TorchEngine, state: State, target: TensorVal, target_expr: ast.expr | None,
                   result: TensorVal) -> None:
    """Writing a value with a graph into a tensor without one gives the tensor a graph
    (``out = torch.zeros(n); out[i] = h``: ``out`` now requires grad, through CopySlices).
    Every name and attribute holding that storage (the tensor, its views) sees it."""
    if target.storage is None:
        rebind(interp, state, target_expr, result)
        return
    fields = {"requires_grad": result.requires_grad, "leaf": result.leaf, "certain": result.certain}
    for name, value in list(state.env.items()):
        if isinstance(value, TensorVal) and value.storage == target.storage:
            state.env[name] = replace(value, grad_fn=value.grad_fn | result.grad_fn, **fields)
    for oid, obj in list(state.heap.items()):
        hits = [key for key, value in obj.attrs.items()
                if isinstance(value, TensorVal) and value.storage == target.storage]
        if hits:
            writable = state.heap_write(oid)
            for key in hits:
                held = writable.attrs[key]
                if isinstance(held, TensorVal):
                    writable.attrs[key] = replace(held, grad_fn=held.grad_fn | result.grad_fn, **fields)


def binop(interp: TorchEngine, state: State, op: ast.operator, left: Value, right: Value, site: ast.AST,
          left_expr: ast.expr | None, right_expr: ast.expr | None) -> Value:
    """``left op right``; inside a checkpointed function, a number keeps its operands' sources
    that the recomputation does not replay (:mod:`graphlife.analysis.checkpoint_regions`)."""
    result = _binop(interp, state, op, left, right, site, left_expr, right_expr)
    if interp.run_state.checkpoints:
        return checkpoint_regions.carry(result, (left, right))
    return result


def _binop(interp: TorchEngine, state: State, op: ast.operator, left: Value, right: Value, site: ast.AST,
           left_expr: ast.expr | None, right_expr: ast.expr | None) -> Value:
    name = BIN_OPS.get(type(op))
    if isinstance(op, ast.MatMult):
        note_tensor_use(interp, left)
        note_tensor_use(interp, right)
    if isinstance(left, TensorVal) and name:
        result = apply_op(interp, state, f"Tensor.__{name}__", [left, right], [left_expr, right_expr], site)
        return mark_scalar(result) if _scalar_operands(left, right) and not isinstance(op, ast.MatMult) else result
    if isinstance(right, TensorVal) and name:
        result = apply_op(interp, state, f"Tensor.__r{name}__", [right, left], [right_expr, left_expr], site)
        return mark_scalar(result) if _scalar_operands(right, left) and not isinstance(op, ast.MatMult) else result
    if isinstance(left, Number) and isinstance(right, Number):
        # Not in a loop: the engine runs a loop's body for the first iteration, then once for all
        # the later ones, so a counter (`step += 1`) must not carry the second iteration's value.
        if left.const is not None and right.const is not None and not interp.run_state.loop_stack:
            folded = constants.fold_binop(op, left.const, right.const)
            if folded is not constants.NOT_FOLDED:
                return Number(folded)
        return Number(None)
    if isinstance(op, ast.Add) and isinstance(left, (HeapRef, TupleVal)) and isinstance(right, (HeapRef, TupleVal)):
        return concatenate(interp, state, left, right, site)
    return UNKNOWN


def _scalar_operands(tensor: TensorVal, other: Value) -> bool:
    """Elementwise arithmetic of a one-element tensor with another one, or with a number."""
    number = isinstance(other, Number) and not isinstance(other.const, str)
    return tensor.scalar and ((isinstance(other, TensorVal) and other.scalar) or number)


#: Methods of a one-element tensor that return a one-element tensor.
_SCALAR_KEEPING_METHODS = {
    "detach", "clone", "float", "double", "half", "cpu", "cuda", "to", "abs", "neg", "exp", "log",
    "sqrt", "sigmoid", "tanh", "relu", "squeeze", "contiguous", "pow", "mul", "div", "add", "sub",
}


def concatenate(interp: TorchEngine, state: State, left: Value, right: Value, site: ast.AST) -> Value:
    """``[a] + items``: a new list holding what both hold."""
    if isinstance(left, TupleVal) and isinstance(right, TupleVal):
        return TupleVal(left.items + right.items)
    left_items, right_items = interp.known_items(left, state), interp.known_items(right, state)
    if left_items is not None and right_items is not None:
        return interp.new_list(state, tuple(left_items + right_items), site, literal=True)
    ref = interp.new_list(state, (), site, literal=False)
    element = None
    for part in (left, right):
        value = interp.iter_element(part, state)
        if value is not UNKNOWN or element is None:
            element = value if element is None else element.join(value)
    state.heap[ref.oid].elem = element
    state.heap[ref.oid].attrs["__parts__"] = TupleVal((left, right))  # each part keeps its own element
    return ref


def make_defaultdict(interp: TorchEngine, state: State, factory: Value | None, call: ast.Call) -> Value:
    """``defaultdict(list)``: a dict whose every value is a list made with it (one abstract list
    stands for them all, so what is appended to ``d[k]`` lives as long as the dict)."""
    ref = interp.new_object(state, "dict", call)
    if isinstance(factory, QualName) and factory.name in ("builtins.list", "builtins.dict"):
        kind = "list" if factory.name == "builtins.list" else "dict"
        state.heap[ref.oid].elem = interp.new_object(state, kind, call)
    elif isinstance(factory, QualName) and factory.name in ("builtins.int", "builtins.float"):
        state.heap[ref.oid].elem = Number(None)
    return ref


def chained(interp: TorchEngine, state: State, parts: list[Value], site: ast.AST) -> HeapRef:
    """``itertools.chain(a, b, ...)`` (and ``filter(f, a)``): a list holding what the parts hold,
    each part keeping its own element (an optimizer given the chained parameters of two models
    steps both)."""
    ref = interp.new_list(state, (), site, literal=False)
    element: Value | None = None
    for part in parts:
        value = interp.iter_element(part, state)
        if value is not UNKNOWN or element is None:
            element = value if element is None else element.join(value)
    state.heap[ref.oid].elem = element
    state.heap[ref.oid].attrs["__parts__"] = TupleVal(tuple(parts))
    return ref


# -- grad modes ----------------------------------------------------------------------------


def enter_context(state: State, ctx: ContextVal) -> None:
    state.grad_assumed = False  # the code sets the mode itself from here
    if ctx.kind == "no_grad":
        state.grad_enabled = False
    elif ctx.kind == "enable_grad":
        state.grad_enabled = True
    elif ctx.kind == "inference_mode":
        if ctx.enabled is not False:
            state.grad_enabled = False
            state.inference_mode = True
    elif ctx.kind == "set_grad_enabled":
        state.grad_enabled = ctx.enabled


# -- attributes ----------------------------------------------------------------------------


#: Attributes that, read on a value, show it is a tensor (arrays have a ``shape`` and a ``dtype`` too,
#: but no ``device``, ``grad_fn`` or ``requires_grad``; a tensor method call shows it as well).
_TENSOR_ONLY_ATTRIBUTES = frozenset(
    {"shape", "device", "dtype", "ndim", "grad_fn", "is_cuda", "_version", "requires_grad", "is_leaf", "T", "mT"}
)


#: Tensor methods that other objects a custom Function is given have too: a module (``to``,
#: ``cuda``, ``float``, ``type``, ``requires_grad_``), a process group (``size``). Calling one
#: does not show the receiver is a tensor.
_METHODS_NOT_ONLY_OF_TENSORS = frozenset(
    {"size", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "requires_grad_", "zero_",
     "share_memory_", "apply", "register_hook"}
)


def tensor_attribute(interp: TorchEngine, state: State, tensor: TensorVal, expr: ast.Attribute) -> Value:
    attr = expr.attr
    if attr == "data":
        return replace(tensor, requires_grad=False, leaf=True, grad_fn=frozenset(), via_data=True,
                       desc=interp.text(expr))
    if attr == "grad":
        interp.emit(GradReadEvent(stmt=interp.current_stmt(), state=state, tensor=tensor, expr=expr))
        if tensor.leaf and grads_set_to_none(state, param_storages(tensor, state)):
            return NONE  # `zero_grad()` set it to None on every path, and no backward filled it since
        # After a backward with create_graph=True, a .grad has a graph of its own.
        run = interp.run_state
        run.create_graph_read = True
        grad_needs = None if run.create_graph_seen else False
        grad = TensorVal(requires_grad=grad_needs, leaf=True if grad_needs is False else None, storage=None,
                         origin=expr, desc=interp.text(expr),
                         grad_of=param_storages(tensor, state) if tensor.leaf else frozenset(),
                         why=reasons.A_GRAD(), why_site=expr)
        return replace(grad.join(NONE), grad_of=grad.grad_of)
    if attr in ("T", "mT", "H", "mH"):
        return apply_op(interp, state, f"Tensor.{attr}", [tensor], [expr.value], expr)
    if attr in ("requires_grad", "is_leaf"):
        value = tensor.requires_grad if attr == "requires_grad" else tensor.leaf
        return Number(value)
    if attr == "values" and not tensor.opaque:
        return tensor  # torch.max(dim=...).values: the differentiable part
    if attr == "indices":
        return TensorVal(requires_grad=False, leaf=True, storage=interp.fresh(), origin=expr)
    if attr in _TENSOR_ONLY_ATTRIBUTES:
        note_tensor_use(interp, tensor)
    if attr in ("shape", "device", "dtype", "ndim", "grad_fn", "is_cuda", "_version", "real", "imag"):
        return Number(None) if attr != "grad_fn" else UNKNOWN
    return BoundMethod(tensor, attr)


def grads_set_to_none(state: State, storages: frozenset[int]) -> bool:
    """Is the ``.grad`` of each of these leaves None on every path (``zero_grad()`` set it so and
    no backward or assignment filled it since)?"""
    return bool(storages) and all(
        (status := state.grads.get(storage)) is not None and status[0] == "zeroed_none" for storage in storages)


def set_requires_grad(interp: TorchEngine, state: State, target: TensorVal, target_expr: ast.expr | None, flag: Tri,
                      form: str, stmt: ast.stmt) -> None:
    interp.emit(RequiresGradEvent(stmt=stmt, state=state, target=target, target_expr=target_expr, flag=flag, form=form))
    if target.leaf is not True:
        return
    updated = replace(target, requires_grad=flag, created_with_grad=stmt if flag else None)
    rebind(interp, state, target_expr, updated)
    if target.owner is not None and target.owner in state.heap:
        # A loop over .parameters() sets every parameter; a single one makes the module "maybe".
        frozen = (not flag) if (flag is not None and interp.run_state.loop_stack) else None
        state.heap_write(target.owner).frozen = frozen
        mark_children_frozen(state, HeapRef(target.owner), frozen)


def rebind(interp: TorchEngine, state: State, expr: ast.expr | None, value: Value) -> None:
    """Give a name (or ``obj.attr``) a new value after a method changed the tensor it names."""
    if isinstance(expr, ast.Name):
        state.env[expr.id] = value
    elif isinstance(expr, ast.Attribute):
        owner = interp.eval_quiet(expr.value, state)
        if isinstance(owner, HeapRef) and owner.oid in state.heap:
            state.heap_write(owner.oid).attrs[expr.attr] = value
    elif isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        owner = interp.eval_quiet(expr.value, state)
        if isinstance(owner, HeapRef) and owner.oid in state.heap:
            obj = state.heap_write(owner.oid)
            obj.attrs[f"[{expr.slice.value!r}]"] = value
            obj.attrs.pop("__items__", None)


# -- calls on names ------------------------------------------------------------------------


def const_bool(value: Value | None) -> bool | None:
    if isinstance(value, Number) and isinstance(value.const, bool):
        return value.const
    if isinstance(value, Number) and isinstance(value.const, int):
        return bool(value.const)
    if value is None:
        return False
    return None


def kwarg_expr(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def call_qualname(interp: TorchEngine, state: State, name: str, args: list[Value], kwargs: dict[str, Value],
                  call: ast.Call) -> Value:
    name = canonical(name)
    if name in GRAD_CONTEXTS:
        kind, enabled = GRAD_CONTEXTS[name]
        if kind == "set_grad_enabled":
            enabled = const_bool(args[0]) if args else None
        if kind == "inference_mode":
            mode = const_bool(args[0]) if args else (const_bool(kwargs["mode"]) if "mode" in kwargs else True)
            return ContextVal(kind, mode)
        return ContextVal(kind, enabled)
    short = name.rsplit(".", 1)[-1]
    if name.startswith("builtins."):
        return call_builtin(interp, state, short, args, kwargs, call)
    if name in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        base = args[0] if args else UNKNOWN
        flag = const_bool(kwargs.get("requires_grad")) if "requires_grad" in kwargs else True
        return TensorVal(requires_grad=flag, leaf=True, storage=interp.fresh(), origin=call, is_param=True,
                         desc=interp.text(call), created_with_grad=call if flag else None,
                         dtype=base.dtype if isinstance(base, TensorVal) else None,
                         device=base.device if isinstance(base, TensorVal) else None)
    if ((name.startswith("torch.optim.") and short[:1].isupper() and "lr_scheduler" not in name)
            or name in library_models.LIBRARY_OPTIMIZERS):
        return make_optimizer(interp, state, args, kwargs, call)
    if name in ("torch.autograd.backward",):
        root = args[0] if args else UNKNOWN
        return do_backward(interp, state, root, call.args[0] if call.args else None, kwargs, call, "backward")
    if name in ("torch.autograd.grad",):
        root = args[0] if args else kwargs.get("outputs", UNKNOWN)
        do_backward(interp, state, root, call.args[0] if call.args else None, kwargs, call, "grad", args=args)
        return UNKNOWN
    if name in ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"):
        return interp.new_object(state, "scaler", call)
    if name.startswith("torch.utils.checkpoint.checkpoint"):
        return call_checkpoint(interp, state, name, args, kwargs, call)
    if distributions.is_distribution_class(name):
        return distributions.make_distribution(interp, state, name, args, kwargs, call)
    if distributions.is_kl_divergence(name):
        return kl_divergence(interp, state, args, call)
    if name in ("torch.autograd.Variable", "torch.autograd.variable.Variable") and args:
        # The removed wrapper: today a new leaf on the same storage (cut from any graph), that
        # requires grad only when asked to; `volatile=` is ignored (no `no_grad` around what follows).
        base = args[0]
        flag = const_bool(kwargs["requires_grad"]) if "requires_grad" in kwargs else False
        if not isinstance(base, TensorVal):
            return UNKNOWN if flag is not False else TensorVal(requires_grad=False, leaf=True, storage=interp.fresh(),
                                                               origin=call, desc=interp.text(call), opaque=True)
        return TensorVal(requires_grad=flag, leaf=True, storage=base.storage, origin=call, desc=interp.text(call),
                         created_with_grad=call if flag else None, dtype=base.dtype, device=base.device,
                         why=reasons.VARIABLE_WITHOUT_GRAD(), why_site=call)
    if name == "collections.deque" and "maxlen" not in kwargs and len(args) < 2:
        # Unbounded, a deque grows as a list does; with `maxlen` it keeps the last few (not modeled).
        ref = interp.new_object(state, "list", call)
        state.heap[ref.oid].elem = interp.iter_element(args[0], state) if args else None
        return ref
    if name == "collections.defaultdict":
        return make_defaultdict(interp, state, args[0] if args else None, call)
    if name in namedtuples.NAMEDTUPLE_FACTORIES:
        return namedtuples.make_namedtuple_class(interp, state, args, kwargs)
    if name in NUMPY_CONVERSIONS and args and isinstance(args[0], TensorVal) and not args[0].opaque:
        if call.args and not isinstance(call.args[0], ast.Starred):
            # NumPy converts a tensor through `Tensor.__array__`, which is `.numpy()`.
            interp.emit(NumpyEvent(stmt=interp.current_stmt(), state=state, tensor=args[0], call=call,
                                   receiver=call.args[0]))
        return UNKNOWN
    if name in ("itertools.chain", "itertools.chain.from_iterable") and args:
        parts = list(args) if name == "itertools.chain" else [interp.iter_element(args[0], state)]
        return chained(interp, state, parts, call)
    if name in MODULE_WRAPPERS and args and _is_module(state, args[0]):
        return args[0]  # `nn.DataParallel(model)`, `torch.compile(model)`: called, it runs the model
    if name in DATA_PARALLEL_CALLS and args and _is_module(state, args[0]):
        assert isinstance(args[0], HeapRef)
        inputs = args[1] if len(args) > 1 else kwargs.get("inputs", UNKNOWN)
        return call_object(interp, state, args[0], [inputs], {}, call)
    if name.startswith("torch.nn.") and short[:1].isupper() and not name.startswith("torch.nn.functional"):
        return make_module(interp, state, f"nn.{short}", args, kwargs, call)
    if name.startswith("torch.") and short in FACTORIES:
        return make_factory(interp, state, short, args, kwargs, call)
    if name in DTYPES:
        return Number(None)
    if name in ("torch.device",):
        return Number(args[0].const if args and isinstance(args[0], Number) else None)
    if name.startswith("torch.") or name.startswith("F."):
        key = table_key(name)
        info = optable.lookup(key)
        if info is not None and info.kind == "factory":
            return make_factory(interp, state, short, args, kwargs, call)
        if info is not None and info.kind in ("function", "functional"):
            result = call_table_function(interp, state, key, info, args, kwargs, call)
            if reduces_to_one(short, list(args[1:]) if short in _FULL_REDUCTIONS else [], kwargs):
                return mark_scalar(result)
            if name.startswith("torch."):
                result = with_indices(interp, short, result, list(args[1:]), kwargs, call)
            return multi_output(interp, info, short, result, list(args[1:]), kwargs, call)
        return UNKNOWN
    model = library_models.library_model(name)
    if model is not None:
        return make_library_model(interp, state, name, model, call)
    return UNKNOWN


#: Wrappers whose result, called, runs the module they wrap on the same parameters.
MODULE_WRAPPERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.compile",
})
#: ``data_parallel(module, inputs, ...)``: the module applied to the inputs (split over devices).
DATA_PARALLEL_CALLS = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})


def _is_module(state: State, value: Value) -> bool:
    return isinstance(value, HeapRef) and value.oid in state.heap and state.heap[value.oid].kind == "module"


def flatten_tensor_args(args: list[Value], state: State, depth: int = 0) -> list[Value]:
    """The tensors inside the arguments (``torch.cat([a, b])``), with UNKNOWN for what could be one."""
    flat: list[Value] = []
    for arg in args:
        if isinstance(arg, TensorVal):
            flat.append(arg)
        elif isinstance(arg, TupleVal) and depth < 4:
            flat.extend(flatten_tensor_args(list(arg.items), state, depth + 1))
        elif isinstance(arg, HeapRef) and depth < 4:
            obj = state.heap.get(arg.oid)
            if obj is None:
                flat.append(UNKNOWN)
            elif obj.kind in ("list", "dict"):
                items = obj.attrs.get("__items__")
                if isinstance(items, TupleVal):
                    flat.extend(flatten_tensor_args(list(items.items), state, depth + 1))
                elif obj.elem is not None:
                    flat.extend(flatten_tensor_args([obj.elem], state, depth + 1))
        elif may_carry_graph(arg):
            flat.append(UNKNOWN)
    return flat


def call_table_function(interp: TorchEngine, state: State, key: str, info: optable.OpInfo, args: list[Value],
                        kwargs: dict[str, Value], call: ast.Call) -> Value:
    if args and info.inputs and info.kind != "factory" and not key.rsplit(".", 1)[-1].startswith("is_"):
        note_tensor_use(interp, args[0])  # `torch.exp(x)`: the table's ops take a tensor first
    out_expr = kwarg_expr(call, "out")
    bound = op_arguments.bind(info, None, None, args, kwargs, call)
    if bound is not None:  # `torch.gather(x, 1, idx)`: a non-tensor before an input
        inputs, exprs = bound.inputs, bound.exprs
        left_out = any(tensor_may_need_grad(v) for v in flatten_tensor_args(bound.others, state))
    else:
        inputs = list(args[: len(info.inputs)])
        exprs = list(call.args[: len(info.inputs)])
        if inputs and len(info.inputs) > 1 and isinstance(inputs[0], (TupleVal, HeapRef)):
            # torch.cat([a, b]), torch.stack(outs, 0): the tensors are the sequence's items; what
            # follows it positionally is the dimension, not a tensor.
            inputs = flatten_tensor_args(inputs[:1], state)
            exprs = [None] * len(inputs)
        for name in info.inputs[len(inputs):]:
            if name in kwargs:
                inputs.append(kwargs[name])
                exprs.append(kwarg_expr(call, name))
        left_out = graph_left_out(args, kwargs, len(info.inputs), info, state)
    if left_out:
        everything = flatten_tensor_args(list(args) + [v for k, v in kwargs.items() if k != "out"], state)
        if info.inplace and args and isinstance(args[0], TensorVal):
            first = call.args[0] if call.args else None
            return apply_inplace(interp, state, key, args[0], first, everything[1:], call, info=None)
        return apply_op(interp, state, key, everything, [None] * len(everything), call, info=None)
    inplace_flag = info.inplace_keyword and const_bool(kwargs.get(info.inplace_keyword))
    if inplace_flag and inputs and isinstance(inputs[0], TensorVal):
        return apply_inplace(interp, state, key, inputs[0], exprs[0], inputs[1:], call, info=info, inplace_cases=True)
    if info.inplace and inputs and isinstance(inputs[0], TensorVal):
        return apply_inplace(interp, state, key, inputs[0], exprs[0], inputs[1:], call, info=info)
    if len(inputs) != len(info.inputs):
        inputs = flatten_tensor_args(args, state)
        return apply_op(interp, state, key, inputs, [None] * len(inputs), call, info=None)
    result = apply_op(interp, state, key, inputs, exprs, call, info=info)
    if out_expr is not None:
        target = interp.eval_quiet(out_expr, state)
        if isinstance(target, TensorVal):
            return apply_inplace(interp, state, key + "(out=)", target, out_expr, [], call, info=None)
    return result


#: Builtins whose result is a Python value (on tensors too, but ``min``, ``max`` and ``abs``).
_PLAIN_BUILTINS = ("float", "int", "bool", "str", "len", "round", "abs", "repr", "format", "isinstance", "hasattr",
                   "print", "min", "max")


#: Builtins that give a tensor for tensors (``max(losses)``, ``abs(t)``, ``round(t)``): a number
#: only when given numbers.
_NUMERIC_BUILTINS = ("min", "max", "abs", "round")


def call_builtin(interp: TorchEngine, state: State, name: str, args: list[Value], kwargs: dict[str, Value],
                 call: ast.Call) -> Value:
    if name in _PLAIN_BUILTINS and not (name in _NUMERIC_BUILTINS and not all(isinstance(a, Number) for a in args)):
        return Number(None) if name != "print" else NONE
    if name == "sum" and args:
        element = interp.iter_element(args[0], state)
        if isinstance(element, TensorVal):
            return apply_op(interp, state, "Tensor.__add__", [element, element], [None, None], call)
        return Number(None) if isinstance(element, Number) else UNKNOWN
    if name in ("tuple", "list") and args:
        if isinstance(args[0], TupleVal):
            return args[0] if name == "tuple" else interp.new_list(state, args[0].items, call, literal=True)
        element = interp.iter_element(args[0], state)
        if isinstance(args[0], HeapRef) and name == "tuple":
            obj = state.heap.get(args[0].oid)
            items = obj.attrs.get("__items__") if obj is not None and not obj.extra.get(INEXACT_ITEMS) else None
            if isinstance(items, TupleVal):
                return items
        ref = interp.new_list(state, (), call, literal=False)
        state.heap[ref.oid].elem = element
        source = state.heap.get(args[0].oid) if isinstance(args[0], HeapRef) else None
        if source is not None and source.extra.get(REPEATED_BLOCKS):
            state.heap[ref.oid].extra[REPEATED_BLOCKS] = source.extra[REPEATED_BLOCKS]
        return ref
    if name in ("tuple", "list", "dict", "set") and not args:
        return interp.new_object(state, "list" if name != "dict" else "dict", call)
    if name in ("range",):
        ref = interp.new_object(state, "list", call)
        state.heap[ref.oid].elem = Number(None)
        return ref
    if name == "enumerate" and args:
        ref = interp.new_object(state, "enumerate", call)
        state.heap[ref.oid].elem = interp.iter_element(args[0], state)
        state.heap[ref.oid].extra["zipped"] = TupleVal((args[0],))  # what it numbers
        return ref
    if name == "zip" and args:
        ref = interp.new_object(state, "zip", call)
        state.heap[ref.oid].elem = TupleVal(tuple(interp.iter_element(a, state) for a in args))
        state.heap[ref.oid].extra["zipped"] = TupleVal(tuple(args))  # a loop over it runs when each of them has items
        return ref
    if name in ("iter", "reversed", "sorted") and args:
        return args[0]
    if name == "filter" and len(args) == 2:
        return chained(interp, state, args[1:], call)  # some of the items: what each may be is what it was
    if name == "next" and args:
        return interp.iter_element(args[0], state)
    if name == "super":
        return UNKNOWN
    return UNKNOWN


# -- factories, modules, optimizers ---------------------------------------------------------


def parse_dtype(value: Value | None, expr: ast.expr | None) -> str | None:
    if isinstance(value, QualName):
        return DTYPES.get(canonical(value.name))
    return None


def make_factory(interp: TorchEngine, state: State, short: str, args: list[Value], kwargs: dict[str, Value],
                 call: ast.Call) -> Value:
    out = kwargs.get("out")
    if isinstance(out, TensorVal):
        # `torch.rand(shape, out=buffer)` fills an existing tensor in place.
        return apply_inplace(interp, state, f"torch.{short}(out=)", out, kwarg_expr(call, "out"), [], call, info=None)
    flag = const_bool(kwargs.get("requires_grad")) if "requires_grad" in kwargs else False
    dtype = parse_dtype(kwargs.get("dtype"), kwarg_expr(call, "dtype"))
    device_value = kwargs.get("device")
    device: str | None = None
    if device_value is None:
        device = "cpu"
    elif isinstance(device_value, Number) and isinstance(device_value.const, str):
        device = device_value.const
    like = args[0] if short.endswith("_like") and args and isinstance(args[0], TensorVal) else None
    if short in ("tensor", "as_tensor", "from_numpy") and dtype is None:
        dtype = None
    elif dtype is None:
        dtype = like.dtype if like is not None else "float32"
    inference = True if state.inference_mode is True else (False if state.inference_mode is False else None)
    why = ""
    if not flag:
        if short in ("tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor"):
            why = reasons.COPIED_TENSOR(factory=short)
        else:
            why = reasons.NEW_TENSOR(factory=short)
    return TensorVal(
        requires_grad=flag, leaf=True, storage=interp.fresh(), origin=call, desc=interp.text(call),
        created_with_grad=call if flag else None, dtype=dtype, device=device, inference=inference,
        why=why, why_site=call,
    )


def make_module(interp: TorchEngine, state: State, key: str, args: list[Value], kwargs: dict[str, Value],
                call: ast.Call) -> Value:
    info = optable.lookup(key)
    ref = interp.new_object(state, "module", call, cls=key)
    obj = state.heap[ref.oid]
    if key in CONTAINERS:
        children: list[Value] = []
        for arg in args:
            if isinstance(arg, HeapRef) and state.heap.get(arg.oid) is not None and state.heap[arg.oid].kind == "list":
                items = state.heap[arg.oid].attrs.get("__items__")
                if isinstance(items, TupleVal):
                    children.extend(items.items)
                else:
                    obj.elem = state.heap[arg.oid].elem
                    if state.heap[arg.oid].extra.get(REPEATED_BLOCKS):
                        obj.extra[REPEATED_BLOCKS] = state.heap[arg.oid].extra[REPEATED_BLOCKS]
            elif isinstance(arg, TupleVal):
                children.extend(arg.items)
            elif isinstance(arg, HeapRef) and arg.oid in state.heap and state.heap[arg.oid].kind == "dict":
                obj.elem = state.heap[arg.oid].elem
            else:
                children.append(arg)
        if children and obj.elem is None:
            obj.attrs["__children__"] = TupleVal(tuple(children))
        return ref
    # Parameters: unknown modules may have some; known ones when the table saw a parameter saved,
    # or the module is one that owns weights whatever it saves.
    has_params = True
    if info is not None:
        cases = [info.saved_for(p) for p in info.patterns()]
        has_params = any(c is not None and c.params for c in cases)
        if key in ("nn.Linear", "nn.Conv1d", "nn.Conv2d", "nn.Embedding", "nn.LSTM", "nn.GRU", "nn.RNN", "nn.LSTMCell",
                   "nn.GRUCell", "nn.RNNCell", "nn.LayerNorm", "nn.BatchNorm1d", "nn.BatchNorm2d", "nn.Bilinear",
                   "nn.ConvTranspose1d", "nn.ConvTranspose2d", "nn.GroupNorm", "nn.MultiheadAttention", "nn.PReLU",
                   "nn.EmbeddingBag", "nn.RMSNorm", "nn.TransformerEncoderLayer"):
            has_params = True
    if key.endswith("Loss") and _loss_short(key) in _LOSSES and reduces_to_one(_loss_short(key), [], kwargs):
        obj.extra["reduces_to_one"] = True  # `criterion = nn.CrossEntropyLoss()`: its calls give one element
    if has_params:
        # Two storages: the weights, and the bias (most modules save their weight, never their bias).
        obj.param_storages = frozenset({interp.fresh(), interp.fresh()})
        obj.extra["bias_storage"] = max(obj.param_storages)
        obj.extra["has_params"] = True if info is not None else None
    if info is not None and info.inplace_keyword:
        position = info.inplace_position
        flag = kwargs.get(info.inplace_keyword)
        if flag is None and position is not None and len(args) > position:
            flag = args[position]
        if const_bool(flag):
            obj.inplace_site = call
    return ref


def make_library_model(interp: TorchEngine, state: State, name: str, model: library_models.LibraryModel,
                       call: ast.Call) -> Value:
    """A model a library built (:mod:`graphlife.analysis.library_models`): a module of parameters
    that may require grad (``frozen`` unknown), called as :func:`call_library_model` says."""
    ref = interp.new_object(state, "module", call, cls=name)
    obj = state.heap[ref.oid]
    obj.param_storages = frozenset({interp.fresh(), interp.fresh()})
    obj.extra["bias_storage"] = max(obj.param_storages)
    obj.extra["library_model"] = model
    obj.frozen = None
    return ref


def library_submodule(interp: TorchEngine, state: State, parent: HeapRef, attr: str, site: ast.AST) -> Value:
    """``model.features`` of a library's model: one of its layers, a library model of its own
    (frozen as its parent is) whose parameters are among the parent's; kept, so that the next
    read is the same module."""
    obj = state.heap[parent.oid]
    model = obj.extra["library_model"]
    assert isinstance(model, library_models.LibraryModel)
    ref = interp.new_object(state, "module", site, cls=obj.cls)
    child = state.heap[ref.oid]
    child.param_storages = frozenset({interp.fresh(), interp.fresh()})
    child.extra["bias_storage"] = max(child.param_storages)
    child.extra["library_model"] = library_models.LibraryModel(model.library, library_models.OutputShape.TENSOR)
    child.frozen = obj.frozen
    state.heap_write(parent.oid).attrs[attr] = ref
    return ref


def call_library_model(interp: TorchEngine, state: State, ref: HeapRef, model: library_models.LibraryModel,
                       args: list[Value], kwargs: dict[str, Value], call: ast.Call) -> Value:
    """The forward of a library's model: one op of its inputs and parameters whose backward may
    fill those parameters' gradients and whose node may save tensors (every network of these
    libraries saves some). The result's graph is a *may*, also when an input requires grad: the
    engine cannot see what the library saves, so a rule needing it warns and never errs."""
    obj = state.heap[ref.oid]
    storages = _library_trainable(state, ref)
    interp.note_module_call(ref, call)
    tensors = flatten_tensor_args([*args, *kwargs.values()], state)
    if storages:
        tensors.append(TensorVal(requires_grad=None, leaf=True, storage=None))
    result = apply_op(interp, state, obj.cls, tensors, [None] * len(tensors), call, info=None)
    if isinstance(result, TensorVal) and len(result.grad_fn) == 1:
        node = interp.run_state.graph.nodes[next(iter(result.grad_fn))]
        # What it saves is claimed through its parameters only: a frozen model's graph on an
        # input that may not require grad is an unknown op's.
        node.saves_certain = bool(storages)
        node.leaves = node.leaves | storages
        if result.requires_grad is True:
            result = replace(result, requires_grad=None, certain=False)
    if model.output is library_models.OutputShape.TENSOR:
        return result
    # A dict of losses, `{"out": ..., "aux": ...}`, or a transformers `ModelOutput`: every item
    # (by key, by position, by field) is a result of the forward.
    output = interp.new_object(state, "dict", call)
    holder = state.heap[output.oid]
    holder.elem = result
    if model.output is library_models.OutputShape.MODEL_OUTPUT:
        holder.attrs.update(dict.fromkeys(library_models.MODEL_OUTPUT_FIELDS, result))
    return output


def _library_trainable(state: State, ref: HeapRef) -> frozenset[int]:
    """The parameters of a library's model that a backward through it may fill: its own unless
    the user froze them, and those of the modules the user put into it (``model.fc =
    nn.Linear(...)`` after freezing the backbone) unless frozen too."""
    obj = state.heap[ref.oid]
    storages = set(obj.param_storages) if obj.frozen is not True else set()
    for child in obj.attrs.values():
        if isinstance(child, HeapRef) and child.oid in state.heap and state.heap[child.oid].kind == "module":
            storages |= trainable_params(state, child)
    return frozenset(storages)


def module_params(state: State, ref: HeapRef, depth: int = 0) -> tuple[frozenset[int], bool | None]:
    """Storages of every parameter a module owns (recursively), and whether all are frozen."""
    obj = state.heap.get(ref.oid)
    if obj is None or depth > 6:
        return frozenset(), None
    storages = set(obj.param_storages)
    frozen = obj.frozen
    children: list[Value] = list(obj.attrs.values())
    if obj.elem is not None:
        children.append(obj.elem)
    for child in children:
        items = child.items if isinstance(child, TupleVal) else (child,)
        for item in items:
            if isinstance(item, HeapRef) and item.oid in state.heap and state.heap[item.oid].kind == "module":
                sub, sub_frozen = module_params(state, item, depth + 1)
                storages |= sub
                if frozen is True and sub_frozen is not True:
                    pass
            elif isinstance(item, TensorVal) and item.is_param and item.storage is not None:
                storages.add(item.storage)
    return frozenset(storages), frozen


def trainable_params(state: State, ref: HeapRef, depth: int = 0) -> frozenset[int]:
    """Storages of the parameters of a module (recursively) that are not frozen: those a step can
    change (torch's optimizers skip a parameter without a gradient)."""
    obj = state.heap.get(ref.oid)
    if obj is None or depth > 6 or obj.frozen is True:
        return frozenset()
    storages = set(obj.param_storages)
    children: list[Value] = list(obj.attrs.values()) + ([obj.elem] if obj.elem is not None else [])
    for child in children:
        for item in child.items if isinstance(child, TupleVal) else (child,):
            if isinstance(item, HeapRef) and item.oid in state.heap and state.heap[item.oid].kind == "module":
                storages |= trainable_params(state, item, depth + 1)
            elif isinstance(item, TensorVal) and item.is_param and item.storage is not None and item.requires_grad:
                storages.add(item.storage)
    return frozenset(storages)


def make_optimizer(interp: TorchEngine, state: State, args: list[Value], kwargs: dict[str, Value],
                   call: ast.Call) -> Value:
    params_value = args[0] if args else kwargs.get("params", UNKNOWN)
    params_expr = call.args[0] if call.args else kwarg_expr(call, "params")
    entries: list[tuple[Value, ast.expr | None]] = []
    storages: set[int] | None = set()
    for value, expr in iter_param_values(interp, state, params_value, params_expr):
        entries.append((value, expr))
        if storages is None:
            continue
        owner = value.owner if isinstance(value, TensorVal) and value.storage is None else None
        if owner is not None and owner in state.heap:
            # One tensor standing for the parameters of a module (`[p for p in m.parameters() if ...]`,
            # `filter(...)`, `list(a.parameters()) + ...`): those that can get a gradient.
            storages |= trainable_params(state, HeapRef(owner))
        elif isinstance(value, TensorVal) and value.storage is not None:
            storages.add(value.storage)
        elif isinstance(value, HeapRef) and state.heap.get(value.oid) is not None:
            obj = state.heap[value.oid]
            if obj.kind == "params" and obj.extra.get("module") is not None:
                storages |= module_params(state, obj.extra["module"])[0]
            else:
                storages = None if storages is None else storages
        else:
            storages = None
    interp.emit(OptimizerEvent(stmt=interp.current_stmt(), state=state, call=call, params=entries))
    return interp.new_object(state, "optimizer", call,
                             opt_storages=frozenset(storages) if storages is not None else None)


def iter_param_values(interp: TorchEngine, state: State, value: Value, expr: ast.expr | None,
                      depth: int = 0) -> Iterator[tuple[Value, ast.expr | None]]:
    """The tensors (or parameter iterators) passed to an optimizer, with their source expressions."""
    if depth > 3:
        return
    if isinstance(value, HeapRef) and value.oid in state.heap:
        obj = state.heap[value.oid]
        if obj.kind == "list":
            items = obj.attrs.get("__items__")
            item_exprs = expr.elts if isinstance(expr, (ast.List, ast.Tuple)) else None
            parts = obj.attrs.get("__parts__")
            if isinstance(parts, TupleVal) and items is None:
                part_exprs: list[ast.expr | None] = (
                    [expr.left, expr.right] if isinstance(expr, ast.BinOp) else [None] * len(parts.items))
                for part, part_expr in zip(parts.items, part_exprs):
                    yield from iter_param_values(interp, state, part, part_expr, depth + 1)
                return
            if isinstance(items, TupleVal):
                for index, item in enumerate(items.items):
                    sub_expr = item_exprs[index] if item_exprs and index < len(item_exprs) else None
                    yield from iter_param_values(interp, state, item, sub_expr, depth + 1)
                return
            if obj.elem is not None:
                yield from iter_param_values(interp, state, obj.elem, None, depth + 1)
            return
        if obj.kind == "dict":
            params = obj.attrs.get("['params']")
            params_expr = None
            if isinstance(expr, ast.Dict):
                for key, val in zip(expr.keys, expr.values):
                    if isinstance(key, ast.Constant) and key.value == "params":
                        params_expr = val
            if params is not None:
                yield from iter_param_values(interp, state, params, params_expr, depth + 1)
            return
        yield value, expr
        return
    if isinstance(value, TupleVal):
        item_exprs = expr.elts if isinstance(expr, (ast.List, ast.Tuple)) else None
        for index, item in enumerate(value.items):
            yield from iter_param_values(interp, state, item, item_exprs[index] if item_exprs else None, depth + 1)
        return
    yield value, expr


# -- calls on objects and methods ------------------------------------------------------------


def call_object(interp: TorchEngine, state: State, ref: HeapRef, args: list[Value], kwargs: dict[str, Value],
                call: ast.Call) -> Value:
    obj = state.heap.get(ref.oid)
    if obj is None:
        return UNKNOWN
    if obj.kind == "module":
        return call_module(interp, state, ref, args, kwargs, call)
    if obj.class_ref is not None:
        method = interp.find_method(obj.class_ref, "__call__", state)
        if method is not None:  # an instance of a class of the project with `__call__`
            return interp.call_function(FunctionRef(node=method, key=id(method), bound_self=ref), args, kwargs,
                                        state, call)
    interp.unseen_call([*args, *kwargs.values()], state, receiver=ref)
    return UNKNOWN


def call_module(interp: TorchEngine, state: State, ref: HeapRef, args: list[Value], kwargs: dict[str, Value],
                call: ast.Call, *, via_container: bool = False) -> Value:
    """Call a module as torch does: its forward pre-hooks, its forward, its forward hooks (and any
    function that escaped the engine may run meanwhile: it may be one of this module's hooks)."""
    interp.run_escaped(state)
    args = interp.run_pre_hooks(ref, args, state, call)
    args = [interp.through_backward_hooks(ref, arg, state, call) for arg in args]
    output = _call_module_forward(interp, state, ref, args, kwargs, call, via_container=via_container)
    output = interp.run_forward_hooks(ref, args, output, state, call)
    output = interp.through_backward_hooks(ref, output, state, call)
    interp.note_hooked_call(ref, args, output, state, call)  # its backward hooks run at a backward through it
    return output


#: The parameters of a module the table knows, as one more input of its op (by whether they require
#: grad): facts without a storage or a site, the same for every call (values are immutable).
_PARAMETERS_INPUT: dict[bool | None, TensorVal] = {
    flag: TensorVal(requires_grad=flag, leaf=True, storage=None) for flag in (True, False, None)}


def _call_module_forward(interp: TorchEngine, state: State, ref: HeapRef, args: list[Value],
                         kwargs: dict[str, Value], call: ast.Call, *, via_container: bool = False) -> Value:
    obj = state.heap[ref.oid]
    if obj.class_ref is not None:
        interp.note_module_call(ref, call)
        forward = interp.find_method(obj.class_ref, "forward", state)
        if forward is None:
            return UNKNOWN
        method = FunctionRef(node=forward, key=id(forward), bound_self=ref)
        return interp.call_function(method, args, kwargs, state, call)
    key = obj.cls
    if key in checkpoint_regions.DROPOUT_MODULES:
        checkpoint_regions.note_draw(interp, call, key, state)
    library_model = obj.extra.get("library_model")
    if isinstance(library_model, library_models.LibraryModel):
        return call_library_model(interp, state, ref, library_model, args, kwargs, call)
    if key == "nn.Sequential":
        children = obj.attrs.get("__children__")
        blocks = obj.extra.get(REPEATED_BLOCKS)
        if isinstance(blocks, int) and blocks > 0 and isinstance(obj.elem, HeapRef):
            return _call_repeated_blocks(interp, state, obj.elem, blocks, args[0] if args else UNKNOWN, call)
        if not isinstance(children, TupleVal):
            return UNKNOWN
        value = args[0] if args else UNKNOWN
        for child in children.items:
            if isinstance(child, HeapRef):
                value = call_module_site(interp, state, child, [value], call)
            else:  # a layer the engine does not know (`nn.Sequential(*backbone_layers)`)
                interp.note_opaque_call(call, [value], state)
                value = UNKNOWN
        return value
    info = optable.lookup(key)
    storages, _ = module_params(state, ref)
    frozen = obj.frozen
    interp.note_module_call(ref, call)
    param_grad = (not frozen) if frozen is not None else None
    if not storages:
        param_grad = False
    inputs = list(args)
    if info is None:
        tensors = flatten_tensor_args(inputs, state)
        if param_grad:
            tensors = [*tensors, TensorVal(requires_grad=True, leaf=True, storage=None)]
        result = apply_op(interp, state, key, tensors, [None] * len(tensors), call, info=None)
        if param_grad and isinstance(result, TensorVal) and len(result.grad_fn) == 1:
            # Its backward fills its parameters' gradients, as a module the table knows does.
            node = interp.run_state.graph.nodes[next(iter(result.grad_fn))]
            node.leaves = node.leaves | storages
        return result if obj.extra.get("has_params") is not None or tensors else UNKNOWN
    flat: list[Value] = []
    for value in inputs:
        if isinstance(value, TupleVal) and key in RNN_OUTPUTS:
            flat.extend(value.items)
        else:
            flat.append(value)
    inputs = flat
    exprs: list[ast.expr | None] = list(call.args) + [None] * max(0, len(inputs) - len(call.args))
    if len(inputs) < len(info.inputs) and key in RNN_OUTPUTS:
        variant = info.variant("no_state") or info
        use_info = variant
    else:
        use_info = info
    if len(inputs) != len(use_info.inputs):
        # A recurrent module called without its state starts from zeros (no graph, no grad);
        # any other input the call did not give is unknown.
        filler: Value = TensorVal(requires_grad=False, leaf=True, storage=None) if key in RNN_OUTPUTS else UNKNOWN
        inputs = (inputs + [filler] * len(use_info.inputs))[: len(use_info.inputs)]
    if obj.inplace_site is not None and inputs and isinstance(inputs[0], TensorVal):
        return apply_inplace(interp, state, key, inputs[0], exprs[0] if exprs else None, inputs[1:], call,
                             construction=obj.inplace_site, info=use_info, inplace_cases=True,
                             report_at_construction=via_container)
    # The parameters are one more input that requires grad (unless frozen).
    pattern = "".join([pattern_char(v) for v in inputs])
    cases = use_info.saved_for_all(pattern)
    param_tensor = _PARAMETERS_INPUT[param_grad]
    result = apply_op(interp, state, key, inputs + ([param_tensor] if param_grad is not False else []),
                      [*exprs, None], call, info=use_info if param_grad is False else None)
    if param_grad is not False and isinstance(result, TensorVal) and result.grad_fn:
        # Attach what the table says this module saves (with its parameters requiring grad).
        node = interp.run_state.graph.nodes[next(iter(result.grad_fn))]
        saves = []
        if cases:
            saves.extend(saved_inputs(interp, state, cases, inputs, exprs, call, key))
            if all(c.params for c in cases):
                saved_params = sorted(storages - {obj.extra.get("bias_storage")})
                owner = reasons.PARAMETERS_OF(module=interp.text(call.func))
                saves.extend(SavedRef(s, max(state.version_of(s)), "parameter", owner) for s in saved_params)
            if all(c.result for c in cases) and result.storage is not None:
                version = max(state.version_of(result.storage))
                saves.append(SavedRef(result.storage, version, "result", interp.text(call)))
            node.saves = tuple(saves)
            node.saves_certain = all(c.saves_anything or c.params for c in cases)
            node.op = key
        if param_grad is True:
            node.leaves = node.leaves | storages
        else:
            node.saves_certain = False
        if param_grad is True and (result.requires_grad is not True or result.leaf is not False):
            result = replace(result, requires_grad=True, leaf=False)
    if isinstance(result, TensorVal) and result.requires_grad is False and frozen and state.grad_enabled is not False:
        why = reasons.FROZEN_MODULE(module=interp.text(call.func))
        result = replace(result, why=why, why_site=call)
    if obj.extra.get("reduces_to_one"):
        result = mark_scalar(result)
    return shape_module_output(key, result)


def _call_repeated_blocks(interp: TorchEngine, state: State, block: HeapRef, blocks: int, value: Value,
                          call: ast.Call) -> Value:
    """``nn.Sequential(*[Block() for _ in range(n)])`` called: a chain of ``blocks`` runs of the
    block (each output the next one's input; two stand for more, as for a loop); the value of
    the chain's end is the container's output."""
    for _ in range(blocks):
        value = call_module_site(interp, state, block, [value], call)
    return value


def call_module_site(interp: TorchEngine, state: State, child: HeapRef, args: list[Value], call: ast.Call) -> Value:
    obj = state.heap.get(child.oid)
    if obj is None:
        return UNKNOWN
    return call_module(interp, state, child, args, {}, call, via_container=True)


def shape_module_output(key: str, result: Value) -> Value:
    """RNN modules return tuples: ``(out, (h, c))`` for LSTM, ``(out, h)`` for GRU/RNN."""
    kind = RNN_OUTPUTS.get(key)
    if not isinstance(result, TensorVal) or kind is None:
        return result
    if kind == "lstm":
        return TupleVal((result, TupleVal((replace(result, desc="h"), replace(result, desc="c")))))
    if kind == "rnn":
        return TupleVal((result, replace(result, desc="h")))
    if kind == "lstmcell":
        return TupleVal((result, replace(result, desc="c")))
    return result


def call_method(interp: TorchEngine, state: State, receiver: Value, name: str, args: list[Value],
                kwargs: dict[str, Value], call: ast.Call) -> Value:
    receiver_expr = call.func.value if isinstance(call.func, ast.Attribute) else None
    if name == "register_hook" and isinstance(receiver, TensorVal) and not kwargs:
        return interp.register_tensor_hook(receiver, args, state, call)  # runs at the backwards reaching it
    if name == "register_post_accumulate_grad_hook" and isinstance(receiver, TensorVal) and not kwargs:
        return interp.register_post_accumulate_hook(receiver, args, state, call)  # after .grad accumulated
    if name.startswith("register_") and name.endswith("hook") and not (
        isinstance(receiver, HeapRef) and receiver.oid in state.heap and state.heap[receiver.oid].kind == "module"
        and "library_model" not in state.heap[receiver.oid].extra
    ):
        # `t.register_hook(fn)`, an optimizer's step hooks: torch runs them where the engine does not follow;
        # so does a library model, whose layers run inside calls the engine cannot see.
        interp.escape([*args, *kwargs.values()], state)
        return UNKNOWN
    if isinstance(receiver, TensorVal):
        return call_tensor_method(interp, state, receiver, receiver_expr, name, args, kwargs, call)
    if isinstance(receiver, HeapRef) and receiver.oid in state.heap:
        obj = state.heap[receiver.oid]
        if obj.kind == "hook_handle" and name == "remove":
            return interp.remove_hook(receiver, state)
        if obj.kind == "autograd_ctx":
            return interp.ctx_method(receiver, name, args, call, state)
        if obj.kind == "distribution":
            return call_distribution_method(interp, state, receiver, name, args, call)
        if obj.kind == "object":
            # A method the engine could not find (inherited from a library class, made at run time):
            # it may write the object and what it is given.
            interp.unseen_call([*args, *kwargs.values()], state, receiver=receiver)
            return UNKNOWN
        if obj.kind in ("list", "dict"):
            interp.escape([*args, *kwargs.values()], state, later=False)  # `sort(key=fn)` runs it now
        if obj.kind == "module":
            return call_module_method(interp, state, receiver, name, args, kwargs, call)
        if obj.kind == "optimizer":
            return call_optimizer_method(interp, state, receiver, name, args, kwargs, call)
        if obj.kind == "scaler":
            if name == "scale" and args:
                return args[0]
            if name == "step" and args and isinstance(args[0], HeapRef):
                return call_optimizer_method(interp, state, args[0], "step", [], {}, call)
            return NONE
        if obj.kind in ("list", "dict"):
            return call_container_method(interp, state, receiver, obj, name, args, call)
        if obj.kind == "params":
            return UNKNOWN
    if isinstance(receiver, TupleVal) and name in ("index", "count"):
        return Number(None)
    if isinstance(receiver, Number) and name in ("backward",):
        return UNKNOWN
    return UNKNOWN


def call_container_method(interp: TorchEngine, state: State, ref: HeapRef, obj: HeapObject, name: str,
                          args: list[Value], call: ast.Call) -> Value:
    if name in ("append", "add", "insert", "extend", "setdefault") and args:
        target = interp.text(call.func.value) if isinstance(call.func, ast.Attribute) else ""
        interp.maybe_store(state, ref, args[-1], target, "append")
    if name in ("append", "add", "insert") and args:
        value = args[-1]
        writable = state.heap_write(ref.oid)
        writable.elem = value if writable.elem is None else writable.elem.join(value)
        items = writable.attrs.get("__items__")
        if name == "append" and isinstance(items, TupleVal) and len(items.items) < 16:
            writable.attrs["__items__"] = TupleVal((*items.items, value))
        else:
            writable.attrs.pop("__items__", None)
        return NONE
    if name == "extend" and args:
        interp.list_extend(state, ref, args[0])
        return NONE
    if name == "setdefault" and len(args) == 2 and obj.kind == "dict":
        if obj.elem is None:  # `logs.setdefault("loss", [])`: the default is now the dict's value
            state.heap_write(ref.oid).elem = args[1]
            return args[1]
        return obj.elem
    if name == "get" and len(args) == 2 and obj.elem is None:
        return args[1]
    if name in ("pop", "get", "setdefault"):
        return obj.elem if obj.elem is not None else UNKNOWN
    if name in ("values",):
        out = interp.new_object(state, "list", call)
        state.heap[out.oid].elem = obj.elem
        if isinstance(obj.attrs.get("__items__"), TupleVal):
            state.heap[out.oid].attrs["__items__"] = obj.attrs["__items__"]
        return out
    if name in ("items",):
        out = interp.new_object(state, "list", call)
        state.heap[out.oid].elem = TupleVal((Number(None), obj.elem if obj.elem is not None else UNKNOWN))
        return out
    if name == "update" and args:
        interp.list_extend(state, ref, args[0])
        return NONE
    if name in ("clear",):
        clear_container(state, ref)
        return NONE
    if name in MUTATING_METHODS:
        weaken_object(state, ref.oid)  # a change the engine does not model: what it holds is not known
    return UNKNOWN


def call_checkpoint(interp: TorchEngine, state: State, name: str, args: list[Value], kwargs: dict[str, Value],
                    call: ast.Call) -> Value:
    """``checkpoint(fn, *inputs)`` or ``checkpoint_sequential(functions, segments, input)``: the
    function runs now, inside a checkpoint region (:mod:`graphlife.analysis.checkpoint_regions`:
    torch runs it again during backward); the reentrant variant hands back one node."""
    sequential = name.endswith("checkpoint_sequential")
    fn = args[0] if args else kwargs.get("functions" if sequential else "function", UNKNOWN)
    if sequential:
        given = args[2] if len(args) > 2 else kwargs.get("input", UNKNOWN)
        inputs = [given]
        segments = args[1] if len(args) > 1 else kwargs.get("segments", UNKNOWN)
        if not (isinstance(segments, Number) and isinstance(segments.const, int) and segments.const >= 2):
            # One segment (or a count not known) may checkpoint nothing: torch runs the last
            # segment plainly, so the modules run as a plain call.
            if isinstance(fn, HeapRef):
                return call_object(interp, state, fn, inputs, {}, call)
            interp.unseen_call(list(args), state)
            return UNKNOWN
    else:
        inputs = list(args[1:])
    tensors = flatten_tensor_args(inputs, state)
    # torch 2.13 runs the reentrant variant when `use_reentrant` is not given
    reentrant = const_bool(kwargs["use_reentrant"]) if "use_reentrant" in kwargs else True
    if const_bool(kwargs.get("use_reentrant")) is True and tensors and all(
        isinstance(t, TensorVal) and t.requires_grad is False for t in tensors
    ):
        return TensorVal(requires_grad=False, leaf=True, storage=interp.fresh(), origin=call,
                         desc=interp.text(call),
                         why=reasons.REENTRANT_CHECKPOINT(), why_site=call)
    restores_rng = const_bool(kwargs["preserve_rng_state"]) is not False if "preserve_rng_state" in kwargs else True
    if isinstance(fn, FunctionRef):
        function = fn.node.name if isinstance(fn.node, (ast.FunctionDef, ast.AsyncFunctionDef)) else "lambda"
        output = checkpoint_regions.run_in_region(
            interp, call, function, reentrant, restores_rng,
            lambda: interp.call_function(fn, inputs, {}, state, call))
    elif isinstance(fn, HeapRef):
        held = state.heap.get(fn.oid)
        function = f"{held.cls}.forward" if held is not None and held.cls and held.kind == "module" \
            else interp.text(call.args[0]) if call.args else "function"
        output = checkpoint_regions.run_in_region(
            interp, call, function, reentrant, restores_rng,
            lambda: call_object(interp, state, fn, inputs, {}, call))
    else:
        interp.unseen_call(list(args), state)
        return UNKNOWN
    if reentrant is True:
        return reentrant_checkpoint_output(interp, state, output, tensors, call)
    return output


def reentrant_checkpoint_output(interp: TorchEngine, state: State, output: Value, inputs: list[Value],
                                call: ast.Call) -> Value:
    """What a reentrant ``checkpoint(fn, *inputs)`` hands back: one node (torch's
    ``CheckpointFunction``) whose parents are the graphs of the tensors it was given, which it
    saves; its backward recomputes the block and fills the block's parameters' gradients, but
    ``autograd.grad`` cannot go through it (GL405)."""
    if state.grad_enabled is False:
        return output
    tensors = [t for t in inputs if isinstance(t, TensorVal)]
    results = [t for t in tensors_in(output, state) if t.grad_fn]
    if not results:
        return output
    graph = interp.run_state.graph
    _, inner = graph.reach(frozenset().union(*(t.grad_fn for t in results)), False)
    inner_leaves = frozenset().union(*(graph.nodes[n].leaves for n in inner)) if inner else frozenset()
    saves = tuple(SavedRef(t.storage, max(state.version_of(t.storage)), "input", interp.text(call))
                  for t in tensors if t.storage is not None)
    node = graph.add(
        op="checkpoint(reentrant)", site=call, parents=frozenset().union(*(t.grad_fn for t in tensors)),
        parents_certain=all(t.certain for t in tensors), saves=saves, saves_certain=bool(saves),
        iteration=interp.iteration(), line_desc=interp.text(call),
        leaves=leaf_storages(tensors, state) | inner_leaves, pattern="".join(pattern_char(v) for v in inputs),
        partial=any(graph.nodes[n].partial for n in inner) or any(may_carry_graph(v) for v in inputs
                                                                  if not isinstance(v, TensorVal)),
        checkpoint_inputs=leaf_storages(tensors, state),
    )
    return _with_grad_fn(output, node.nid)


def _with_grad_fn(value: Value, nid: int) -> Value:
    if isinstance(value, TensorVal) and value.grad_fn:
        return replace(value, grad_fn=frozenset({nid}))
    if isinstance(value, TupleVal):
        return TupleVal(tuple(_with_grad_fn(item, nid) for item in value.items))
    return value


def call_distribution_method(interp: TorchEngine, state: State, ref: HeapRef, name: str, args: list[Value],
                             call: ast.Call) -> Value:
    """A method of a ``torch.distributions`` object: a sample without a graph, or an op on its
    parameters (:mod:`graphlife.analysis.distributions`)."""
    if name in distributions.SAMPLE_METHODS:
        return distributions.no_graph_sample(interp, call, name)
    measured = distributions.measured_member(state, ref, name, args, list(call.args))
    if measured is not None:
        return apply_op(interp, state, measured.key, measured.inputs, measured.input_exprs, call)
    if name in distributions.DIFFERENTIABLE_METHODS:
        inputs = [*distributions.parameters_of(state, ref), *args]
        return apply_op(interp, state, f"Distribution.{name}", inputs, [None] * len(inputs), call)
    return UNKNOWN


def distribution_property(interp: TorchEngine, state: State, ref: HeapRef, name: str, site: ast.AST) -> Value:
    """``dist.mean``, ``dist.probs``, ...: an op on the distribution's parameters."""
    measured = distributions.measured_member(state, ref, name, [], [])
    if measured is not None:
        return apply_op(interp, state, measured.key, measured.inputs, measured.input_exprs, site)
    inputs = distributions.parameters_of(state, ref)
    return apply_op(interp, state, f"Distribution.{name}", inputs, [None] * len(inputs), site)


def kl_divergence(interp: TorchEngine, state: State, args: list[Value], call: ast.Call) -> Value:
    """``kl_divergence(p, q)``: an op on both distributions' parameters."""
    inputs: list[Value] = []
    for value in args:
        if isinstance(value, HeapRef) and distributions.is_distribution(state, value):
            inputs.extend(distributions.parameters_of(state, value))
        else:
            inputs.append(value)
    return apply_op(interp, state, "Distribution.kl_divergence", inputs, [None] * len(inputs), call)


def clear_container(state: State, ref: HeapRef) -> None:
    """``lst.clear()``, ``del lst[:]``: empty again (what was appended before no longer lives
    through it; GL201 sees from the values that the container does not pile up)."""
    obj = state.heap_write(ref.oid)
    obj.elem = None
    obj.attrs = {key: value for key, value in obj.attrs.items() if not key.startswith("[")}
    if obj.kind == "list":
        obj.attrs["__items__"] = TupleVal(())


#: Methods of a module that return the module (or nothing) and change its mode, device, gradients.
_MODULE_SELF_METHODS = ("train", "eval", "to", "cuda", "cpu", "double", "float", "half", "apply", "requires_grad_",
                        "zero_grad", "share_memory")


def call_module_method(interp: TorchEngine, state: State, ref: HeapRef, name: str, args: list[Value],
                       kwargs: dict[str, Value], call: ast.Call) -> Value:
    if name in ("parameters", "named_parameters"):
        params = interp.new_object(state, "params", call)
        _, frozen = module_params(state, ref)
        element = TensorVal(requires_grad=(not frozen) if frozen is not None else None, leaf=True, storage=None,
                            is_param=True, owner=ref.oid, desc="parameter", created_with_grad=call)
        state.heap[params.oid].elem = element if name == "parameters" else TupleVal((Number(None), element))
        state.heap[params.oid].extra["module"] = ref
        return params
    if name in _MODULE_SELF_METHODS:
        if name == "requires_grad_":
            flag = const_bool(args[0]) if args else True
            state.heap_write(ref.oid).frozen = (not flag) if flag is not None else None
            mark_children_frozen(state, ref, (not flag) if flag is not None else None)
        if name == "zero_grad":
            flag = _set_to_none(args, kwargs)
            zero_grads(interp, state, module_params(state, ref)[0], call, set_to_none=flag)
            return NONE
        if name in ("train", "eval"):
            mode = name == "train" and (const_bool(args[0]) if args else True)
            set_training(state, ref, mode)
        if name == "apply":
            interp.escape(args, state, later=False)  # runs now, on every submodule
        return ref
    if name == "forward":
        return call_module(interp, state, ref, args, kwargs, call)
    if name in ("children", "modules", "named_children", "named_modules") and not kwargs and not args:
        listed = (module_tree.children if name.endswith("children") else module_tree.modules)(state, ref)
        if listed is not None:
            # Every submodule is known: a loop over them registers each hook where torch does.
            items = module_tree.as_items(listed, named=name.startswith("named_"))
            return interp.new_list(state, items, call, literal=True)
    if name in ("children", "modules"):
        out = interp.new_object(state, "list", call)
        if name == "children" and "library_model" in state.heap[ref.oid].extra:
            # A library model's layers, one standing for all: `nn.Sequential(*list(resnet.children())[:-1])`
            # runs them as a chain.
            state.heap[out.oid].elem = library_submodule(interp, state, ref, "children()", call)
            state.heap[out.oid].extra[REPEATED_BLOCKS] = 2
        return out
    if name == "add_module" and len(args) >= 2 and state.heap[ref.oid].cls == "nn.Sequential":
        # `slice1.add_module(str(x), features[x])`: the Sequential runs it after the ones it holds.
        obj = state.heap_write(ref.oid)
        children = obj.attrs.get("__children__", TupleVal(()))
        if obj.elem is None and isinstance(children, TupleVal) and len(children.items) < MAX_SEQUENTIAL_CHILDREN:
            obj.attrs["__children__"] = TupleVal((*children.items, args[1]))
        else:
            obj.attrs["__children__"] = UNKNOWN
    if name in ("register_buffer", "register_parameter", "add_module") and len(args) >= 2:
        if isinstance(args[0], Number) and isinstance(args[0].const, str):
            value = args[1]
            if name == "register_parameter" and isinstance(value, TensorVal):
                value = replace(value, is_param=True)
            state.heap_write(ref.oid).attrs[args[0].const] = value
        return NONE
    if name in ("register_forward_hook", "register_forward_pre_hook"):
        return interp.register_module_hook(ref, name, args, state, call)
    if name in ("register_full_backward_hook", "register_full_backward_pre_hook", "register_backward_hook"):
        return interp.register_full_backward_hook(ref, args, state, call, name)
    if name in ("state_dict", "load_state_dict"):
        return UNKNOWN
    # Any other method (a backward hook's registration, `apply(fn)`, a method torch added): a
    # function it is given may run whenever torch likes.
    interp.escape([*args, *kwargs.values()], state)
    return UNKNOWN


def mark_children_frozen(state: State, ref: HeapRef, frozen: Tri, depth: int = 0) -> None:
    if depth > 6:
        return
    obj = state.heap.get(ref.oid)
    if obj is None:
        return
    for value in list(obj.attrs.values()) + ([obj.elem] if obj.elem is not None else []):
        items = value.items if isinstance(value, TupleVal) else (value,)
        for item in items:
            if isinstance(item, HeapRef) and item.oid in state.heap and state.heap[item.oid].kind == "module":
                state.heap_write(item.oid).frozen = frozen
                mark_children_frozen(state, item, frozen, depth + 1)


def call_optimizer_method(interp: TorchEngine, state: State, ref: HeapRef, name: str, args: list[Value],
                          kwargs: dict[str, Value], call: ast.Call) -> Value:
    obj = state.heap[ref.oid]
    if name == "step":
        closure = kwargs.get("closure", args[0] if args else None)
        if isinstance(closure, FunctionRef):
            run_step_closure(interp, state, closure, call)
            obj = state.heap[ref.oid]
        interp.emit(StepEvent(stmt=interp.current_stmt(), state=state, call=call, storages=obj.opt_storages,
                              in_backward=interp.run_state.post_accumulate_hooks > 0))
        shares = interp.run_state.grad_shares
        for storage in sorted(obj.opt_storages or ()):
            state.bump(storage, interp.current_stmt())
            # The gradient the step used: the parameter's own, or the one its `.grad` shares.
            for used in (storage, *sorted(shares.get(storage, ()))):
                status = state.grads.get(used)
                if status is not None and status[0] in ("acc", "acc_stale"):
                    state.writable("grads")[used] = ("acc_stepped", interp.current_stmt())
        return NONE
    if name == "zero_grad":
        zero_grads(interp, state, obj.opt_storages, call, set_to_none=_set_to_none(args, kwargs))
        return NONE
    return UNKNOWN


def run_step_closure(interp: TorchEngine, state: State, closure: FunctionRef, call: ast.Call) -> None:
    """``optimizer.step(closure)``: torch calls the closure (which zeroes the gradients, runs the
    forward and the backward, and returns the loss) with gradients on, before it updates the
    parameters; LBFGS calls it again while it searches, so once is what every optimizer does."""
    grad, assumed = state.grad_enabled, state.grad_assumed
    state.grad_enabled, state.grad_assumed = True, False  # torch wraps it in `torch.enable_grad()`
    try:
        interp.call_function(closure, [], {}, state, call)
    finally:
        state.grad_enabled, state.grad_assumed = grad, assumed


def _set_to_none(args: list[Value], kwargs: Mapping[str, Value]) -> Tri:
    """``zero_grad(set_to_none=...)``, given by keyword or first argument (``True`` by default)."""
    if "set_to_none" in kwargs:
        return const_bool(kwargs["set_to_none"])
    return const_bool(args[0]) if args else True


def share_grads(interp: TorchEngine, state: State, storages: frozenset[int], sources: frozenset[int],
                target: ast.Attribute) -> None:
    """``global_param._grad = local_param.grad``: the parameters' ``.grad`` is now the other leaves'
    gradient tensor, with its status (measured under torch: the global optimizer's
    ``zero_grad()``, which sets ``.grad`` to None, leaves that tensor as it was, so the next
    backward adds to it and the next step applies the sum of every earlier gradient)."""
    interp.emit(GradShareEvent(stmt=interp.current_stmt(), state=state, target=target, storages=storages,
                               sources=sources))
    statuses = {state.grads.get(source) for source in sources}
    status = statuses.pop() if len(statuses) == 1 else ("unknown", None)
    for storage in storages:
        if status is None:
            state.writable("grads").pop(storage, None)
        else:
            state.writable("grads")[storage] = status
        interp.run_state.grad_shares[storage] = sources


def zero_grads(interp: TorchEngine, state: State, storages: Collection[int] | None, site: ast.AST, *,
               set_to_none: Tri) -> None:
    """Gradients reset (``zero_grad``, ``p.grad = None``, ``p.grad.zero_()``): event and status.
    A ``.grad`` shared with other leaves (:func:`share_grads`) is zeroed in place with theirs;
    set to None, it stops being shared and theirs is left as it was."""
    interp.emit(ZeroGradEvent(stmt=interp.current_stmt(), state=state, call=site,
                                           storages=frozenset(storages) if storages is not None else None,
                                           set_to_none=set_to_none))
    shares = interp.run_state.grad_shares
    shared = {source for storage in storages or () for source in shares.get(storage, ())}
    for storage in storages or ():
        if set_to_none is not False:
            shares.pop(storage, None)
    if set_to_none is None:
        state.set_grads(shared, "unknown", None)
    elif set_to_none is False:
        storages = {*(storages or ()), *shared}
    for storage in storages or ():
        previous = state.grads.get(storage)
        if previous is not None and previous[0] in ("acc", "acc_stale"):
            state.writable("grads")[storage] = ("zeroed_after_backward", interp.current_stmt())
            if previous[0] == "acc" and previous[1] is not None:
                interp.run_state.zeroed_after[id(interp.current_stmt())] = previous[1]  # the backward it undid
        else:
            state.writable("grads")[storage] = ("zeroed_none" if set_to_none else "zeroed", interp.current_stmt())


def set_training(state: State, ref: HeapRef, mode: Tri, depth: int = 0) -> None:
    """``model.train()`` / ``model.eval()``: the mode of the module and its children."""
    if depth > 6 or ref.oid not in state.heap:
        return
    obj = state.heap_write(ref.oid)
    obj.extra["training"] = mode
    for value in list(obj.attrs.values()) + ([obj.elem] if obj.elem is not None else []):
        for item in (value.items if isinstance(value, TupleVal) else (value,)):
            if isinstance(item, HeapRef) and item.oid in state.heap and state.heap[item.oid].kind == "module":
                set_training(state, item, mode, depth + 1)


#: Ops that return ``(values, indices)``: the indices are integers, never part of a graph.
_WITH_INDICES = {"sort", "topk", "kthvalue", "mode", "cummax", "cummin"}
_WITH_INDICES_GIVEN_DIM = {"max", "min", "median", "nanmedian"}


def with_indices(interp: TorchEngine, short: str, result: Value, rest_args: list[Value], kwargs: Mapping[str, Value],
                 call: ast.Call) -> Value:
    """``x.max(1)``, ``torch.topk(x, k)``: the pair of values (the op's result) and indices."""
    if not isinstance(result, TensorVal):
        return result
    given_dim = "dim" in kwargs or (rest_args and isinstance(rest_args[0], Number))
    if short not in _WITH_INDICES and not (short in _WITH_INDICES_GIVEN_DIM and given_dim):
        return result
    indices = TensorVal(requires_grad=False, leaf=True, storage=interp.fresh(), origin=call, desc=interp.text(call),
                        dtype="int64", why=reasons.INDICES(op=short), why_site=call)
    return ValuesIndices((result, indices))


def multi_output(interp: TorchEngine, info: optable.OpInfo | None, short: str, result: Value,
                 rest_args: list[Value], kwargs: Mapping[str, Value], call: ast.Call) -> Value:
    """The result of an op that returns several tensors, each with the op's graph: a tuple of the
    table's count for a fixed one (``torch.std_mean``: two), a tensor standing for them
    (:attr:`TensorVal.parts`) for one whose schema returns ``Tensor[]`` (``x.chunk(3)``: one to
    three tensors; ``x.unbind()``: as many as the shape says)."""
    if info is None or info.outputs <= 1 or not isinstance(result, TensorVal) or result.parts is not None:
        return result
    if info.sequence:
        return replace(result, parts=_sequence_parts(short, rest_args, kwargs))
    others = tuple(replace(result, storage=interp.fresh() if not info.view else result.storage)
                   for _ in range(info.outputs - 1))
    return TupleVal((result, *others))


def _sequence_parts(short: str, rest_args: list[Value], kwargs: Mapping[str, Value]) -> tuple[int, int | None]:
    """How many tensors a ``Tensor[]`` op gives, as far as its constant arguments say: ``chunk(n)``
    one to ``n`` (fewer when the size does not divide: a size 5 in chunks of 2 gives 3),
    ``tensor_split(n)`` exactly ``n``; otherwise any number."""
    count = rest_args[0] if rest_args else kwargs.get("chunks", kwargs.get("sections"))
    n = count.const if isinstance(count, Number) and type(count.const) is int and count.const > 0 else None
    if n is not None and short == "chunk":
        return 1, n
    if n is not None and short == "tensor_split":
        return n, n
    return 0, None


#: Reductions that give one element when called without a dimension (``loss.mean()``).
_FULL_REDUCTIONS = {"sum", "mean", "prod", "norm", "std", "var", "amax", "amin", "max", "min", "median",
                    "nansum", "nanmean", "nanmedian", "count_nonzero", "all", "any"}
#: Functionals that reduce to one element unless ``reduction="none"`` (the default is "mean").
_LOSSES = {"cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "bce_loss", "poisson_nll_loss", "gaussian_nll_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "cosine_embedding_loss", "triplet_margin_loss", "ctc_loss", "multilabel_margin_loss"}


def reduces_to_one(short: str, rest_args: list[Value], kwargs: Mapping[str, Value]) -> bool:
    """Whether ``short(x, *rest_args, **kwargs)`` certainly returns a one-element tensor."""
    if short in _FULL_REDUCTIONS:
        return not rest_args and not any(key in kwargs for key in ("dim", "axis", "keepdim"))
    if short in _LOSSES:
        reduction = kwargs.get("reduction")
        return reduction is None or (isinstance(reduction, Number) and reduction.const in ("mean", "sum"))
    return False


#: Loss modules whose functional's name is not their class name in snake case.
_LOSS_NAMES = {
    "nn.CrossEntropyLoss": "cross_entropy", "nn.MultiLabelSoftMarginLoss": "multilabel_soft_margin_loss",
    "nn.MultiLabelMarginLoss": "multilabel_margin_loss", "nn.BCELoss": "binary_cross_entropy",
    "nn.BCEWithLogitsLoss": "binary_cross_entropy_with_logits", "nn.NLLLoss": "nll_loss", "nn.MSELoss": "mse_loss",
    "nn.L1Loss": "l1_loss", "nn.KLDivLoss": "kl_div", "nn.CTCLoss": "ctc_loss", "nn.PoissonNLLLoss": "poisson_nll_loss",
    "nn.GaussianNLLLoss": "gaussian_nll_loss",
}


def _loss_short(key: str) -> str:
    """``nn.CrossEntropyLoss`` -> ``cross_entropy``, ``nn.BCEWithLogitsLoss`` ->
    ``binary_cross_entropy_with_logits``."""
    if key in _LOSS_NAMES:
        return _LOSS_NAMES[key]
    name = key.split(".")[-1][: -len("Loss")]
    return "".join(("_" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(name)) + "_loss"


def mark_scalar(result: Value) -> Value:
    return replace(result, scalar=True) if isinstance(result, TensorVal) and not result.scalar else result


def call_tensor_method(interp: TorchEngine, state: State, tensor: TensorVal, receiver_expr: ast.expr | None, name: str,
                       args: list[Value], kwargs: dict[str, Value], call: ast.Call) -> Value:
    result = _call_tensor_method(interp, state, tensor, receiver_expr, name, args, kwargs, call)
    if name in _WITH_INDICES or name in _WITH_INDICES_GIVEN_DIM:
        result = with_indices(interp, name, result, list(args), kwargs, call)
    result = multi_output(interp, optable.lookup(f"Tensor.{name}"), name, result, list(args), kwargs, call)
    reduced = name in _FULL_REDUCTIONS and reduces_to_one(name, list(args), kwargs)
    if reduced or (tensor.scalar and name in _SCALAR_KEEPING_METHODS):
        result = mark_scalar(result)
    return result


def _call_tensor_method(interp: TorchEngine, state: State, tensor: TensorVal, receiver_expr: ast.expr | None, name: str,
                        args: list[Value], kwargs: dict[str, Value], call: ast.Call) -> Value:
    if tensor.opaque and optable.lookup(f"Tensor.{name}") is None and name not in CONVERSIONS and name != "backward":
        return UNKNOWN  # an object of unknown kind (a distribution, a model): not a tensor method
    if name not in _METHODS_NOT_ONLY_OF_TENSORS:
        note_tensor_use(interp, tensor)
    if name == "backward":
        return do_backward(interp, state, tensor, receiver_expr, kwargs, call, "backward", args=args)
    if name == "numpy" and receiver_expr is not None and not args and not kwargs:
        interp.emit(NumpyEvent(stmt=interp.current_stmt(), state=state, tensor=tensor, call=call,
                               receiver=receiver_expr))
    if name in NUMBER_METHODS:
        return Number(None)
    if name == "detach":
        return TensorVal(requires_grad=False, leaf=True, storage=tensor.storage, inference=tensor.inference,
                         origin=call, desc=interp.text(call), dtype=tensor.dtype, device=tensor.device,
                         why=reasons.DETACHED(), why_site=call)
    if name == "detach_":
        detached = TensorVal(requires_grad=False, leaf=True, storage=tensor.storage, origin=call, desc=tensor.desc)
        rebind(interp, state, receiver_expr, detached)
        return detached
    if name == "requires_grad_":
        flag = const_bool(args[0]) if args else (const_bool(kwargs["requires_grad"]) if "requires_grad" in kwargs
                                                 else True)
        set_requires_grad(interp, state, tensor, receiver_expr, flag, "method", interp.current_stmt())
        if tensor.leaf is True:
            return replace(tensor, requires_grad=flag, created_with_grad=call if flag else None)
        return tensor
    if name == "retain_grad":
        rebind(interp, state, receiver_expr, replace(tensor, retains_grad=True))
        return NONE
    if name == "clone":
        return apply_op(interp, state, "Tensor.clone", [tensor], [receiver_expr], call)
    if name in CONVERSIONS:
        return convert(interp, state, tensor, receiver_expr, name, args, kwargs, call)
    if name in ("register_hook",):
        return UNKNOWN
    key = f"Tensor.{name}"
    info = optable.lookup(key)
    if info is None:
        if name.endswith("_") and not name.endswith("__"):
            return apply_inplace(interp, state, key, tensor, receiver_expr, list(args), call, info=None)
        tensors: list[Value] = [tensor, *[a for a in args if isinstance(a, (TensorVal, Unknown))]]
        unseen = apply_op(interp, state, key, tensors, [receiver_expr], call, info=None)
        # A method the table does not know may return several tensors (`x.hsplit(2)`, `x.aminmax()`).
        return replace(unseen, parts=(0, None)) if isinstance(unseen, TensorVal) else unseen
    bound = op_arguments.bind(info, tensor, receiver_expr, args, kwargs, call)
    exprs: list[ast.expr | None]
    if bound is not None:  # `x.gather(1, idx)`: a non-tensor before an input
        inputs, exprs = bound.inputs, bound.exprs
        left_out = any(tensor_may_need_grad(v) for v in flatten_tensor_args(bound.others, state))
    else:
        inputs = [tensor, *args[: len(info.inputs) - 1]]
        exprs = [receiver_expr, *call.args[: len(info.inputs) - 1]]
        for param in info.inputs[len(inputs):]:
            if param in kwargs:
                inputs.append(kwargs[param])
                exprs.append(kwarg_expr(call, param))
        left_out = graph_left_out(list(args), kwargs, len(info.inputs) - 1, info, state)
    if left_out:
        others = flatten_tensor_args(list(args) + [v for k, v in kwargs.items() if k != "out"], state)
        if info.inplace:
            return apply_inplace(interp, state, key, tensor, receiver_expr, others, call, info=None)
        return apply_op(interp, state, key, [tensor, *others], [receiver_expr] + [None] * len(others), call, info=None)
    if info.inplace:
        matched = info if len(inputs) == len(info.inputs) else None
        return apply_inplace(interp, state, key, tensor, receiver_expr, inputs[1:], call, info=matched)
    if len(inputs) != len(info.inputs):
        known: list[Value] = [v for v in inputs if isinstance(v, (TensorVal, Unknown))]
        return apply_op(interp, state, key, known, [None] * len(inputs), call, info=None)
    return apply_op(interp, state, key, inputs, exprs, call, info=info)


def convert(interp: TorchEngine, state: State, tensor: TensorVal, receiver_expr: ast.expr | None, name: str,
            args: list[Value], kwargs: dict[str, Value], call: ast.Call) -> Value:
    """``.to()``/``.double()``/``.cuda()``: a new non-leaf tensor when it really converts, else the tensor itself."""
    target_dtype = None
    target_device = None
    unknown_target = False
    if name in ("double",):
        target_dtype = "float64"
    elif name in ("float",):
        target_dtype = "float32"
    elif name in ("half",):
        target_dtype = "float16"
    elif name == "bfloat16":
        target_dtype = "bfloat16"
    elif name == "cuda":
        target_device = "cuda"
    elif name == "cpu":
        target_device = "cpu"
    elif name in ("to", "type"):
        for value in [*args, kwargs.get("dtype"), kwargs.get("device")]:
            if value is None:
                continue
            dtype = parse_dtype(value, None)
            if dtype is not None:
                target_dtype = dtype
            elif isinstance(value, Number) and isinstance(value.const, str):
                target_device = value.const.split(":")[0]
            elif isinstance(value, TensorVal):
                unknown_target = True
            else:
                unknown_target = True
    else:
        unknown_target = True
    converts: bool | None
    if unknown_target:
        converts = None
    else:
        dtype_change: bool | None = target_dtype is not None and tensor.dtype != target_dtype
        device_change: bool | None = target_device is not None and tensor.device != target_device
        if target_dtype is not None and tensor.dtype is None:
            dtype_change = None
        if target_device is not None and tensor.device is None:
            device_change = None
        if dtype_change or device_change:
            converts = True
        else:
            converts = None if dtype_change is None or device_change is None else False
    if converts is False:
        return tensor
    result = apply_op(interp, state, "Tensor.to", [tensor], [receiver_expr], call)
    if isinstance(result, TensorVal):
        leaf = tensor.leaf if not tensor.requires_grad else (False if converts else None)
        if converts is None and tensor.requires_grad and tensor.leaf:
            result = replace(result, leaf=None)
        elif tensor.requires_grad:
            result = replace(result, leaf=leaf)
        result = replace(result, dtype=target_dtype or tensor.dtype, device=target_device or tensor.device,
                         created_with_grad=tensor.created_with_grad, converted_from=call)
    return result


# -- backward ---------------------------------------------------------------------------------


def do_backward(interp: TorchEngine, state: State, root: Value, root_expr: ast.expr | None, kwargs: Mapping[str, Value],
                call: ast.Call, kind: str, args: Sequence[Value] = ()) -> Value:
    retain = kwargs.get("retain_graph")
    create = kwargs.get("create_graph")
    if kind == "backward" and len(args) >= 2:
        retain = args[1]
    retain_flag = const_bool(retain) if retain is not None else False
    if retain is None and create is not None:
        retain_flag = const_bool(create)
    if isinstance(retain, NoneValue):
        retain_flag = const_bool(create) if create is not None else False
    roots: list[TensorVal] = []
    certain = True
    for tensor in tensors_in(root, state):
        roots.append(tensor)
    if not isinstance(root, TensorVal):
        certain = isinstance(root, TupleVal) and all(isinstance(i, TensorVal) for i in root.items)
    grad_fns = frozenset().union(*(t.grad_fn for t in roots)) if roots else frozenset()
    all_certain = certain and all(t.certain for t in roots)
    must, may = interp.run_state.graph.reach(grad_fns, all_certain)
    stmt = interp.current_stmt()
    leaves: set[int] = set()
    for nid in may:
        leaves |= interp.run_state.graph.nodes[nid].leaves
    create_flag = const_bool(create) if create is not None else False
    if create_flag is not False:
        interp.run_state.create_graph_seen = True
    reach = BackwardReach(
        must=frozenset(must), may=frozenset(may), leaves_must=_leaves_of(interp, must), leaves_may=frozenset(leaves),
        whole=kind == "backward" and all_certain and "inputs" not in kwargs, create_graph=create_flag,
        retain_graph=retain_flag, roots=grad_fns,
        open=not all_certain or not may or any(interp.run_state.graph.nodes[n].partial for n in may))
    if kind == "grad":
        leaves = set()  # autograd.grad returns gradients; it does not touch .grad
    inputs = (args[1] if len(args) >= 2 else kwargs.get("inputs")) if kind == "grad" else kwargs.get("inputs")
    interp.emit(BackwardEvent(stmt=stmt, state=state, call=call, root=root, root_expr=root_expr,
                              retain_graph=retain_flag, kind=kind, must=must, may=may,
                              create_graph=create_flag, leaves=frozenset(leaves), inputs=inputs,
                              enclosing_may=frozenset().union(*interp.run_state.running_backwards)))
    interp.backward_count += 1
    running = interp.run_state.running_backwards
    running.append(frozenset(may))  # a backward one of its hooks runs is nested in this one
    try:
        _run_backward(interp, state, reach, call, kind, may, leaves, stmt)
    finally:
        running.pop()
    if retain_flag is False:
        for nid in must:
            state.writable("freed").setdefault(nid, stmt)
        for nid in may:
            state.writable("may_freed").setdefault(nid, stmt)
    elif retain_flag is None:
        for nid in may:
            state.writable("may_freed").setdefault(nid, stmt)
    interp.run_escaped(state)  # tensor hooks and backward hooks run during the backward
    return NONE


def _run_backward(interp: TorchEngine, state: State, reach: BackwardReach, call: ast.Call, kind: str,
                  may: set[int], leaves: set[int], stmt: ast.stmt) -> None:
    """The hooks the backward reaches, the gradients it accumulates into the leaves, and the
    post-accumulate hooks of those leaves, in torch's order."""
    interp.run_grad_hooks(state, reach, call)  # tensor hooks and the backward hooks of hooked module calls
    if kind == "backward" and (not may or any(interp.run_state.graph.nodes[n].partial for n in may)):
        # Part of this graph is unknown, so are the gradients it fills. The leaves the known part
        # reaches still get this backward's gradient (an unknown input, such as a batch from a
        # loader, adds edges; it never removes these). Another leaf may get one too: a gradient
        # that was reset is now unknown, one that already held a step's worth of gradients still
        # does (more on top changes nothing we say about it).
        for storage, status in list(state.grads.items()):
            if storage not in leaves and status[0] not in ("acc", "acc_stepped", "acc_stale"):
                state.writable("grads")[storage] = ("unknown", None)
    for storage in leaves:
        previous = state.grads.get(storage)
        if previous is not None and previous[0] in ("acc_stepped", "acc_stale"):
            state.writable("grads")[storage] = ("acc_stale", previous[1])
        else:
            state.writable("grads")[storage] = ("acc", stmt)
    if kind == "backward":
        interp.run_post_accumulate_hooks(state, reach, call)  # they see (and may step) the filled .grad


def _leaves_of(interp: TorchEngine, nodes: set[int]) -> frozenset[int]:
    """The leaf storages the graph nodes feed."""
    graph = interp.run_state.graph
    return frozenset().union(*(graph.nodes[nid].leaves for nid in nodes))
