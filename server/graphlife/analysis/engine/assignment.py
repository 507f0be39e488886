"""Assignment: binding a value to a target, and the stores rules watch for.

Why apart from the statements: every way a value reaches a place goes through
:meth:`Assignment.assign`, from an ``=``, a ``for`` target, a ``with ... as``, a
``:=``, a comprehension's variable; setting ``requires_grad``, ``.grad`` or an item
of a tensor is a torch operation, and storing a tensor with a graph into an object
that outlives the loop iteration is the event the leak rules read
(:meth:`Assignment.maybe_store`).
"""

from __future__ import annotations

import ast

from graphlife.analysis import checkpoint_regions, library_models, torch_api
from graphlife.analysis.engine.core import EngineCore
from graphlife.analysis.events import StoreEvent
from graphlife.analysis.state import State
from graphlife.analysis.values import UNKNOWN, HeapRef, NoneValue, Number, TensorVal, TupleVal, Value, replace


class Assignment(EngineCore):
    """Names, unpacking, attributes and items as assignment targets."""

    def assign(self, target: ast.expr, value: Value, state: State, value_expr: ast.expr | None) -> None:
        if self.watch is not None:
            self.watch.saw(target, value, state)
        if isinstance(target, ast.Name):
            if isinstance(value, TensorVal) and not value.desc:
                value = replace(value, desc=target.id)
            if value_expr is not None:  # `total = total + loss`: a running total, decided on the graph
                torch_api.note_growth(self, state, target, state.env.get(target.id), value)
            if self.run_state.checkpoints:
                function = self.enclosing_function(target)
                if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        target.id not in self.local_names(function):
                    # `global calls` then `calls += 1`
                    checkpoint_regions.note_write(self, ("global", target.id), value)
                    if isinstance(value, Number) and value.unreplayed:
                        value = replace(value, unreplayed=frozenset())  # a later read is tagged by its state
            state.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._assign_unpacked(target, value, state)
        elif isinstance(target, ast.Attribute):
            self._assign_attribute(target, value, state)
        elif isinstance(target, ast.Subscript):
            self._assign_item(target, value, state)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, UNKNOWN, state, None)

    def _assign_unpacked(self, target: ast.Tuple | ast.List, value: Value, state: State) -> None:
        elts = target.elts
        starred = any(isinstance(e, ast.Starred) for e in elts)
        if isinstance(value, TupleVal) and len(value.items) == len(elts) and not starred:
            for elt, item in zip(elts, value.items):
                self.assign(elt, item, state, None)
            return
        element = self.iter_element(value, state) if isinstance(value, (HeapRef, TupleVal)) else UNKNOWN
        if isinstance(value, TensorVal):
            # Unpacking a tensor (`q, k, v = t.chunk(3)`): views that share its graph.
            element = replace(value, leaf=False if value.requires_grad else value.leaf, parts=None)
        for elt in elts:
            if isinstance(elt, ast.Starred):
                self.assign(elt.value, UNKNOWN, state, None)
            else:
                self.assign(elt, element, state, None)

    def _assign_attribute(self, target: ast.Attribute, value: Value, state: State) -> None:
        receiver = self.eval(target.value, state)
        if target.attr == "requires_grad" and isinstance(receiver, TensorVal):
            flag = value.const if isinstance(value, Number) and isinstance(value.const, bool) else None
            torch_api.set_requires_grad(self, state, receiver, target.value, flag, "attribute", self.current_stmt())
            return
        if isinstance(receiver, TensorVal) and target.attr in ("data", "grad", "_grad"):
            if target.attr == "data":
                pass  # `t.data = other` swaps the storage behind the graph's back; not modeled
            elif receiver.leaf:
                storages = torch_api.param_storages(receiver, state)
                if isinstance(value, TensorVal) and value.grad_of and not value.grad_of & storages:
                    torch_api.share_grads(self, state, storages, value.grad_of, target)
                else:
                    torch_api.zero_grads(self, state, storages, target, set_to_none=isinstance(value, NoneValue))
            return
        if isinstance(receiver, HeapRef) and receiver.oid in state.heap:
            if state.heap[receiver.oid].kind == "autograd_ctx":
                self.note_ctx_store(receiver, target, value, state)
            self.maybe_store(state, receiver, value, self.text(target), "attribute")
            torch_api.note_growth(self, state, target, state.heap[receiver.oid].attrs.get(target.attr), value)
            if self.run_state.checkpoints:
                checkpoint_regions.note_write(self, ("attr", receiver.oid, target.attr), value)
                if isinstance(value, Number) and value.unreplayed:
                    value = replace(value, unreplayed=frozenset())  # a later read is tagged by its state
            obj = state.heap_write(receiver.oid)
            obj.attrs[target.attr] = value
            if isinstance(value, TensorVal) and value.is_param:
                obj.param_storages = obj.param_storages | ({value.storage} if value.storage else frozenset())

    def _assign_item(self, target: ast.Subscript, value: Value, state: State) -> None:
        container = self.eval(target.value, state)
        key = self.eval(target.slice, state)
        if isinstance(container, TensorVal):
            torch_api.apply_inplace(self, state, "Tensor.__setitem__", container, target.value, [value],
                                    self.current_stmt())
        elif isinstance(container, HeapRef) and container.oid in state.heap:
            # A key with one known value (a constant, or a name bound to one: a hook's `name`) is one slot.
            known_key = (isinstance(key, Number) and isinstance(key.const, (str, int))
                         and not isinstance(key.const, bool))
            self.maybe_store(state, container, value, self.text(target), "setitem", same_slot=known_key)
            obj = state.heap_write(container.oid)
            obj.elem = value if obj.elem is None else obj.elem.join(value)
            obj.attrs.pop("__items__", None)
            if isinstance(key, Number) and known_key:
                obj.attrs[f"[{key.const!r}]"] = value

    def maybe_store(self, state: State, ref: HeapRef, value: Value, target: str, kind: str, *,
                    same_slot: bool = False) -> None:
        """Emit ``store`` when a graph-carrying tensor goes into an object that outlives the iteration."""
        loops = self.run_state.loop_stack
        if not loops or ref.oid not in state.heap:
            return
        born = tuple(state.heap[ref.oid].extra.get("born", ()))
        if len(born) >= len(loops) and born[: len(loops)] == self.iteration():
            return  # made in this iteration: it dies with it (not one kept from an earlier one)
        for tensor in torch_api.tensors_in(value, state):
            if library_models.stores_graph(self.run_state.graph, tensor):
                self.emit(StoreEvent(stmt=self.current_stmt(), state=state, value=tensor, target=target,
                                     kind=kind, whole=value, same_slot=same_slot))
                return
