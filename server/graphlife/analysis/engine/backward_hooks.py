"""Tensor hooks and full backward hooks, run where torch runs them: inside the backward.

Why: Grad-CAM, saliency maps and gradient logging keep what torch hands to a hook
during ``loss.backward()`` (``self.gradients = grad_output[0]``,
``grads.append(grad)``), and the code after the backward reads it. An engine that
does not run the hook knows nothing of those places; one that weakens them at every
backward (as for code it cannot follow) cannot tell that the gradient has no graph
(reading it is fine, a backward through it raises) nor that, under
``create_graph=True``, it has one (keeping it every step keeps every step's graph).

So, as torch does (``torch/utils/hooks.py``' ``BackwardHook``, ``Tensor.register_hook``):

- ``t.register_hook(fn)`` on a tensor the engine knows keeps ``fn`` on that tensor: on
  a leaf, for every backward that reaches the leaf; on a non-leaf, for its graph node
  (that graph's backward only). The backward calls ``fn(grad)``; ``grad`` has the
  tensor's dtype and device and a graph only under ``create_graph=True``, and the hook
  runs with gradients on only then (``torch.is_grad_enabled()`` is the backward's
  ``create_graph``: what it computes from a parameter has no graph either). What a hook
  returns (not ``None``) is the gradient the next hook of that tensor gets.
- ``module.register_full_backward_hook(fn)`` and ``register_full_backward_pre_hook(fn)``
  keep ``fn`` on the module; torch reads the module's hooks at each call, so each call
  made while one is registered carries it (a hook removed after the call still runs for
  that call's graph). A backward through the call's outputs calls the pre-hooks with
  ``(module, grad_output)`` and the hooks with ``(module, grad_input, grad_output)``:
  tuples with an item per output, per positional argument of the call, ``None`` where
  that item is not a tensor requiring grad. A pre-hook's result replaces
  ``grad_output``, a hook's replaces ``grad_input`` for the next hook.
- ``leaf.register_post_accumulate_grad_hook(fn)`` keeps ``fn`` on the leaf: each
  ``backward()`` that accumulates into the leaf's ``.grad`` calls ``fn(leaf)`` after it
  did (``autograd.grad`` accumulates nothing and runs none): an optimizer step there
  (fused into the backward) uses, and a ``zero_grad()`` there resets, that gradient.
- The deprecated ``module.register_backward_hook(fn)``: torch hangs ``fn`` on the node of
  the call's first output (the forward's last op) and passes that op's gradients, tuples
  whose length depends on the op; it always may run, with gradients the engine does not know.
- A hook runs for certain only where the backward certainly reaches what it is
  registered on, it is registered on every path, and the backward runs the whole graph
  (``torch.autograd.grad`` and ``inputs=`` run only part of it). Elsewhere it may run:
  the state where it ran is joined with the state where it did not. A backward whose
  graph has parts the engine does not see (an unknown loss, an input it could not
  interpret) may reach any hook through them: each may run.
- Unseen code may run a backward (a trainer's ``fit``): at a call the engine cannot
  follow, what the followed hooks write is weakened, as for an escaped function. A hook
  the engine cannot follow (not a function of the project, registered on a value it
  does not know) escapes as before.
"""

from __future__ import annotations

import ast

from graphlife.analysis import no_graph_reasons as reasons
from graphlife.analysis.engine.core import EngineCore
from graphlife.analysis.grad_hooks import (
    MODULE,
    MODULE_LEGACY,
    MODULE_PRE,
    POST_ACCUMULATE,
    TENSOR,
    BackwardReach,
    GradHook,
    followable,
    without,
)
from graphlife.analysis.state import State
from graphlife.analysis.torch_api import param_storages
from graphlife.analysis.values import (
    NONE,
    UNKNOWN,
    Callbacks,
    FunctionRef,
    HeapRef,
    NoneValue,
    PartialCall,
    TensorVal,
    TupleVal,
    Unknown,
    Value,
    replace,
)

#: Where a module keeps its full backward hooks and pre-hooks, by the method that registers them.
BACKWARD_TABLES = {
    "register_full_backward_hook": "__full_backward_hooks__",
    "register_full_backward_pre_hook": "__full_backward_pre_hooks__",
    "register_backward_hook": "__backward_hooks__",
}
#: The tables of full backward hooks: torch wraps the module's inputs and outputs in views for them.
FULL_BACKWARD_TABLES = frozenset({"__full_backward_hooks__", "__full_backward_pre_hooks__"})
_KIND_OF_TABLE = {"__full_backward_hooks__": MODULE, "__full_backward_pre_hooks__": MODULE_PRE,
                  "__backward_hooks__": MODULE_LEGACY}
#: The order in which torch runs the hooks of one module call: pre-hooks at its outputs'
#: gradients, tensor hooks of its outputs, then the hooks once its inputs' gradients are known.
_RUN_ORDER = {MODULE_PRE: 0, TENSOR: 1, MODULE_LEGACY: 2, MODULE: 2, POST_ACCUMULATE: 3}


class BackwardHookParts(EngineCore):
    """Tensor hooks and full backward hooks: registered, carried by module calls, run by backwards."""

    # -- registration ---------------------------------------------------------------------------------
    def register_tensor_hook(self, tensor: TensorVal, args: list[Value], state: State, site: ast.AST) -> Value:
        """``t.register_hook(fn)``: keep ``fn`` on the tensor (its handle can take it off)."""
        hook = followable(args[0]) if args else None
        if hook is None or tensor.requires_grad is False:
            self.escape(args, state)  # torch raises on a tensor without grad; nothing to follow
            return UNKNOWN
        storages = param_storages(tensor, state) if tensor.leaf is not False else frozenset()
        nodes = tensor.grad_fn if tensor.leaf is not True else frozenset()
        if not storages and not nodes:
            self.escape(args, state)  # on what, the engine does not know
            return UNKNOWN
        certain = (tensor.certain and tensor.requires_grad is True and tensor.leaf is not None
                   and (tensor.leaf is False or tensor.storage is not None))
        entry = GradHook(hook=hook, kind=TENSOR, nodes=nodes, storages=storages, grads_of=(tensor,),
                         certain=certain, site=site, order=self.fresh())
        return self._registered(entry, state, site)

    def register_post_accumulate_hook(self, tensor: TensorVal, args: list[Value], state: State,
                                      site: ast.AST) -> Value:
        """``leaf.register_post_accumulate_grad_hook(fn)``: keep ``fn`` on the leaf; every
        ``backward()`` that accumulates into its ``.grad`` then calls ``fn(leaf)`` (torch: not
        ``autograd.grad``, which accumulates nothing). Torch raises on a non-leaf or a tensor that
        does not require grad; the engine follows only a leaf it knows."""
        hook = followable(args[0]) if args else None
        storages = param_storages(tensor, state) if tensor.leaf is True and tensor.requires_grad is not False \
            else frozenset()
        if hook is None or not storages:
            self.escape(args, state)
            return UNKNOWN
        certain = tensor.certain and tensor.requires_grad is True
        entry = GradHook(hook=hook, kind=POST_ACCUMULATE, storages=storages, grads_of=(tensor,),
                         certain=certain, site=site, order=self.fresh())
        return self._registered(entry, state, site)

    def register_backward_module_hook(self, module: HeapRef, method: str, hook: Value, state: State,
                                      site: ast.AST) -> GradHook | None:
        """A full backward (pre-)hook the engine follows: noted as registered (unseen code that
        may run a backward weakens what it writes); its module keeps it for its next calls."""
        followed = followable(hook)
        if followed is None:
            return None
        entry = GradHook(hook=followed, kind=_KIND_OF_TABLE[BACKWARD_TABLES[method]], module=module, site=site,
                         order=self.fresh())
        state.grad_hooks = state.grad_hooks | {entry}
        return entry

    def _registered(self, entry: GradHook, state: State, site: ast.AST) -> Value:
        state.grad_hooks = state.grad_hooks | {entry}
        handle = self.new_object(state, "hook_handle", site)
        state.heap[handle.oid].extra["grad_hook"] = entry
        return handle

    def remove_grad_hook(self, entry: GradHook, state: State) -> None:
        """``handle.remove()``: the hook does not run at later backwards (nor is it registered)."""
        state.grad_hooks = without(state.grad_hooks, entry)

    # -- module calls ----------------------------------------------------------------------------------
    def note_hooked_call(self, module: HeapRef, args: list[Value], output: Value, state: State,
                         site: ast.AST) -> None:
        """A call of a module with full backward hooks: each hook it has now runs at a backward
        through this call's outputs (torch reads the hooks at the call)."""
        obj = state.heap.get(module.oid)
        if obj is None or state.grad_enabled is False:
            return
        if not state.grad_hooks and not any(isinstance(obj.attrs.get(table), Callbacks) for table in _KIND_OF_TABLE):
            return  # no table of hooks on it, and no hook registered anywhere the engine saw: most calls
        outputs = output.items if isinstance(output, TupleVal) else (output,)
        nodes = frozenset().union(*(o.grad_fn for o in outputs if isinstance(o, TensorVal)))
        followed = all(isinstance(o, (TensorVal, NoneValue)) for o in outputs)
        for table, kind in _KIND_OF_TABLE.items():
            found = obj.attrs.get(table)
            # A hook certainly carried by this call: registered on every path, on a call whose
            # outputs are certain, with gradients certainly on.
            certain_call = state.grad_enabled is True and all(o.certain for o in outputs if isinstance(o, TensorVal))
            if isinstance(found, Callbacks):
                hooks = [f for f in (followable(item) for item in found.items) if f is not None]
                sure = found.sure if certain_call else frozenset()
            else:
                # The table is not known (code the engine did not see had the module): the hooks
                # the engine saw registered on it may still be there.
                hooks = [e.hook for e in state.grad_hooks if e.kind == kind and not e.nodes and e.module == module]
                sure = frozenset()
            if not hooks:
                continue
            if not followed:
                # What the call returns is not known, nor where its graph is: the hooks may run anywhere.
                self.escape(list[Value](hooks), state)
                continue
            for hook in sorted(hooks, key=_function_key):
                hooked, certain = nodes, hook in sure
                if kind == MODULE_LEGACY:
                    # Torch hangs it on the node that made the first output that has one (the
                    # module's last op), and what it passes depends on that op: it may run.
                    first = next((o for o in outputs if isinstance(o, TensorVal) and o.grad_fn), None)
                    hooked, certain = (first.grad_fn if first is not None else frozenset()), False
                if not hooked:
                    continue
                entry = GradHook(hook=hook, kind=kind, nodes=hooked, grads_of=tuple(outputs), inputs=tuple(args),
                                 module=module, certain=certain, site=site, order=self.fresh())
                state.grad_hooks = state.grad_hooks | {entry}

    # -- the backward ----------------------------------------------------------------------------------
    def run_grad_hooks(self, state: State, reach: BackwardReach, site: ast.AST) -> None:
        """Run the hooks this backward reaches, in torch's order (the output end of the graph
        first, the leaves last), each for certain or joined with the state where it did not run.
        Where the graph has parts the engine does not see, every hook may be reached through them."""
        hooks = [h for h in state.grad_hooks if h.kind != POST_ACCUMULATE
                 and (reach.open or h.nodes & reach.may or h.storages & reach.leaves_may)]
        if not hooks:
            return
        hooks.sort(key=lambda h: (h.leaf_hook, -max(h.nodes, default=0), _RUN_ORDER[h.kind], h.order))
        grads: dict[tuple[object, ...], Value] = {}  # what the previous hook of the same place returned
        for entry in hooks:
            sure = reach.whole and entry.certain and bool(
                entry.nodes & reach.must if entry.nodes else entry.storages & reach.leaves_must)
            if sure:
                self._run_one(entry, state, reach, site, grads)
                continue
            ran = state.copy()
            self._run_one(entry, ran, reach, site, {})
            state.adopt(State.join_all([ran, state]))
        if reach.retain_graph is False:
            # A graph freed by this backward runs no hook again (a second backward through it raises).
            spent = {h for h in state.grad_hooks if h.nodes and h.nodes <= reach.must and not h.storages}
            if spent:
                state.grad_hooks = state.grad_hooks - spent

    def run_post_accumulate_hooks(self, state: State, reach: BackwardReach, site: ast.AST) -> None:
        """After a ``backward()`` accumulated into the leaves' ``.grad``, the post-accumulate hooks
        of the leaves it reached, each with its leaf (in the order they were registered): for
        certain where the backward certainly reaches the leaves and the hook is registered on
        every path, else joined with the state where it did not run."""
        hooks = sorted((h for h in state.grad_hooks if h.kind == POST_ACCUMULATE
                        and (reach.open or h.storages & reach.leaves_may)), key=lambda h: h.order)
        for entry in hooks:
            # Certain where the backward certainly reaches every leaf it may be registered on (a
            # parameter of `model.parameters()` stands for each of them).
            if reach.whole and entry.certain and entry.storages <= reach.leaves_must:
                self._run_one(entry, state, reach, site, {})
                continue
            ran = state.copy()
            self._run_one(entry, ran, reach, site, {})
            state.adopt(State.join_all([ran, state]))

    def _run_one(self, entry: GradHook, state: State, reach: BackwardReach, site: ast.AST,
                 grads: dict[tuple[object, ...], Value]) -> None:
        """Run one hook as the autograd engine does: with gradients on only under ``create_graph``
        (what a hook computes from a parameter has no graph otherwise)."""
        outer = state.grad_enabled
        state.grad_enabled = reach.create_graph
        counted = 1 if reach.create_graph is False else 0
        self.run_state.hooks_without_grad += counted
        try:
            self._call_hook(entry, state, reach, site, grads)
        finally:
            self.run_state.hooks_without_grad -= counted
            state.grad_enabled = outer if state.grad_enabled == reach.create_graph else None

    def _call_hook(self, entry: GradHook, state: State, reach: BackwardReach, site: ast.AST,
                   grads: dict[tuple[object, ...], Value]) -> None:
        if entry.kind == POST_ACCUMULATE:
            self.run_state.post_accumulate_hooks += 1
            try:
                self._call(entry.hook, [entry.tensor() or UNKNOWN], state, site)
            finally:
                self.run_state.post_accumulate_hooks -= 1
            return
        if entry.kind == TENSOR:
            place: tuple[object, ...] = (entry.nodes, entry.storages)
            tensor = entry.tensor()
            grad = grads.get(place) or self.hook_gradient(tensor, reach, site)
            out = self._call(entry.hook, [grad], state, site)
            if isinstance(out, (TensorVal, Unknown)):
                grads[place] = out
            return
        module = entry.module if entry.module is not None else UNKNOWN
        if entry.kind == MODULE_LEGACY:
            # The gradients of the module's last op: tuples whose length and items the engine does
            # not know (what it returns replaces that op's grad_input: not followed).
            self._call(entry.hook, [module, UNKNOWN, UNKNOWN], state, site)
            return
        out_place = ("output", entry.nodes)
        grad_output = grads.get(out_place) or TupleVal(tuple(self.hook_gradient(o, reach, site)
                                                            for o in entry.grads_of))
        if entry.kind == MODULE_PRE:
            out = self._call(entry.hook, [module, grad_output], state, site)
            if not isinstance(out, NoneValue):
                grads[out_place] = out
            return
        in_place = ("input", entry.nodes)
        grad_input = grads.get(in_place) or TupleVal(tuple(self.hook_gradient(a, reach, site)
                                                          for a in entry.inputs))
        out = self._call(entry.hook, [module, grad_input, grad_output], state, site)
        if not isinstance(out, NoneValue):
            grads[in_place] = out

    def _call(self, hook: FunctionRef | PartialCall, args: list[Value], state: State, site: ast.AST) -> Value:
        """Call a hook with the arguments torch passes (after those a ``partial`` binds)."""
        kwargs: dict[str, Value] = {}
        while isinstance(hook, PartialCall):
            args = [*hook.args, *args]
            kwargs = {**dict(hook.kwargs), **kwargs}
            if not isinstance(hook.func, (FunctionRef, PartialCall)):
                return UNKNOWN
            hook = hook.func
        return self.call_function(hook, args, kwargs, state, site)

    def gradient_has_graph(self, like: TensorVal, reach: BackwardReach) -> bool | None:
        """Does the gradient toward ``like`` have a graph? Never without ``create_graph``; with it,
        only where the gradient depends on something that requires grad (that of ``(w * 2).sum()``
        is a constant and has none). Certain when the backward certainly goes, between its root
        and ``like``, through an op whose gradient multiplies by another operand that is a leaf
        requiring grad (``x @ weight``: the gradient toward ``x`` is ``g @ weight.T``); else maybe."""
        if reach.create_graph is False:
            return False
        if reach.create_graph is not True or not like.certain:
            return None
        graph = self.run_state.graph
        must = reach.must
        target: int | None = None
        if like.leaf is True and like.storage is not None:
            target = like.storage
            first = {nid for nid in must if target in graph.nodes[nid].leaves}
        elif like.leaf is False and like.grad_fn:
            first = {nid for nid in must if graph.nodes[nid].parents & like.grad_fn}
        else:
            return None
        above: dict[int, list[int]] = {}
        for nid in must:
            for parent in graph.nodes[nid].parents:
                above.setdefault(parent, []).append(nid)
        between, stack = set(first), list(first)
        while stack:
            for child in above.get(stack.pop(), ()):
                if child not in between:
                    between.add(child)
                    stack.append(child)
        for nid in between:
            node = graph.nodes[nid]
            excluded = target if nid in first else None  # the operand the gradient goes to
            if _multiplies(node.op) and any(s.storage in node.leaves and s.storage != excluded for s in node.saves):
                return True
        return None

    def hook_gradient(self, like: Value | None, reach: BackwardReach, site: ast.AST) -> Value:
        """The gradient torch hands a hook for ``like``: ``None`` where ``like`` is not a tensor
        that requires grad; a new tensor of its dtype and device with a graph only under
        ``create_graph=True`` (then hanging off the graph it is the gradient through)."""
        if not isinstance(like, TensorVal):
            return UNKNOWN if isinstance(like, Unknown) else NONE
        if like.requires_grad is False:
            return NONE
        needs = self.gradient_has_graph(like, reach)
        grad = TensorVal(requires_grad=needs, leaf=True if needs is False else None, storage=self.fresh(),
                         origin=site, desc="grad", dtype=like.dtype, device=like.device)
        if needs is False:
            grad = replace(grad, why=reasons.A_HOOK_GRAD(), why_site=site)
        else:
            node = self.run_state.graph.add(
                op="<backward>", site=site, parents=reach.roots, parents_certain=False, saves=(),
                saves_certain=False, iteration=self.iteration(), line_desc=self.text(site),
                leaves=reach.leaves_may, pattern="", partial=True,
            )
            grad = replace(grad, grad_fn=frozenset({node.nid}), certain=needs is True, leaf=False if needs else None)
        return grad if like.requires_grad is True else grad.join(NONE)


def _multiplies(op: str) -> bool:
    """Ops whose gradient toward one operand is the incoming gradient times (or matrix times)
    another operand: if that operand requires grad, so does the gradient (under create_graph)."""
    return op.rsplit(".", 1)[-1] in _MULTIPLYING_OPS


_MULTIPLYING_OPS = frozenset({
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "linear", "bilinear", "conv1d", "conv2d", "conv3d",
    "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "mul", "__mul__", "__rmul__", "einsum", "addmm",
})


def _function_key(hook: FunctionRef | PartialCall) -> int:
    """The function a hook calls, as a stable order between the hooks of one module."""
    while isinstance(hook, PartialCall) and isinstance(hook.func, (FunctionRef, PartialCall)):
        hook = hook.func
    return hook.key if isinstance(hook, FunctionRef) else 0
