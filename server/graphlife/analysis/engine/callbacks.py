"""Code that runs without being called by name: lambdas, hooks, callbacks, and what unseen code may write.

Why here: torch runs a module's forward hooks inside ``x = layer(x)``, a tensor's
hooks inside ``loss.backward()``, and a library runs the callbacks it is given
whenever it likes. A hook that stores the layer's output in ``self.features``
makes that attribute a tensor with a graph, though no line of the training loop
assigns it; an engine that did not know would keep what ``__init__`` put there and
report a backward without a graph (a false error, the worst outcome).

So, as torch does:

- A lambda is a function like any other (its body one ``return``).
- ``module.register_forward_hook(fn)`` and ``register_forward_pre_hook(fn)`` on a
  module the engine knows keep ``fn`` on the module; a call of the module runs its
  pre-hooks with ``(module, args)`` before the forward and its hooks with
  ``(module, args, output)`` after, and what a hook returns (when not ``None``)
  replaces the arguments or the output. ``handle.remove()`` takes it off again.
- ``t.register_hook(fn)``, ``t.register_post_accumulate_grad_hook(fn)`` and
  ``module.register_full_backward_hook(fn)`` (and its pre-hook, and the deprecated
  ``register_backward_hook``, which may run) keep ``fn`` where torch keeps it, and the
  backwards that reach it run it with what torch passes
  (:mod:`graphlife.analysis.engine.backward_hooks`).
- A function handed to code the engine does not follow (a hook registered on a
  module or tensor it does not know, a hook that is not a function of the project,
  a callback given to a library) *escapes*: from then on
  it may run at any call the engine cannot see into, at any module call and at any
  backward. There, what it may write is
  weakened (:mod:`graphlife.analysis.unseen_writes`): the attributes and containers
  it writes through its ``self`` or the names of its module and enclosing scopes.
- A call the engine cannot follow may write the containers and objects it is given
  (and, for a method of an object whose class it cannot see, that object): what they
  hold is weakened too.
"""

from __future__ import annotations

import ast
import functools

from graphlife.analysis.engine.backward_hooks import BACKWARD_TABLES, FULL_BACKWARD_TABLES, BackwardHookParts
from graphlife.analysis.escaped_runs import EscapedReads, EscapedRuns
from graphlife.analysis.grad_hooks import GradHook
from graphlife.analysis.state import State
from graphlife.analysis.unseen_writes import function_effects, weaken_object, weaken_place
from graphlife.analysis.values import (
    NONE,
    UNKNOWN,
    Callbacks,
    FunctionRef,
    HeapRef,
    NoneValue,
    Number,
    PartialCall,
    QualName,
    TensorVal,
    TupleVal,
    Unknown,
    Value,
    replace,
)

#: Where a module keeps its hooks, by the method that registers them.
HOOK_TABLES = {"register_forward_hook": "__forward_hooks__", "register_forward_pre_hook": "__forward_pre_hooks__"}

#: Module methods whose hook makes torch wrap the module's inputs and outputs in
#: ``BackwardHookFunction`` views (an in-place change of one raises: GL110).
FULL_BACKWARD_HOOK_METHODS = frozenset({"register_full_backward_hook", "register_full_backward_pre_hook"})

#: Module methods that register code torch runs during backward (run where the engine cannot follow).
BACKWARD_HOOK_METHODS = frozenset({
    "register_full_backward_hook", "register_backward_hook", "register_full_backward_pre_hook",
    "register_state_dict_pre_hook", "register_load_state_dict_post_hook",
})


class CallbackParts(BackwardHookParts):
    """Lambdas as functions, module hooks run where torch runs them, and escaped callables."""

    # -- lambdas ------------------------------------------------------------------------------------------
    def lambda_function(self, expr: ast.Lambda, state: State) -> FunctionRef:
        """A lambda as a function whose body returns its expression (made once per lambda, so its
        identity is stable: inlining, the memo and the unit cache key on it)."""
        node: ast.FunctionDef | None = getattr(expr, "_graphlife_function", None)
        if node is None:
            node = ast.FunctionDef(name="<lambda>", args=expr.args, body=[ast.Return(value=expr.body)],
                                   decorator_list=[], returns=None, type_comment=None)
            setattr(node, "type_params", [])  # noqa: B010 - a field of Python 3.12's FunctionDef only
            setattr(expr, "_graphlife_function", node)  # noqa: B010 - a cache hung on the node
            setattr(node, "_graphlife_effects", function_effects(expr))  # noqa: B010
        # Where the lambda is now (the language server moves the statements it keeps after an edit).
        ast.copy_location(node, expr)
        ast.copy_location(node.body[0], expr.body)
        module = self.module_of(expr)
        self.adopt_synthetic(node, expr, module)
        return FunctionRef(node=node, key=id(node), closure=self.closure_of(expr, state))

    def closure_of(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                   state: State) -> tuple[tuple[str, Value], ...]:
        """What a function defined in a function reads of the enclosing function's names, as they
        are where it is defined. Python reads them when the function runs; the engine uses these
        values only for names its caller does not have (a hook called from the training loop,
        long after ``get_activation(name)`` returned), and the caller's otherwise, as before."""
        enclosing = self.enclosing_function(node)
        if not isinstance(enclosing, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return ()
        outer = self.local_names(enclosing) | {a.arg for a in _all_params(enclosing.args)}
        free = free_names(node) & outer
        return tuple((name, state.env[name]) for name in sorted(free) if name in state.env)

    def adopt_synthetic(self, node: ast.FunctionDef, expr: ast.Lambda, module: object) -> None:
        """Place a lambda's function in its module's tree index (under the lambda), so that the
        code it runs is found in the right module and its region read by the unit cache."""
        parents = getattr(getattr(module, "index", None), "parents", None)
        if isinstance(parents, dict) and id(node) not in parents:
            parents[id(node)] = expr
            parents[id(node.body[0])] = node

    # -- escaped callables --------------------------------------------------------------------------------
    def escape(self, values: list[Value], state: State, *, later: bool = True) -> None:
        """The functions among ``values`` are handed to code the engine does not follow: they may
        run now, and (``later``: the code keeps them) at any later point where unseen code runs."""
        found = _callables(values)
        if not found:
            return
        if later:
            state.escaped = state.escaped | frozenset(found)
        for func in found:
            self.weaken_effects(func, state)

    @functools.cached_property
    def escaped_runs(self) -> EscapedRuns:
        """The runs of escaped functions that changed nothing (:mod:`graphlife.analysis.escaped_runs`)."""
        return EscapedRuns()

    def run_escaped(self, state: State) -> None:
        """Code the engine does not see runs here (a call it cannot follow, a module call, a
        backward): each escaped function may run, and what it writes is weakened. Skipped where
        everything it would read is what it read the last time it changed nothing."""
        escaped = state.escaped
        if not escaped or self.escaped_runs.needless(escaped, state):
            return
        reads = EscapedReads()
        for func in escaped:
            self.weaken_effects(func, state, reads)
        self.escaped_runs.ran(escaped, state, reads)

    def weaken_effects(self, func: Value, state: State, reads: EscapedReads | None = None) -> None:
        """Weaken every place ``func`` may write when it runs unseen (noting in ``reads``, when
        given, the names and objects looked at)."""
        if not isinstance(func, FunctionRef):
            return
        effects = function_effects(func.node)
        if not effects.roots and not effects.globals:
            return  # it writes nothing the engine tracks
        params = func.node.args.posonlyargs + func.node.args.args
        first = params[0].arg if params and func.bound_self is not None else None
        heap_reads = reads.objects if reads is not None else None
        for root, writes in effects.roots.items():
            if root == first:
                target = func.bound_self
            else:
                target = reads.name(state, root) if reads is not None else state.env.get(root)
            if not isinstance(target, HeapRef):
                continue
            if heap_reads is not None:
                heap_reads.setdefault(target.oid, state.heap.get(target.oid))
            if target.oid not in state.heap:
                continue
            if writes.whole:
                weaken_object(state, target.oid, reads=heap_reads)
            else:
                weaken_object(state, target.oid, writes.as_attribute_writes, reads=heap_reads)
        for name in effects.globals:
            value = reads.name(state, name) if reads is not None else state.env.get(name)
            if value is not None:
                weakened = weaken_place(state, value, heap_reads)
                if weakened is not value:  # already as weak: left as it is (a call changing nothing stays pure)
                    state.env[name] = weakened

    def unseen_call(self, values: list[Value], state: State, receiver: Value | None = None) -> None:
        """A call the engine cannot follow: the functions it is given escape, the objects it is
        given (and the receiver of the method) may be written, and escaped functions may run."""
        self.escape(values, state)
        for value in [*values, *([receiver] if receiver is not None else [])]:
            for held in _heap_refs(value):
                if held.oid in state.heap:
                    weaken_object(state, held.oid)
        self.run_escaped(state)
        for entry in state.grad_hooks:  # it may run a backward, and so the hooks the engine follows
            for func in _callables([entry.hook]):
                self.weaken_effects(func, state)

    # -- module hooks ---------------------------------------------------------------------------------------
    def register_module_hook(self, module: HeapRef, method: str, args: list[Value], state: State,
                             site: ast.AST) -> Value:
        """``module.register_forward_hook(fn)``: keep ``fn`` on the module (the handle it returns
        can take it off); a function the engine cannot follow escapes instead."""
        hook = args[0] if args else UNKNOWN
        table = HOOK_TABLES.get(method)
        if table is None or not isinstance(hook, FunctionRef):
            self.escape(args, state)
            return UNKNOWN
        obj = state.heap_write(module.oid)
        obj.attrs[table] = _with_hook(obj.attrs.get(table), hook)
        handle = self.new_object(state, "hook_handle", site)
        handle_obj = state.heap[handle.oid]
        handle_obj.attrs["__module__"] = module
        handle_obj.attrs["__hook__"] = hook
        handle_obj.extra["table"] = table
        return handle

    def register_full_backward_hook(self, module: HeapRef, args: list[Value], state: State,
                                    site: ast.AST, method: str = "register_full_backward_hook") -> Value:
        """``module.register_full_backward_hook(fn)`` (or ``..._pre_hook``): the module keeps
        ``fn``, and each later call of it carries it into the backward through its outputs, which
        runs it (:mod:`graphlife.analysis.engine.backward_hooks`); a function the engine cannot
        follow escapes instead. From now on torch passes the module's inputs and outputs through
        ``BackwardHookFunction`` (:meth:`through_backward_hooks`)."""
        hook = args[0] if args else UNKNOWN
        entry = self.register_backward_module_hook(module, method, hook, state, site)
        if entry is None:
            self.escape(args, state)
        table = BACKWARD_TABLES[method]
        obj = state.heap_write(module.oid)
        obj.attrs[table] = _with_hook(obj.attrs.get(table), hook)
        if table in FULL_BACKWARD_TABLES:
            obj.backward_hooked = True
        handle = self.new_object(state, "hook_handle", site)
        handle_obj = state.heap[handle.oid]
        handle_obj.attrs["__module__"] = module
        handle_obj.attrs["__hook__"] = hook
        handle_obj.extra["table"] = table
        if entry is not None:
            handle_obj.extra["grad_hook"] = entry
        return handle

    def through_backward_hooks(self, module: HeapRef, value: Value, state: State, site: ast.AST) -> Value:
        """What the module's forward gets, or its call returns, when a full backward hook is
        registered: each tensor that requires grad becomes a view made by ``BackwardHookFunction``
        (same storage; only where the hook is certainly registered and gradients are on)."""
        obj = state.heap.get(module.oid)
        if obj is None or obj.backward_hooked is not True or state.grad_enabled is not True:
            return value
        if isinstance(value, TensorVal) and value.requires_grad is True and value.certain:
            return replace(value, hook_view=site)
        if isinstance(value, TupleVal):
            return TupleVal(tuple(self.through_backward_hooks(module, item, state, site) for item in value.items))
        return value

    def remove_hook(self, handle: HeapRef, state: State) -> Value:
        """``handle.remove()``: the hook no longer runs."""
        obj = state.heap.get(handle.oid)
        if obj is None:
            return NONE
        entry = obj.extra.get("grad_hook")
        if isinstance(entry, GradHook):
            self.remove_grad_hook(entry, state)
        module, hook, table = obj.attrs.get("__module__"), obj.attrs.get("__hook__"), obj.extra.get("table")
        if isinstance(module, HeapRef) and module.oid in state.heap and isinstance(table, str):
            current = state.heap[module.oid].attrs.get(table)
            if isinstance(current, Callbacks) and hook in current.items:
                writable = state.heap_write(module.oid)
                left = current.items - {hook}
                writable.attrs[table] = Callbacks(left, current.sure - {hook})
                if table in FULL_BACKWARD_TABLES and not any(
                        isinstance(t, Callbacks) and t.items
                        for t in (writable.attrs.get(other) for other in FULL_BACKWARD_TABLES)):
                    writable.backward_hooked = False
        return NONE

    def module_hooks(self, module: HeapRef, table: str, state: State) -> list[tuple[FunctionRef, bool]]:
        """The module's hooks in ``table``, each with whether it certainly runs (registered on
        every path, not possibly removed by code the engine did not see)."""
        obj = state.heap.get(module.oid)
        found = obj.attrs.get(table) if obj is not None else None
        if not isinstance(found, Callbacks):
            return []
        hooks = sorted((f for f in found.items if isinstance(f, FunctionRef)), key=lambda f: f.key)
        return [(hook, hook in found.sure) for hook in hooks]

    def run_pre_hooks(self, module: HeapRef, args: list[Value], state: State, site: ast.AST) -> list[Value]:
        """The module's forward pre-hooks, called with ``(module, args)``: a hook that returns
        something else than ``None`` gives the forward its arguments (a tuple, or one value). A
        hook that may not be registered runs joined with the state where it did not."""
        for hook, sure in self.module_hooks(module, "__forward_pre_hooks__", state):
            ran = state if sure else state.copy()
            out = self.call_function(hook, [module, TupleVal(tuple(args))], {}, ran, site)
            new_args = _arguments_from_pre_hook(out, args)
            if not sure:
                state.adopt(State.join_all([ran, state]))
                new_args = ([a.join(b) for a, b in zip(new_args, args)] if len(new_args) == len(args)
                            else [_unknown_like(arg) for arg in args])
            args = new_args
        return args

    def run_forward_hooks(self, module: HeapRef, args: list[Value], output: Value, state: State,
                          site: ast.AST) -> Value:
        """The module's forward hooks, called with ``(module, args, output)`` after its forward: a
        hook that returns something else than ``None`` replaces the output. A hook that may not be
        registered runs joined with the state where it did not."""
        for hook, sure in self.module_hooks(module, "__forward_hooks__", state):
            ran = state if sure else state.copy()
            out = self.call_function(hook, [module, TupleVal(tuple(args)), output], {}, ran, site)
            new_output = output
            if not isinstance(out, NoneValue):
                new_output = _unknown_like(output) if out is UNKNOWN else out
            if not sure:
                state.adopt(State.join_all([ran, state]))
                new_output = new_output.join(output)
            output = new_output
        return output


def _with_hook(current: Value | None, hook: Value) -> Callbacks:
    """A module's hook table with ``hook`` registered (on this path: it certainly runs)."""
    if isinstance(current, Callbacks):
        return Callbacks(current.items | {hook}, current.sure | {hook})
    return Callbacks(frozenset({hook}), frozenset({hook}))


def _arguments_from_pre_hook(out: Value, args: list[Value]) -> list[Value]:
    """The forward's arguments after a pre-hook returned ``out``."""
    if isinstance(out, NoneValue):
        return args
    if isinstance(out, TupleVal):
        return list(out.items)
    if out is UNKNOWN:
        return [_unknown_like(arg) for arg in args]
    return [out]


def _unknown_like(value: Value) -> Value:
    """Anything in place of ``value`` (a tensor stays a maybe-tensor)."""
    return value.join(UNKNOWN) if isinstance(value, (TensorVal, TupleVal)) else UNKNOWN


def _all_params(args: ast.arguments) -> list[ast.arg]:
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return [*params, *([args.vararg] if args.vararg else []), *([args.kwarg] if args.kwarg else [])]


def free_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    """Names a function (and what it defines) loads but does not bind itself: those it may read
    from an enclosing scope. Cached on the node."""
    cached: frozenset[str] | None = getattr(node, "_graphlife_free", None)
    if cached is not None:
        return cached
    loaded: set[str] = set()
    bound: set[str] = {a.arg for a in _all_params(node.args)}
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            (loaded if isinstance(child.ctx, ast.Load) else bound).add(child.id)
    found = frozenset(loaded - bound)
    setattr(node, "_graphlife_free", found)  # noqa: B010 - a cache hung on the node
    return found


#: Kinds of value that hold no function (asked of every argument of every library call).
_HOLD_NO_FUNCTION = frozenset({TensorVal, Number, HeapRef, NoneValue, Unknown, QualName})


def _callables(values: list[Value], depth: int = 0) -> list[FunctionRef]:
    found: list[FunctionRef] = []
    for value in values:
        if value.__class__ in _HOLD_NO_FUNCTION:
            continue
        if isinstance(value, FunctionRef):
            found.append(value)
        elif isinstance(value, PartialCall) and depth < 3:
            found.extend(_callables([value.func, *value.args, *(v for _, v in value.kwargs)], depth + 1))
        elif isinstance(value, TupleVal) and depth < 3:
            found.extend(_callables(list(value.items), depth + 1))
    return found


def _heap_refs(value: Value, depth: int = 0) -> list[HeapRef]:
    if isinstance(value, HeapRef):
        return [value]
    if isinstance(value, FunctionRef) and isinstance(value.bound_self, HeapRef):
        return []  # a bound method handed over: what it writes is its escape's business
    if isinstance(value, TupleVal) and depth < 3:
        return [ref for item in value.items for ref in _heap_refs(item, depth + 1)]
    if isinstance(value, PartialCall) and depth < 3:
        return [ref for item in (*value.args, *(v for _, v in value.kwargs)) for ref in _heap_refs(item, depth + 1)]
    return []
