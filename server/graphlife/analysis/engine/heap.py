"""The heap: objects the program makes (containers, modules, instances) and what iterating over them gives.

Why here: a list of losses, a dict of outputs, a module holding its layers are where
graphs outlive an iteration, so containers keep a summary of their elements (one
abstract element for all, and the items themselves while they are few and known).
Every inlined call leaves its locals' objects behind; once the heap is large, what
nothing reaches is dropped, or each state copy and join would pay for them.
"""

from __future__ import annotations

import ast

from graphlife.analysis.engine.core import EngineCore
from graphlife.analysis.state import State
from graphlife.analysis.values import (
    INEXACT_ITEMS,
    UNKNOWN,
    BoundMethod,
    Callbacks,
    ClassRef,
    FunctionRef,
    HeapObject,
    HeapRef,
    Number,
    PartialCall,
    TensorVal,
    TupleVal,
    Value,
    replace,
)

#: Containers keep their items (``__items__``) up to this many in a literal; loops over a known
#: sequence this long run once per item.
MAX_EXACT_UNROLL = 8
#: An ``append`` or ``extend`` keeps the items known up to this many.
MAX_KNOWN_ITEMS = 16
#: Back from a call, the heap is collected once it holds more objects than this.
HEAP_GC_THRESHOLD = 64


class Heap(EngineCore):
    """New objects, list contents, iteration, and dropping what nothing reaches."""

    def new_object(self, state: State, kind: str, site: ast.AST | None, *, cls: str = "",
                   class_ref: ClassRef | None = None, opt_storages: frozenset[int] | None = None) -> HeapRef:
        oid = self.fresh()
        obj = HeapObject(kind=kind, site=site, cls=cls, class_ref=class_ref, opt_storages=opt_storages)
        obj.extra["born"] = self.iteration()
        state.heap[oid] = obj
        return HeapRef(oid)

    def new_list(self, state: State, items: tuple[Value, ...], site: ast.AST, literal: bool) -> HeapRef:
        element: Value | None = None
        for item in items:
            element = item if element is None else element.join(item)
        ref = self.new_object(state, "list", site)
        obj = state.heap[ref.oid]
        obj.elem = element
        if literal and len(items) <= MAX_EXACT_UNROLL:
            obj.attrs["__items__"] = TupleVal(items)
        return ref

    def list_extend(self, state: State, ref: HeapRef, values: Value) -> None:
        obj = state.heap_write(ref.oid)
        element = self.iter_element(values, state) if isinstance(values, (HeapRef, TupleVal)) else values
        obj.elem = element if obj.elem is None else obj.elem.join(element)
        items, more = obj.attrs.get("__items__"), self.known_items(values, state)
        if isinstance(items, TupleVal) and more is not None and len(items.items) + len(more) <= MAX_KNOWN_ITEMS:
            obj.attrs["__items__"] = TupleVal(items.items + tuple(more))
        else:
            obj.attrs.pop("__items__", None)

    def known_items(self, value: Value, state: State, *, exact: bool = False) -> list[Value] | None:
        """The items of a tuple, or of a list whose contents are known (built from literals and appends);
        ``exact``: only when they are the same on every path (their count is certain)."""
        if isinstance(value, TupleVal):
            return list(value.items)
        if isinstance(value, HeapRef) and value.oid in state.heap:
            obj = state.heap[value.oid]
            items = obj.attrs.get("__items__")
            if exact and obj.extra.get(INEXACT_ITEMS):
                return None
            if isinstance(items, TupleVal):
                return list(items.items)
        return None

    def iter_element(self, iterable: Value, state: State) -> Value:
        if isinstance(iterable, TupleVal):
            result: Value | None = None
            for item in iterable.items:
                result = item if result is None else result.join(item)
            return result or UNKNOWN
        if isinstance(iterable, HeapRef):
            return self._heap_element(iterable, state)
        if isinstance(iterable, TensorVal):
            if iterable.requires_grad is False:
                return replace(iterable, storage=iterable.storage, parts=None)  # rows are views without a graph
            return replace(iterable, leaf=False if iterable.requires_grad else iterable.leaf, certain=False, parts=None)
        return UNKNOWN

    def _heap_element(self, iterable: HeapRef, state: State) -> Value:
        obj = state.heap.get(iterable.oid)
        if obj is None:
            return UNKNOWN
        if obj.kind in ("list", "params"):
            return obj.elem if obj.elem is not None else UNKNOWN
        if obj.kind == "module":
            children = obj.attrs.get("__children__")
            if isinstance(children, TupleVal):
                return self.iter_element(children, state)
            if obj.elem is not None:
                return obj.elem
        if obj.kind == "enumerate":
            return TupleVal((Number(None), obj.elem if obj.elem is not None else UNKNOWN))
        if obj.kind == "zip":
            return obj.elem if obj.elem is not None else UNKNOWN
        return UNKNOWN

    def collect_after_call(self, state: State, returned: list[Value], made_since: int | None = None) -> None:
        """Back from a call: drop what the callee made (objects numbered after ``made_since``)
        that nothing reaches, once the heap is large. What was made before the call is kept:
        the caller may hold it where no name does (an argument still being evaluated, the
        object whose ``__init__`` just returned)."""
        if self._heap_is_large(state):
            self.collect_garbage(state, returned, made_since if made_since is not None else self.run_state.next_id)

    def collect_between_statements(self, state: State) -> None:
        """Between two statements of the unit's own code (no call running, no module's body, no
        loop: a loop holds what it iterates over where no name does): nothing is held but by
        names, so whatever nothing reaches goes, once the heap is large."""
        run = self.run_state
        if (not run.frames and not run.import_stack and not run.caller_envs and not run.in_loop()
                and self._heap_is_large(state)):
            self.collect_garbage(state, [], None)

    def _heap_is_large(self, state: State) -> bool:
        # Amortized: a collection that found most of the heap alive (the modules a project
        # imported, a big model) is not walked again until the heap has doubled since.
        return len(state.heap) > max(HEAP_GC_THRESHOLD, 2 * self.run_state.heap_live)

    def collect_garbage(self, state: State, extra_roots: list[Value], made_since: int | None) -> None:
        """Drop heap objects nothing can reach any more (a returned helper's locals); with
        ``made_since``, only those numbered after it (the others are roots).

        Without this, every inlined call leaves its objects in the heap and each
        state copy or join pays for them: quadratic on large files.
        """
        roots: list[Value] = list(state.env.values()) + extra_roots + list(state.escaped)
        for hook in state.grad_hooks:  # what a hook torch runs later holds (its closure, its module)
            roots.extend((hook.hook, *hook.inputs, *hook.grads_of, *([hook.module] if hook.module else [])))
        if made_since is not None:
            roots.extend(HeapRef(oid) for oid in state.heap if oid <= made_since)
        run = self.run_state
        for _, entry in run.loop_entry_envs:
            roots.extend(entry.env.values())
        for pre in run.loop_pre_states:
            roots.extend(pre.env.values())
        for names in run.caller_envs:
            roots.extend(names.values())
        live: set[int] = set()
        stack = roots
        while stack:
            value = stack.pop()
            if isinstance(value, HeapRef):
                if value.oid in live or value.oid not in state.heap:
                    continue
                live.add(value.oid)
                stack.extend(state.heap[value.oid].referents())
            elif isinstance(value, TupleVal):
                stack.extend(value.items)
            elif isinstance(value, TensorVal) and value.owner is not None:
                stack.append(HeapRef(value.owner))
            elif isinstance(value, FunctionRef):
                if value.bound_self is not None:
                    stack.append(value.bound_self)
                stack.extend(held for _, held in value.closure)
            elif isinstance(value, BoundMethod):
                stack.append(value.receiver)
            elif isinstance(value, Callbacks):
                stack.extend(value.items)
            elif isinstance(value, PartialCall):
                stack.extend((value.func, *value.args, *(held for _, held in value.kwargs)))
        run.heap_live = len(live)
        if len(live) < len(state.heap):
            state.heap = {oid: obj for oid, obj in state.heap.items() if oid in live}
