"""Calls: what a call expression calls, and running a function of the file with the caller's values.

Why here: the bugs graphlife finds cross function boundaries (a helper that keeps
a loss, a ``forward`` that changes its input in place), so a function of the file
is inlined into its caller: its body runs on the caller's state, bounded in depth
and never recursively. A call that can neither see nor hand back a graph runs apart
(:mod:`graphlife.analysis.isolation`), an inlined call that changed nothing is
replayed (:mod:`graphlife.analysis.call_memo`), and calls of torch go to
:mod:`graphlife.analysis.torch_api`. An unknown call gives an unknown value,
never the basis of an error.
"""

from __future__ import annotations

import ast
import functools

from graphlife.analysis import checkpoint_regions, isolation, namedtuples, torch_api
from graphlife.analysis.engine.core import EngineCore, handles_expressions
from graphlife.analysis.events import OpaqueCallEvent
from graphlife.analysis.modules import is_namespace_key
from graphlife.analysis.run_state import CallFrame
from graphlife.analysis.state import State
from graphlife.analysis.unseen_writes import function_effects
from graphlife.analysis.values import (
    NONE,
    UNKNOWN,
    BoundMethod,
    ClassRef,
    FunctionRef,
    HeapRef,
    NamedTupleClass,
    Number,
    PartialCall,
    QualName,
    TensorVal,
    TupleVal,
    Value,
)

#: Inlined calls nest at most this deep; a deeper call's result is unknown.
MAX_INLINE_DEPTH = 6
#: A module's method runs inlined within itself at most this many times in one chain of calls: a
#: module built recursively (a tree of blocks whose ``__init__`` makes smaller trees down to
#: ``level == 1``, and whose ``forward`` calls theirs) is followed a few levels deep; past that,
#: unknown. Other functions do not run within themselves (see ``_may_recurse``).
MAX_RECURSION = 3

#: Grad-mode decorators by their text: the (grad enabled, inference mode) they set while the
#: function runs (``None``: left as the caller's).
_MODE_DECORATORS: dict[str, tuple[bool | None, bool | None]] = {
    "torch.no_grad()": (False, None),
    "torch.no_grad": (False, None),
    "torch.inference_mode()": (False, True),
    "torch.inference_mode": (False, True),
    "torch.inference_mode(True)": (False, True),
    "torch.inference_mode(mode=True)": (False, True),
    "torch.inference_mode(False)": (None, False),
    "torch.inference_mode(mode=False)": (None, False),
    "torch.enable_grad()": (True, None),
}


def _named_attribute(call: ast.Call, name: str) -> ast.Attribute:
    """``getattr(obj, "name")`` read as ``obj.name`` (made once per call and name, at the call)."""
    made: dict[str, ast.Attribute] | None = getattr(call, "_graphlife_getattr", None)
    if made is None:
        made = {}
        setattr(call, "_graphlife_getattr", made)  # noqa: B010 - a cache hung on the node
    node = made.get(name)
    if node is None:
        node = made[name] = ast.Attribute(value=call.args[0], attr=name, ctx=ast.Load())
    ast.copy_location(node, call)
    node.end_lineno, node.end_col_offset = call.end_lineno, call.end_col_offset
    return node


class Calls(EngineCore):
    """Call expressions, inlining, and instantiating classes of the file."""

    @handles_expressions(ast.Call)
    def eval_call(self, call: ast.Call, state: State) -> Value:
        func = self.eval(call.func, state)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "backward" and (
            func is UNKNOWN or (isinstance(func, BoundMethod) and not isinstance(func.receiver, (TensorVal, HeapRef)))
        ):
            # `x.backward()` on something we could not interpret: still a backward (it fills
            # gradients we cannot see), never the basis of a finding about its own graph.
            kwargs = {kw.arg: self.eval(kw.value, state) for kw in call.keywords if kw.arg is not None}
            return torch_api.do_backward(self, state, UNKNOWN, call.func.value, kwargs, call, "backward",
                                         args=[self.eval(a, state) for a in call.args])
        args: list[Value] = []
        for arg in call.args:
            value = self.eval(arg, state)
            if isinstance(arg, ast.Starred):
                items = self.known_items(value, state)
                if (items is None and isinstance(func, QualName) and self.repeats_blocks(value, state)
                        and torch_api.canonical(func.name) in torch_api.STARRED_CONTAINERS):
                    args.append(value)  # `nn.Sequential(*[Block() for _ in range(n)])`: a chain of blocks
                    break
                if items is None:
                    args.append(UNKNOWN)
                    break  # positions after an unknown *args are unknown
                args.extend(items)
            else:
                args.append(value)
        kwargs = {}
        for kw in call.keywords:  # a loop, not a comprehension: most calls have no keywords
            if kw.arg is not None:
                kwargs[kw.arg] = self.eval(kw.value, state)
        for kw in call.keywords:
            if kw.arg is None:
                self.eval(kw.value, state)
        return self.call_value(func, args, kwargs, state, call)

    @staticmethod
    def repeats_blocks(value: Value, state: State) -> bool:
        """Is ``value`` a list made by ``[Block() for _ in range(n)]`` (see ``Loops``)?"""
        return (isinstance(value, HeapRef) and value.oid in state.heap
                and bool(state.heap[value.oid].extra.get(torch_api.REPEATED_BLOCKS)))

    def call_value(self, func: Value, args: list[Value], kwargs: dict[str, Value], state: State,
                   call: ast.Call) -> Value:
        """Call the value ``func`` with evaluated arguments, as Python would for what it is.

        The kinds are disjoint, so their order is free: the common ones first (this runs for
        every call the engine evaluates), and a library call's name normalized once for its
        two special cases (``functools.partial``, ``getattr``) where it was normalized twice
        ahead of every call."""
        if isinstance(func, QualName):
            canonical = torch_api.canonical(func.name)
            if canonical == "functools.partial" and args:
                return PartialCall(args[0], tuple(args[1:]), tuple(kwargs.items()))
            if (canonical == "builtins.getattr"
                    and len(args) >= 2 and isinstance(args[1], Number) and isinstance(args[1].const, str)
                    and call.args and not isinstance(call.args[0], ast.Starred)):
                return self.attribute_value(args[0], _named_attribute(call, args[1].const), state)
            self._before_library_call(func.name, [*args, *kwargs.values()], state)
            if self.run_state.checkpoints:
                return self._library_call_in_checkpoint(func.name, args, kwargs, state, call)
            return torch_api.call_qualname(self, state, func.name, args, kwargs, call)
        if isinstance(func, BoundMethod):
            receiver = func.receiver
            if isinstance(receiver, ClassRef):
                if receiver.is_autograd_function and func.name == "apply":
                    return self.apply_autograd_function(receiver, args, kwargs, state, call)
                self.unseen_call([*args, *kwargs.values()], state)  # a class method from a base the engine cannot see
                return self.no_grad_opaque(UNKNOWN, state, call)
            if (self.run_state.checkpoints and isinstance(receiver, TensorVal)
                    and func.name in checkpoint_regions.SHAPE_METHODS):
                for value, expr in zip(args, call.args):
                    checkpoint_regions.decide(self, value, expr, "shape", state)
            result = torch_api.call_method(self, state, receiver, func.name, args, kwargs, call)
            return self.no_grad_opaque(result, state, call)
        if isinstance(func, FunctionRef):
            return self.call_function(func, args, kwargs, state, call)
        if isinstance(func, HeapRef):
            return torch_api.call_object(self, state, func, args, kwargs, call)
        if isinstance(func, PartialCall):
            return self.call_value(func.func, [*func.args, *args], {**dict(func.kwargs), **kwargs}, state, call)
        if isinstance(func, NamedTupleClass):
            return func.instance(args, kwargs)
        if isinstance(func, ClassRef):
            if func.is_autograd_function:
                self.unseen_call([*args, *kwargs.values()], state)
                return UNKNOWN
            return self.instantiate(func, args, kwargs, state, call)
        self.note_opaque_call(call, [*args, *kwargs.values()], state)
        self.unseen_call([*args, *kwargs.values()], state)
        return self.no_grad_opaque(UNKNOWN, state, call)

    def _library_call_in_checkpoint(self, name: str, args: list[Value], kwargs: dict[str, Value], state: State,
                                    call: ast.Call) -> Value:
        """A library call inside a checkpointed function (:mod:`graphlife.analysis.checkpoint_regions`):
        a source the recomputation does not replay gives a tagged number, torch's random ops are
        draws, ``range`` decides the control flow, and a builtin's number keeps its arguments' sources."""
        canonical = torch_api.canonical(name)
        tagged = checkpoint_regions.source_value(self, canonical, call)
        if tagged is not None:
            return tagged
        if canonical in checkpoint_regions.TORCH_RANDOM and torch_api.const_bool(kwargs.get("training")) is not False:
            checkpoint_regions.note_draw(self, call, canonical, state)
        if canonical == "builtins.range":
            for value, expr in zip(args, call.args):
                checkpoint_regions.decide(self, value, expr, "flow", state)
        result = torch_api.call_qualname(self, state, name, args, kwargs, call)
        if canonical.startswith(("builtins.", "math.")):
            result = checkpoint_regions.carry(result, [*args, *kwargs.values()])
        return result

    def _before_library_call(self, name: str, values: list[Value], state: State) -> None:
        """A call of a name imported from a library: torch's own functions write no object of the
        user's and run what they are given only where the engine models it (``checkpoint``); a
        builtin runs a function it is given now (``sorted(key=...)``, ``map``); anything else is
        code the engine does not see."""
        canonical = torch_api.canonical(name)
        if canonical.startswith("builtins."):
            if canonical in ("builtins.setattr", "builtins.delattr", "builtins.vars"):
                self.unseen_call(values, state)
            else:
                self.escape(values, state, later=False)
        elif canonical.startswith("torch.utils.checkpoint"):
            return
        elif canonical in namedtuples.NAMEDTUPLE_FACTORIES:
            return  # reads the field names it is given, writes nothing, runs nothing
        elif canonical.startswith(("torch.", "F.")):
            self.escape(values, state)
        else:
            self.unseen_call(values, state)

    def note_opaque_call(self, call: ast.Call, args: list[Value], state: State) -> None:
        """Tell the rules that a call the engine cannot follow was given these graphs."""
        nodes = frozenset(
            node for value in torch_api.flatten_tensor_args(args, state) if isinstance(value, TensorVal)
            for node in value.grad_fn
        )
        if nodes:
            self.emit(OpaqueCallEvent(stmt=self.current_stmt(), state=state, call=call, nodes=nodes))

    def no_grad_opaque(self, result: Value, state: State, call: ast.Call) -> Value:
        """Whatever an unknown call returns while gradients are off carries no graph."""
        if result is UNKNOWN and state.grad_enabled is False:
            return TensorVal(requires_grad=False, leaf=True, storage=self.fresh(), origin=call, desc=self.text(call),
                             inference=state.inference_mode, opaque=True,
                             why=torch_api.gradients_off_reason(self, state), why_site=self.current_stmt())
        return result

    def instantiate(self, ref: ClassRef, args: list[Value], kwargs: dict[str, Value], state: State,
                    site: ast.AST) -> Value:
        kind = "module" if ref.is_module else "object"
        instance = self.new_object(state, kind, site, cls=ref.node.name, class_ref=ref)
        init = self.find_method(ref, "__init__", state)
        if init is not None:
            self.call_function(FunctionRef(node=init, key=id(init), bound_self=instance), args, kwargs, state, site)
        return instance

    def call_function(self, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State,
                      site: ast.AST) -> Value:
        """Inline a function of this file with the caller's values (bounded depth, recursion in modules only),
        or run it apart (:mod:`graphlife.analysis.isolation`): then its code is read by that
        call's own record, not by the caller's, and an edit in it does not make the caller's
        record stale."""
        node = func.node
        calls = self.run_state.call_stack
        too_deep = len(calls) >= MAX_INLINE_DEPTH or (func.key in calls and not self._may_recurse(func, state))
        if too_deep or isinstance(node, ast.AsyncFunctionDef):
            self.touch(node)
            return UNKNOWN
        if self.run_state.foreign_steps > self.foreign_budget and self.module_of(node) is not self.entry:
            return UNKNOWN  # the unit ran enough of the project's other modules: their calls are unknown
        if self.isolate_calls and isolation.may_isolate(self, func, args, kwargs, state, site):
            result = isolation.call_isolated(self, func, args, kwargs, state, site)
            if result is not None:
                return result
        self.touch(node)
        return self.call_memo.call(self, func, args, kwargs, state, site)

    def _may_recurse(self, func: FunctionRef, state: State) -> bool:
        """Can ``func``, already running, run inlined once more? Only a module's method (a module
        of a class that builds and calls children of its own class), up to ``MAX_RECURSION``
        levels: a plain recursive function (a walk over nested dicts or configs, a method
        calling itself on one object) calls itself at many sites, and following it would
        multiply the work at every level for no graph."""
        bound = func.bound_self
        if not isinstance(bound, HeapRef) or self.run_state.call_stack.count(func.key) >= MAX_RECURSION:
            return False
        obj = state.heap.get(bound.oid)
        return obj is not None and obj.kind == "module"

    def inline_call(self, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State,
                    site: ast.AST) -> Value:
        """Run the callee's body on the caller's state: its effects on heap, graph and versions
        stay, its locals do not."""
        node = func.node
        is_generator = self.is_generator(node)
        decorators = [self.text(d) for d in node.decorator_list]
        bound = func.bound_self is not None and "staticmethod" not in decorators
        callee_state = state.copy(names=False)
        callee_state.env = self._callee_names(func, bound, args, kwargs, state)
        # Decorators run outermost first: the innermost one's mode is the function's.
        # `@torch.inference_mode(False)` turns inference mode off (Megatron's quantization helpers).
        for decorator in decorators:
            grad, inference = _MODE_DECORATORS.get(decorator, (None, None))
            if grad is not None:
                callee_state.grad_enabled, callee_state.grad_assumed = grad, False
            if inference is not None:
                callee_state.inference_mode = inference
        run = self.run_state
        if is_generator:
            run.yielded.append([])
        self.inlined.add(func.key)
        self.inline_log.append(node)
        if run.unit_inlined is not None:
            run.unit_inlined.add(func.key)
        run.call_stack.append(func.key)
        params = node.args.posonlyargs + node.args.args
        run.frames.append(CallFrame(call=site if isinstance(site, ast.Call) else None, stmt=self.current_stmt(),
                                    params=[p.arg for p in params], bound=bound))
        run.caller_envs.append(state.env)
        made_since = run.next_id  # what the callee makes is numbered after this
        try:
            with self.in_module(self.module_of(node)):
                flow = self.exec_block(node.body, callee_state)
        finally:
            run.caller_envs.pop()
            run.call_stack.pop()
            run.frames.pop()
            yielded = run.yielded.pop() if is_generator else None
        outs = [s for s, _ in flow.returns] + ([flow.normal] if flow.normal.reachable else [])
        if not outs:
            run.path_ends = True  # the callee raises on every path: so does this call
            return UNKNOWN
        after = State.join_all(outs, owned=True)  # the callee's states: dropped once adopted
        # Back in the caller: its own names, the callee's effects on heap, graph and versions.
        caller_env, caller_grad = state.env, state.grad_enabled
        caller_inference, caller_assumed = state.inference_mode, state.grad_assumed
        state.adopt(after)
        state.env, state.grad_enabled = caller_env, caller_grad
        if any(is_namespace_key(name) for name in after.env.keys() - caller_env.keys()):
            for name, value in after.env.items():
                if is_namespace_key(name) and name not in caller_env:
                    state.env[name] = value  # a module the callee imported is imported for all (sys.modules)
        if self.module_of(node) is self.module and self.may_declare_global(node):
            for name in function_effects(node).globals:
                if name in after.env:  # `global name` then an assignment: the module's name changed
                    state.env[name] = after.env[name]
        state.inference_mode, state.grad_assumed = caller_inference, caller_assumed
        self.last_call_roots = [result_value for _, result_value in flow.returns] + list(yielded or ())
        self.collect_after_call(state, self.last_call_roots, made_since)
        if yielded is not None:
            # A generator: what the caller iterates over is the join of what it yields.
            ref = self.new_list(state, (), site, literal=False)
            element: Value | None = None
            for value in yielded:
                element = value if element is None else element.join(value)
            state.heap[ref.oid].elem = element
            return ref
        result: Value | None = None
        for _, value in flow.returns:
            result = value if result is None else result.join(value)
        if flow.normal.reachable:
            result = NONE if result is None else result.join(NONE)
        return result if result is not None else UNKNOWN

    @functools.cached_property
    def _global_declarers(self) -> dict[int, frozenset[int]]:
        """Per module's index: the functions with a ``global`` statement in them (nested ones too)."""
        return {}

    def may_declare_global(self, node: ast.AST) -> bool:
        """Does a ``global`` statement stand in the function ``node`` (or in one nested in it)? Most
        files have none: then no inlined call walks its callee for the names it rebinds."""
        index = self.module_of(node).index
        declarers = self._global_declarers.get(id(index))
        if declarers is None:
            found: set[int] = set()
            for statement in index.by_kind[ast.Global]:
                current = index.parents.get(id(statement))
                while current is not None:
                    if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        found.add(id(current))
                    current = index.parents.get(id(current))
            declarers = self._global_declarers[id(index)] = frozenset(found)
        return id(node) in declarers

    def _callee_names(self, func: FunctionRef, bound: bool, args: list[Value], kwargs: dict[str, Value],
                      state: State) -> dict[str, Value]:
        """The names the callee starts with: its parameters bound to the arguments (defaults are
        evaluated in the caller), and the caller's names but the callee's own locals (an
        approximation of globals and closures). Before their first assignment the callee's locals
        are unbound, never the caller's value (`out` of the caller is not `out` of a loop that ran
        zero times)."""
        node = func.node
        local = self.local_names(node)
        module = self.module_of(node)
        if module is self.module:
            # The caller's names copied whole (in C), then the callee's locals taken out: a call
            # from a module body with hundreds of names pays for its few locals only.
            caller = state.env
            env = dict(caller) if type(caller) is dict else dict(caller.items())
            for name in local:
                env.pop(name, None)
            for name, value in func.closure:
                if name not in env and name not in local:
                    env[name] = value  # the enclosing function's name, as the function was made
        else:  # a function of another module sees that module's names, not the caller's
            env = {name: value for name, value in self.foreign_globals(module, state).items() if name not in local}
        if module is not self.module:
            # Defaults are the callee module's values (Python evaluates them where the function
            # is defined): evaluated with its names, on the caller's heap.
            caller_env = state.env
            state.env = dict(env)
            try:
                with self.in_module(module):
                    return self._bind_parameters(func, bound, args, kwargs, state, env)
            finally:
                state.env = caller_env
        return self._bind_parameters(func, bound, args, kwargs, state, env)

    def _bind_parameters(self, func: FunctionRef, bound: bool, args: list[Value], kwargs: dict[str, Value],
                         state: State, env: dict[str, Value]) -> dict[str, Value]:
        """``env`` with the callee's parameters bound to the arguments, defaults evaluated in ``state``."""
        node = func.node
        params = node.args.posonlyargs + node.args.args
        positional = list(args)
        if func.bound_self is not None and bound:
            positional = [func.bound_self, *positional]
        defaults = node.args.defaults
        for index, param in enumerate(params):
            if index < len(positional):
                env[param.arg] = positional[index]
            elif param.arg in kwargs:
                env[param.arg] = kwargs[param.arg]
            else:
                offset = index - (len(params) - len(defaults))
                env[param.arg] = self.eval_quiet(defaults[offset], state) if 0 <= offset < len(defaults) else UNKNOWN
        for index, param in enumerate(node.args.kwonlyargs):
            default = node.args.kw_defaults[index]
            env[param.arg] = kwargs.get(param.arg, self.eval_quiet(default, state) if default is not None else UNKNOWN)
        if node.args.vararg:
            env[node.args.vararg.arg] = TupleVal(tuple(positional[len(params):]))
        if node.args.kwarg:
            env[node.args.kwarg.arg] = UNKNOWN
        return env
