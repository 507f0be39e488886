"""Inlined calls that change nothing, replayed instead of run again.

Why: the engine inlines every call of a function of the file with the caller's
values, so a getter asked by getters that are asked by getters
(``self.zero_optimization_stage()`` in a 300-method engine class) is run once per
path through the call tree: work exponential in the fan-out, up to the inlining
depth. Most such calls compute a plain value from plain values and change nothing.

A call is *pure* when running it emitted no event (no rule saw anything), made
nothing (no graph node, no new id for a tensor or an object), changed no object of
the heap, no fact of the state and none of the interpreter's facts, and returned.
Then its result is a function of what it could read: its arguments, the caller's
names it (or a function it ran) loads, the heap objects reachable from those
values, and the context that steers the interpreter (the inlined calls around it,
the gradient mode, the loop nesting, whether rules listen, the module's table of
definitions). When it reaches no tensor, the state's facts about tensors cannot
matter. The memo keeps, for such a call, those inputs (heap objects by identity:
the state copies an object before changing it, so the same object is the same
content) and the result; a later call with the same inputs gets the result and
what running it did to the interpreter (the code it read and the functions it
inlined, for the unit cache; the functions it inlined are not analyzed alone).

A call that is not pure, or that reads tensors, is run as before: the memo only
removes repeated work that cannot change what the rules see.

The hover's stories (``Interpreter.watch``) use the memo too: a pure call made no tensor,
so the values its expressions took the first time are those a replay would have shown.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass

from graphlife.analysis import scopes
from graphlife.analysis.cow_map import holds_same, same_objects
from graphlife.analysis.engine_api import EngineParts
from graphlife.analysis.state import State
from graphlife.analysis.values import (
    BoundMethod,
    Callbacks,
    FunctionRef,
    HeapObject,
    HeapRef,
    PartialCall,
    TensorVal,
    TupleVal,
    Value,
    ValuesIndices,
)

#: Tests turn this off to compare with every call run (the findings must be the same).
ENABLED = True

#: Entries kept per callee and context; the memo is dropped when it holds more in all.
_PER_KEY = 8
_MAX_ENTRIES = 20_000
_ABSENT = object()


@dataclass
class MemoEntry:
    """One pure call: what it was given and read, what it returned and did to the interpreter."""

    bound_self: Value | None
    args: tuple[Value, ...]
    kwargs: tuple[tuple[str, Value], ...]
    names: dict[str, object]  # the caller's names it could load (or _ABSENT), as they were
    objects: tuple[tuple[int, HeapObject], ...]  # the heap objects reachable from those values
    result: Value
    roots: list[Value]  # what the call's garbage collection kept alive (its returned values)
    touched: dict[int, ast.AST]  # the code it read (collected for the unit cache only)
    inlined: set[int]
    ran: list[ast.AST]  # the functions it inlined, once each


class CallMemo:
    """The pure calls of one analysis of one file (it lives and dies with the interpreter)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[object, ...], list[MemoEntry]] = {}
        self.size = 0
        self.hits = 0
        #: Keys (callee and context) called once so far, run without a record: most calls of a
        #: file are made once in their context (DeepSpeed's engine: 453 of 531 keys), and
        #: checking that a run changed nothing, and recording what it read, cost more than the
        #: replays of the others saved. A key's second call is recorded, its later ones replayed.
        self.seen: set[tuple[object, ...]] = set()
        #: The names each function may load, by its node's id (the nodes outlive the memo).
        self.reads: dict[int, frozenset[str]] = {}

    def call(self, interp: EngineParts, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State,
             site: ast.AST) -> Value:
        """Inline ``func`` (``Interpreter.inline_call``), or replay an identical pure call."""
        if (not ENABLED or interp.is_generator(func.node) or func.closure
                or not _simple_defaults(func.node) or interp.run_state.checkpoints):
            # Inside a checkpointed function a call tags what it reads and may send events: run it.
            return interp.inline_call(func, args, kwargs, state, site)
        key = _key(interp, func, state)
        bucket = self.entries.get(key)
        if bucket is None:
            seen = self.seen
            if key not in seen:
                if len(seen) >= _MAX_ENTRIES:
                    seen.clear()
                seen.add(key)
                return interp.inline_call(func, args, kwargs, state, site)
        else:
            for entry in bucket:
                if _matches(entry, func, args, kwargs, state):
                    self.hits += 1
                    return _replay(interp, entry, state)
        return self._run(interp, key, func, args, kwargs, state, site, interp.local_names(func.node))

    def _run(self, interp: EngineParts, key: tuple[object, ...], func: FunctionRef, args: list[Value],
             kwargs: dict[str, Value], state: State, site: ast.AST, local: frozenset[str]) -> Value:
        heap_before, env_before = state.heap, state.env
        facts_before, maps_before = _facts(interp), _maps(state)
        first_inlined = len(interp.inline_log)
        # The code the call reads matters only to the unit cache: collected only for it.
        run = interp.run_state
        outer_touched = run.touched
        collect = interp.unit_cache is not None
        touched: dict[int, ast.AST] = {}
        if collect:
            run.touched = touched
        try:
            result = interp.inline_call(func, args, kwargs, state, site)
        finally:
            if collect:
                run.touched = outer_touched
                if outer_touched is not None:
                    outer_touched.update(touched)
        if _facts(interp) != facts_before or not _same_heap(heap_before, state.heap):
            return result
        if not _same_maps(maps_before, state):
            return result
        ran = interp.inline_log[first_inlined:]
        inlined = {id(node) for node in ran}
        names = _names_read(func.node, ran, interp, self.reads)
        visible = {name: env_before.get(name, _ABSENT) for name in names if name not in local}
        inputs: list[Value] = [*args, *kwargs.values(), *(v for v in visible.values() if isinstance(v, Value))]
        if func.bound_self is not None:
            inputs.append(func.bound_self)
        objects = _reachable(inputs, heap_before)
        entry = MemoEntry(
            bound_self=func.bound_self, args=tuple(args), kwargs=tuple(sorted(kwargs.items())), names=visible,
            objects=objects, result=result, roots=list(interp.last_call_roots), touched=touched, inlined=inlined,
            ran=list({id(node): node for node in ran}.values()),
        )
        if self.size >= _MAX_ENTRIES:
            self.entries.clear()
            self.size = 0
        bucket = self.entries.setdefault(key, [])
        bucket.insert(0, entry)
        del bucket[_PER_KEY:]
        self.size += 1
        return result


def _key(interp: EngineParts, func: FunctionRef, state: State) -> tuple[object, ...]:
    """What steers the interpreter through the callee besides its inputs (compared by identity
    where it is an object of this analysis: the graph store, the definitions table)."""
    run = interp.run_state
    return (
        func.key, tuple(run.call_stack), state.escaped, state.grad_hooks, state.grad_enabled, state.inference_mode,
        state.grad_assumed,
        run.create_graph_seen, run.emitting, run.in_loop(), len(run.loop_stack),
        id(run.graph), id(run.globals), len(run.globals),
    )


def _facts(interp: EngineParts) -> tuple[object, ...]:
    """What a pure call leaves as it was: the graph, the ids handed out, the events sent, the
    interpreter's facts between statements."""
    run = interp.run_state
    module_calls = 0
    for calls in run.module_calls:
        module_calls += len(calls)
    return (
        run.graph, len(run.graph.nodes), run.next_id, interp.emitted, interp.backward_count,
        run.create_graph_seen, run.path_ends, len(run.zeroed_after), len(run.no_grad_writes),
        module_calls, len(interp.reporter.findings),
    )


def _same_heap(before: MutableMapping[int, HeapObject], after: MutableMapping[int, HeapObject]) -> bool:
    return same_objects(before, after)


#: The state's facts about tensors (versions, gradients, freed graphs): a pure call leaves them.
_FACT_MAPS = ("versions", "bumps", "grads", "data_bumps", "freed", "may_freed", "escaped", "grad_hooks")


#: The maps of ``_FACT_MAPS`` of a state, in that order (one C call: asked twice per call the memo runs).
_maps: Callable[[State], tuple[object, ...]] = operator.attrgetter(*_FACT_MAPS)


def _same_maps(before: tuple[object, ...], state: State) -> bool:
    return all(after is old or after == old for after, old in zip(_maps(state), before))


def _matches(entry: MemoEntry, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State) -> bool:
    if len(args) != len(entry.args) or len(kwargs) != len(entry.kwargs):
        return False
    if not _same(func.bound_self, entry.bound_self):
        return False
    if not all(_same(a, b) for a, b in zip(args, entry.args)):
        return False
    if kwargs and not all(name in kwargs and _same(kwargs[name], value) for name, value in entry.kwargs):
        return False
    env = state.env
    for name, value in entry.names.items():
        current = env.get(name, _ABSENT)
        if current is not value and (current is _ABSENT or value is _ABSENT or not _same(current, value)):
            return False
    return holds_same(state.heap, entry.objects, None)


def _same(a: object, b: object) -> bool:
    """The same value for the callee: identical, or equal and carrying nothing equality ignores
    (a tensor's description and sites are not compared by ``==``)."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, TensorVal):
        return False
    if isinstance(a, TupleVal) and isinstance(b, TupleVal):
        return len(a.items) == len(b.items) and all(_same(x, y) for x, y in zip(a.items, b.items))
    return a == b


def _replay(interp: EngineParts, entry: MemoEntry, state: State) -> Value:
    run = interp.run_state
    if run.touched is not None:
        run.touched.update(entry.touched)
    if run.unit_inlined is not None:
        run.unit_inlined.update(entry.inlined)
    interp.inlined.update(entry.inlined)
    interp.inline_log.extend(entry.ran)
    interp.collect_after_call(state, entry.roots)
    return entry.result


#: The values that may lead to heap objects (a tensor through the module that owns it).
_LEADING = frozenset({HeapRef, TupleVal, ValuesIndices, FunctionRef, BoundMethod, TensorVal, Callbacks, PartialCall})


def _reachable(values: list[Value], heap: Mapping[int, HeapObject]) -> tuple[tuple[int, HeapObject], ...]:
    """The heap objects reachable from ``values``, with their identity (an object's attributes
    are many and mostly plain values: only those that may lead further are followed)."""
    seen: dict[int, HeapObject] = {}
    stack = [value for value in values if type(value) in _LEADING]
    while stack:
        value = stack.pop()
        if isinstance(value, HeapRef):
            if value.oid in seen:
                continue
            obj = heap.get(value.oid)
            if obj is None:
                continue
            seen[value.oid] = obj
            # the key of the memo, not a read of the attributes (`dict.values`: an attribute dict
            # noting what a method reads of its `self` notes nothing: analysis/self_reads.py); a
            # replay needs these very objects, whose reads were noted when the call ran
            stack.extend(item for item in dict.values(obj.attrs) if type(item) in _LEADING)
            if obj.elem is not None and type(obj.elem) in _LEADING:
                stack.append(obj.elem)
            stack.extend(item for item in obj.extra.values() if type(item) in _LEADING)
        elif isinstance(value, TupleVal):
            stack.extend(item for item in value.items if type(item) in _LEADING)
        elif isinstance(value, FunctionRef):
            if value.bound_self is not None and type(value.bound_self) in _LEADING:
                stack.append(value.bound_self)
            stack.extend(held for _, held in value.closure if type(held) in _LEADING)
        elif isinstance(value, Callbacks):
            stack.extend(value.items)
        elif isinstance(value, PartialCall):
            held_values = (value.func, *value.args, *(held for _, held in value.kwargs))
            stack.extend(v for v in held_values if type(v) in _LEADING)
        elif isinstance(value, BoundMethod):
            if type(value.receiver) in _LEADING:
                stack.append(value.receiver)
        elif isinstance(value, TensorVal) and value.owner is not None:  # handed out by a module's parameters()
            stack.append(HeapRef(value.owner))
    return tuple(seen.items())


def _names_read(node: ast.AST, ran: list[ast.AST], interp: EngineParts,
                known: dict[int, frozenset[str]]) -> frozenset[str]:
    """The names the callee, and every function it inlined, may load (defaults included: they
    are evaluated with the caller's names). ``known``: each function's, once asked (its text,
    which ``scopes.names_read`` reads the first time, was cut from the file at every ask)."""
    names = set(_function_reads(node, interp, known))
    for other in {id(other): other for other in ran}.values():
        names |= _function_reads(other, interp, known)
    return frozenset(names)


def _function_reads(node: ast.AST, interp: EngineParts, known: dict[int, frozenset[str]]) -> frozenset[str]:
    found = known.get(id(node))
    if found is None:
        found = known[id(node)] = scopes.names_read(node, interp.function_text(node))
    return found


def _simple_defaults(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Defaults evaluated without making anything (constants, names, attributes of names): the
    others run at the call, in the caller's statement."""
    found: bool | None = getattr(node, "_graphlife_simple_defaults", None)
    if found is None:
        defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        found = all(isinstance(d, (ast.Constant, ast.Name, ast.Attribute)) and all(
            isinstance(n, (ast.Constant, ast.Name, ast.Attribute, ast.Load)) for n in ast.walk(d)) for d in defaults)
        setattr(node, "_graphlife_simple_defaults", found)  # noqa: B010 - a cache hung on the node
    return found
