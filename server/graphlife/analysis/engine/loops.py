"""Loops: ``for``, ``while`` and comprehensions, unrolled so that one iteration meets the next.

Why unrolled: a graph built in iteration k, freed by its backward, and reached again
in iteration k+1 through a carried variable is the bug most rules look for. A loop's
body runs twice (once per item when it iterates a short known sequence, such as a
tuple of modules), with the state one iteration hands the next; a loop whose length
is unknown may also end after the first. Deeply nested loops run their body once:
each level of two iterations doubles the work. What crosses from one iteration to
the next is :mod:`graphlife.analysis.engine.iterations`'.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import partial

from graphlife.analysis import checkpoint_regions, torch_api
from graphlife.analysis.engine.core import EngineCore, handles_expressions, handles_statements
from graphlife.analysis.engine.heap import MAX_EXACT_UNROLL
from graphlife.analysis.engine_api import Flow
from graphlife.analysis.events import LoopEndEvent
from graphlife.analysis.state import State
from graphlife.analysis.torch_api import REPEATED_BLOCKS
from graphlife.analysis.values import HeapRef, Number, QualName, TensorVal, TupleVal, Value

#: Loops nested deeper than this (with the comprehensions and the loops of the inlined callers)
#: run their body once, not twice: each level of two iterations doubles the work, and a file of
#: twenty nested loops would otherwise never finish. Bugs between iterations live in the outer
#: levels (epochs, batches, time steps).
MAX_UNROLLED_NESTING = 6

#: Binds what one iteration starts with (the loop's target, or the ``while`` test evaluated).
Binder = Callable[[State], object]

_Comprehension = ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp


class Loops(EngineCore):
    """``for``, ``while``, comprehensions, and the modules called in each running loop."""

    @handles_statements(ast.For, ast.AsyncFor)
    def exec_for(self, stmt: ast.For | ast.AsyncFor, state: State) -> Flow:
        iterable = self.eval(stmt.iter, state)
        items = self.exact_items(iterable, state)
        nesting = len(self.run_state.loop_stack)
        if items is not None and len(items) > 1 and nesting >= MAX_UNROLLED_NESTING:
            items = None  # too deep to unroll item by item: once, with what the items have in common
        if items is not None:
            return self.run_loop(stmt, state, [self._item_binder(stmt.target, item) for item in items],
                                 may_skip=False, count_known=True)
        element = self.iter_element(iterable, state)
        count = self.constant_range_length(stmt.iter)
        iterations = 2 if count is None or count >= 2 else max(count, 0)
        capped = iterations > 1 and nesting >= MAX_UNROLLED_NESTING
        if capped:
            iterations = 1  # and the loop may end after it, as if its length were unknown
        birth = self.container_birth(iterable, state)
        indexed = self.containers_indexed_by_target(stmt)

        def bind(s: State, index: int) -> None:
            if index and birth is not None:
                self.next_element(element, birth, s)
            if index:
                for name in indexed:  # `for i in range(len(data)): data[i]...`: another element too
                    self.next_element_of(s.env.get(name, self.run_state.globals.get(name)), s)
            self.assign(stmt.target, element, s, None)

        binders: list[Binder] = [partial(bind, index=index) for index in range(iterations)]
        known = count is not None and not capped
        if count is None and self.nonempty(iterable, state):
            count = 1
        return self.run_loop(stmt, state, binders, may_skip=count is None or count == 0, count_known=known)

    def _item_binder(self, target: ast.expr, item: Value) -> Binder:
        """Binds the loop's target to one known item of the sequence."""
        return lambda s: self.assign(target, item, s, None)

    @handles_statements(ast.While)
    def exec_while(self, stmt: ast.While, state: State) -> Flow:
        infinite = isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)

        def test(s: State) -> Value:
            value = self.eval(stmt.test, s)
            if self.run_state.checkpoints:
                checkpoint_regions.decide(self, value, stmt.test, "flow", s)
            return value

        binders: list[Binder] = [test] * (2 if len(self.run_state.loop_stack) < MAX_UNROLLED_NESTING else 1)
        return self.run_loop(stmt, state, binders, may_skip=not infinite, infinite=infinite)

    def run_loop(self, stmt: ast.For | ast.AsyncFor | ast.While, state: State, binders: list[Binder], *,
                 may_skip: bool, infinite: bool = False, count_known: bool = False) -> Flow:
        exits: list[State] = [state.copy()] if may_skip else []
        returns: list[tuple[State, Value]] = []
        current = state
        run = self.run_state
        first_node, backwards_before = len(run.graph.nodes), self.backward_count
        run.module_calls.append([])
        run.loop_entry_envs.append((stmt, state))
        run.loop_pre_states.append(state.copy())
        try:
            for index, bind in enumerate(binders):
                run.loop_stack.append((stmt, index))
                run.loop_entry_envs[-1] = (stmt, current)
                try:
                    entry = current.copy()
                    bind(entry)
                    flow = self.exec_block(stmt.body, entry)
                finally:
                    run.loop_stack.pop()
                returns.extend(flow.returns)
                exits.extend(flow.breaks)
                current = State.join_all([flow.normal, *flow.continues], owned=True)  # this iteration's own
                if not current.reachable:
                    break
                if index < len(binders) - 1 and not count_known and not infinite:
                    # An unknown number of iterations: the loop may also end after this one.
                    exits.append(current.copy())
        finally:
            run.loop_entry_envs.pop()
            run.loop_pre_states.pop()
            calls = run.module_calls.pop()
        if not infinite or not exits:
            exits.append(current)
        after = State.join_all(exits, owned=True) if exits else current
        self.emit(LoopEndEvent(stmt=stmt, state=after, loop=stmt, first_node=first_node,
                               last_node=len(run.graph.nodes), backwards=self.backward_count - backwards_before,
                               module_calls=calls))
        if not infinite and stmt.orelse:
            orelse = self.exec_block(stmt.orelse, after)
            orelse.returns.extend(returns)
            return orelse
        return Flow(normal=after, returns=returns)

    def note_module_call(self, ref: HeapRef, call: ast.AST) -> None:
        for calls in self.run_state.module_calls:
            calls.append((ref, call))

    # -- how many iterations, with which items -------------------------------------------------------
    def constant_range_length(self, expr: ast.expr) -> int | None:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "range":
            args = expr.args
            if 1 <= len(args) <= 3:
                bounds = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, int)]
                if len(bounds) == len(args):
                    try:
                        return len(range(*bounds))
                    except (TypeError, ValueError):
                        return None
        if isinstance(expr, (ast.List, ast.Tuple)):
            return len(expr.elts)
        return None

    def exact_items(self, iterable: Value, state: State) -> list[Value] | None:
        """Items of a known, short sequence: a tuple literal, a list whose items the engine still
        knows (a literal, appended to a known number of times: ``__items__``), the children of a
        ModuleList."""
        if isinstance(iterable, TupleVal) and 0 < len(iterable.items) <= MAX_EXACT_UNROLL:
            return list(iterable.items)
        if isinstance(iterable, HeapRef):
            obj = state.heap.get(iterable.oid)
            items = obj.attrs.get("__items__") if obj is not None and obj.kind == "list" else None
            if isinstance(items, TupleVal) and 0 < len(items.items) <= MAX_EXACT_UNROLL:
                return list(items.items)
            children = obj.attrs.get("__children__") if obj is not None and obj.kind == "module" else None
            if isinstance(children, TupleVal) and 0 < len(children.items) <= MAX_EXACT_UNROLL:
                return list(children.items)
            blocks = obj.extra.get(REPEATED_BLOCKS) if obj is not None else None
            if isinstance(blocks, int) and blocks > 0 and obj is not None and obj.elem is not None:
                return [obj.elem] * blocks  # `[Block() for _ in range(n)]`: instances of one class
            numbered = obj.extra.get("zipped") if obj is not None and obj.kind == "enumerate" else None
            if isinstance(numbered, TupleVal) and len(numbered.items) == 1:
                # `enumerate(self.blocks)`: each item of a known sequence, with its (unknown) index
                sequence = self.exact_items(numbered.items[0], state)
                if sequence is not None:
                    return [TupleVal((Number(None), item)) for item in sequence]
        return None

    def nonempty(self, iterable: Value, state: State) -> bool:
        """A module's parameters: there is at least one (a loop over them runs); so does a ``zip``
        or an ``enumerate`` of such. A list or a container module built by a comprehension over a
        ``range`` of blocks (see :meth:`_repeated_blocks`). The tuple of a multi-output op that
        gives at least one tensor (:attr:`TensorVal.parts`: ``x.chunk(4)`` gives one to four,
        even of an empty tensor); a plain tensor is not, as its first dimension may be 0."""
        if isinstance(iterable, TensorVal):
            return not iterable.opaque and iterable.parts is not None and iterable.parts[0] >= 1
        if isinstance(iterable, HeapRef) and iterable.oid in state.heap:
            obj = state.heap[iterable.oid]
            if obj.extra.get(REPEATED_BLOCKS):
                return True
            zipped = obj.extra.get("zipped") if obj.kind in ("zip", "enumerate") else None
            if isinstance(zipped, TupleVal):  # `zip(global_model.parameters(), local_model.parameters())`
                return all(self.nonempty(part, state) for part in zipped.items)
            module = obj.extra.get("module") if obj.kind == "params" else None
            if isinstance(module, HeapRef):
                return bool(torch_api.module_params(state, module)[0])
        return False

    # -- comprehensions ------------------------------------------------------------------------------
    @handles_expressions(ast.ListComp, ast.GeneratorExp, ast.SetComp)
    def eval_comprehension(self, expr: _Comprehension, state: State) -> Value:
        """A comprehension is a loop: its element is evaluated twice, as a loop body would be."""
        inner = state.copy()
        element: Value | None = None
        for generator in expr.generators:
            iterable = self.eval(generator.iter, inner)
            self.assign(generator.target, self.iter_element(iterable, inner), inner, None)
        run = self.run_state
        run.loop_entry_envs.append((expr, inner))
        run.loop_pre_states.append(inner.copy())
        try:
            for index in range(2):
                run.loop_stack.append((expr, index))
                run.loop_entry_envs[-1] = (expr, inner)
                try:
                    for generator in expr.generators:
                        for condition in generator.ifs:
                            test = self.eval(condition, inner)
                            if run.checkpoints:
                                checkpoint_regions.decide(self, test, condition, "flow", inner)
                    value = self.eval(expr.value if isinstance(expr, ast.DictComp) else expr.elt, inner)
                finally:
                    run.loop_stack.pop()
                element = value  # one evaluation stands for every element (a join would blur them)
        finally:
            run.loop_entry_envs.pop()
            run.loop_pre_states.pop()
        # Keep effects (heap, versions, freed graphs) but not the comprehension's own names.
        env = state.env
        state.adopt(inner)
        state.env = env
        ref = self.new_list(state, (), expr, literal=False)
        state.heap[ref.oid].elem = element
        blocks = self._repeated_blocks(expr, element, state)
        if blocks:
            state.heap[ref.oid].extra[REPEATED_BLOCKS] = blocks
        return ref

    def _repeated_blocks(self, expr: _Comprehension, element: Value | None, state: State) -> int:
        """Is this ``[Block(i) for i in range(n)]``: a comprehension over a ``range``, without a
        filter, that makes a module each time? It holds at least one block: ``range(n)`` with
        a known ``n`` says so, and a network built of blocks is built of at least one even where
        ``n`` is a setting the engine does not know. Each item is an instance of the class the
        element is (its one evaluation stands for all), so a loop over the list, or the
        ``nn.Sequential``/``nn.ModuleList`` built from it, runs that class's ``forward``.

        How many blocks the engine runs for it: the known length, at most two (a loop of
        unknown count runs twice too); two where ``n`` is unknown; 0 when it is no such
        comprehension."""
        if len(expr.generators) != 1 or expr.generators[0].ifs or not isinstance(element, HeapRef):
            return 0
        obj = state.heap.get(element.oid)
        if obj is None or obj.kind != "module":
            return 0
        iterable = expr.generators[0].iter
        if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"
                and 1 <= len(iterable.args) <= 3 and not iterable.keywords):
            return 0
        if not isinstance(self.eval_quiet(iterable.func, state), QualName):
            return 0  # a `range` of the file's own
        bounds = [self.eval_quiet(arg, state) for arg in iterable.args]
        constants = [b.const for b in bounds if isinstance(b, Number) and isinstance(b.const, int)
                     and not isinstance(b.const, bool)]
        if len(constants) == len(bounds):
            try:
                return min(len(range(*constants)), 2)
            except ValueError:
                return 0
        return 2 if len(iterable.args) == 1 else 0

    @handles_expressions(ast.DictComp)
    def eval_dict_comprehension(self, expr: ast.DictComp, state: State) -> Value:
        """A dict whose values are the comprehension's one evaluated value (as a list comprehension's
        element stands for every item): ``{p: SGD([p]) for p in model.parameters()}`` maps each
        parameter to an optimizer of the parameters, and ``optimizers[p].step()`` steps it."""
        listed = self.eval_comprehension(expr, state)
        ref = self.new_object(state, "dict", expr)
        element = state.heap[listed.oid].elem if isinstance(listed, HeapRef) and listed.oid in state.heap else None
        if element is not None:
            state.heap[ref.oid].elem = element
        return ref
