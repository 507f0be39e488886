"""Expressions: the abstract value of each kind of expression but calls and comprehensions.

Why here: an expression's value is what the rules reason about (a tensor's graph,
a module on the heap, a method of a class of the file). Each expression class has
one handler, found by ``eval`` in the dispatch table
(:mod:`graphlife.analysis.engine.core`); calls have theirs in
:mod:`graphlife.analysis.engine.calls`, comprehensions (loops) in
:mod:`graphlife.analysis.engine.loops`. Operators on tensors are torch's
(:mod:`graphlife.analysis.torch_api`); anything not known is :data:`UNKNOWN`, never
the basis of an error.
"""

from __future__ import annotations

import ast

from graphlife.analysis import checkpoint_regions, constants, distributions, library_models, torch_api
from graphlife.analysis.engine.core import EngineCore, handler_for, handles_expressions
from graphlife.analysis.engine.heap import MAX_EXACT_UNROLL
from graphlife.analysis.state import State
from graphlife.analysis.tree_index import child_nodes
from graphlife.analysis.values import (
    NONE,
    UNKNOWN,
    BoundMethod,
    ClassRef,
    FunctionRef,
    HeapRef,
    ImportedName,
    NamedTupleVal,
    NoneValue,
    Number,
    QualName,
    TensorVal,
    TupleVal,
    Value,
    ValuesIndices,
    replace,
)


def _unknown(engine: object, expr: ast.expr, state: State) -> Value:
    """An expression the engine does not model: its value is unknown."""
    return UNKNOWN


def _methods_of(node: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods a class body defines, by name (the first of a name, as a scan finds it); kept
    on the class node: a lookup per `self.x` scanned the body, 15% of the work on a large class."""
    table: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] | None = getattr(node, "_graphlife_methods", None)
    if table is None:
        table = {}
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                table.setdefault(stmt.name, stmt)
        setattr(node, "_graphlife_methods", table)  # noqa: B010 - a cache hung on the node
    return table


#: Attributes of a torch module that are its parameters (``layer.weight``).
_PARAMETER_ATTRIBUTES = ("weight", "bias", "in_proj_weight", "in_proj_bias")


#: Comparisons that give a Python ``bool`` whatever they compare (the others give a tensor for tensors).
_IDENTITY_TESTS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def _advanced_index(key: Value) -> bool:
    """An index with a tensor in it (a boolean mask, index tensors): torch copies, not a view."""
    if isinstance(key, TensorVal):
        return True
    return isinstance(key, TupleVal) and any(isinstance(item, TensorVal) for item in key.items)

class Expressions(EngineCore):
    """Names, constants, attributes, operators, containers, items and the rest."""

    def eval(self, expr: ast.expr | None, state: State) -> Value:
        """The value of ``expr`` in ``state``: the handler its node class declared
        (:func:`handles_expressions`); ``None`` stands for an absent expression, Python's ``None``."""
        if expr is None:
            return NONE
        handler = self.expression_handlers.get(expr.__class__)
        if handler is None:
            handler = handler_for(self.expression_handlers, expr.__class__, _unknown)
        return handler(self, expr, state)

    @handles_expressions(ast.Name)
    def eval_name(self, expr: ast.Name, state: State) -> Value:
        name = expr.id
        value = state.env.get(name)
        if value is None:
            value = self.run_state.globals.get(name)
            if value is None:
                if self.star_sources:
                    star = self.star_name(name, state)
                    if star is not None:
                        return star
                return torch_api.builtin_name(name)
        if value.__class__ is ImportedName:
            return self.resolve_imported(value, state)
        if self.run_state.checkpoints and isinstance(value, Number) and self._global_read(expr):
            return checkpoint_regions.tag_read(self, value, ("global", name), expr)
        return value

    def _global_read(self, expr: ast.Name) -> bool:
        """Is the name read inside a function that does not bind it (a global, as the function sees it)?"""
        function = self.enclosing_function(expr)
        return isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
            expr.id not in self.local_names(function)

    @handles_expressions(ast.Constant)
    def eval_constant(self, expr: ast.Constant, state: State) -> Value:
        return NONE if expr.value is None else Number(expr.value)

    @handles_expressions(ast.Attribute)
    def eval_attribute(self, expr: ast.Attribute, state: State) -> Value:
        return self.attribute_value(self.eval(expr.value, state), expr, state)

    def attribute_value(self, receiver: Value, expr: ast.Attribute, state: State) -> Value:
        """The attribute ``expr.attr`` of the value ``receiver`` (``expr`` says where it is read)."""
        if isinstance(receiver, QualName):
            if self.is_project_module(receiver.name):
                return self.resolve_imported(self.module_attribute(receiver.name, expr.attr, state), state)
            return QualName(f"{receiver.name}.{expr.attr}")
        if isinstance(receiver, TensorVal):
            return torch_api.tensor_attribute(self, state, receiver, expr)
        if isinstance(receiver, HeapRef):
            value = self._heap_attribute(receiver, expr, state)
            if self.run_state.checkpoints:  # state the checkpointed function may also write
                return checkpoint_regions.tag_read(self, value, ("attr", receiver.oid, expr.attr), expr)
            return value
        if isinstance(receiver, ClassRef):
            method = self.find_method(receiver, expr.attr, state)
            if method is not None:
                return FunctionRef(node=method, key=id(method))
            return BoundMethod(receiver, expr.attr)
        if isinstance(receiver, NamedTupleVal) and (field_value := receiver.item(expr.attr)) is not None:
            return field_value
        if isinstance(receiver, ValuesIndices) and expr.attr in ("values", "indices"):
            return receiver.items[0 if expr.attr == "values" else 1]
        if isinstance(receiver, (TupleVal, Number, NoneValue)):
            return BoundMethod(receiver, expr.attr)
        return BoundMethod(receiver, expr.attr) if receiver is not UNKNOWN else UNKNOWN

    def _heap_attribute(self, receiver: HeapRef, expr: ast.Attribute, state: State) -> Value:
        """An attribute of a heap object: what it holds, a parameter of a torch module, a method of
        a class of the file, or a method the engine models by name."""
        obj = state.heap.get(receiver.oid)
        if obj is not None and expr.attr in obj.attrs:
            return obj.attrs[expr.attr]
        if obj is not None and obj.kind == "distribution" and expr.attr in distributions.DIFFERENTIABLE_PROPERTIES:
            return torch_api.distribution_property(self, state, receiver, expr.attr, expr)
        if obj is not None and obj.kind == "module" and obj.class_ref is None and obj.param_storages and (
            expr.attr in _PARAMETER_ATTRIBUTES or expr.attr.startswith(("weight_", "bias_"))
        ):
            # A parameter of a torch module (`layer.weight`): a leaf that requires grad unless frozen.
            frozen = obj.frozen
            bias = obj.extra.get("bias_storage")
            weights = obj.param_storages - {bias}
            weight = min(weights) if weights else bias
            return TensorVal(requires_grad=(not frozen) if frozen is not None else None, leaf=True,
                             storage=bias if expr.attr.startswith("bias") or expr.attr == "in_proj_bias" else weight,
                             is_param=True, origin=expr,
                             desc=self.text(expr), created_with_grad=obj.site)
        if (obj is not None and obj.kind == "module" and "library_model" in obj.extra
                and expr.attr not in torch_api.MODULE_METHODS and library_models.is_submodule_attribute(expr.attr)):
            return torch_api.library_submodule(self, state, receiver, expr.attr, expr)
        if obj is not None and obj.class_ref is not None:
            method = self.find_method(obj.class_ref, expr.attr, state)
            if method is not None:
                return FunctionRef(node=method, key=id(method), bound_self=receiver)
            if obj.kind == "module" and expr.attr not in torch_api.MODULE_METHODS:
                return UNKNOWN  # set by a torch base class (`self.weight` of an nn.Linear subclass)
        return BoundMethod(receiver, expr.attr)

    def find_method(self, ref: ClassRef, name: str, state: State,
                    depth: int = 0) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The method ``name`` of a class of the file, or of its bases in the file (bounded)."""
        self.touch(ref.node)
        found = _methods_of(ref.node).get(name)
        if found is not None:
            return found
        if depth > 5:
            return None
        bases = ref.bases if ref.bases is not None else [self.eval_quiet(base, state) for base in ref.node.bases]
        for value in bases:
            if isinstance(value, ClassRef):
                found = self.find_method(value, name, state, depth + 1)
                if found is not None:
                    return found
        return None

    # -- operators ------------------------------------------------------------------------------------
    @handles_expressions(ast.BinOp)
    def eval_binop_chain(self, expr: ast.BinOp, state: State) -> Value:
        """Left-deep chains (``a + b + c + ...``) iteratively, so a long sum cannot overflow the stack."""
        chain: list[ast.BinOp] = []
        node: ast.expr = expr
        while isinstance(node, ast.BinOp):
            chain.append(node)
            node = node.left
        value = self.eval(node, state)
        left_expr: ast.expr = node
        for binop in reversed(chain):
            right = self.eval(binop.right, state)
            value = torch_api.binop(self, state, binop.op, value, right, binop, left_expr, binop.right)
            left_expr = binop
        return value

    @handles_expressions(ast.UnaryOp)
    def eval_unary(self, expr: ast.UnaryOp, state: State) -> Value:
        operand = self.eval(expr.operand, state)
        result = self._unary(expr, operand, state)
        return checkpoint_regions.carry(result, (operand,)) if self.run_state.checkpoints else result

    def _unary(self, expr: ast.UnaryOp, operand: Value, state: State) -> Value:
        if isinstance(operand, TensorVal) and isinstance(expr.op, ast.USub):
            return torch_api.apply_op(self, state, "Tensor.__neg__", [operand], [expr.operand], expr)
        # Folded where a binary operation is (not in a loop, whose later iterations the engine runs
        # as one: `flag = not flag` must not carry the second iteration's value), and on a literal.
        foldable = not self.run_state.loop_stack or isinstance(expr.operand, ast.Constant)
        known = operand.const if isinstance(operand, Number) and foldable else None
        if isinstance(expr.op, ast.Not):
            # `if not requires_grad:` with a flag known on every path decides the branch
            return Number(not known) if isinstance(known, (bool, int, str)) else Number(None)
        if isinstance(operand, TensorVal):
            return operand
        if isinstance(expr.op, ast.USub) and isinstance(known, int) and not isinstance(known, bool):
            return Number(-known)  # `outputs[-1]`
        return Number(None) if isinstance(operand, Number) else UNKNOWN

    @handles_expressions(ast.Compare)
    def eval_compare(self, expr: ast.Compare, state: State) -> Value:
        values = [self.eval(expr.left, state)] + [self.eval(c, state) for c in expr.comparators]
        result = self._compare(expr, values)
        return checkpoint_regions.carry(result, values) if self.run_state.checkpoints else result

    def _compare(self, expr: ast.Compare, values: list[Value]) -> Value:
        if any(isinstance(v, TensorVal) for v in values):
            return TensorVal(requires_grad=False, leaf=True, storage=self.fresh(), origin=expr)
        if any(v is UNKNOWN for v in values) and not all(isinstance(op, _IDENTITY_TESTS) for op in expr.ops):
            return UNKNOWN  # `a < b` of values not known: a tensor (or an array) for tensors
        if all(isinstance(v, Number) and v.const is not None for v in values):
            folded = constants.fold_compare(expr.ops, [v.const for v in values if isinstance(v, Number)])
            if folded is not constants.NOT_FOLDED:
                return Number(folded)
        return Number(None)

    @handles_expressions(ast.BoolOp)
    def eval_boolean(self, expr: ast.BoolOp, state: State) -> Value:
        """``a and b`` / ``a or b`` as Python runs them: an operand whose truth is a known constant
        either ends the chain (it is the result; the rest never runs) or passes to the next one;
        any other operand may be the result."""
        stops_on = isinstance(expr.op, ast.Or)  # `or` stops at a true operand, `and` at a false one
        result: Value | None = None
        values: list[Value] = []
        for index, operand in enumerate(expr.values):
            value = self.eval(operand, state)
            values.append(value)
            if index == len(expr.values) - 1:
                return self._boolean_result(value if result is None else result.join(value), values)
            truth = constants.known_truth(value.const) if isinstance(value, Number) else None
            if truth is stops_on:
                return self._boolean_result(value if result is None else result.join(value), values)
            if truth is None:
                result = value if result is None else result.join(value)
        return result if result is not None else UNKNOWN

    def _boolean_result(self, result: Value, values: list[Value]) -> Value:
        """Inside a checkpointed function, ``a and b`` keeps the sources of the operands it ran
        that the recomputation does not replay: each decided whether the next ran, or is the result."""
        if not self.run_state.checkpoints:
            return result
        tags = frozenset().union(*(checkpoint_regions.tags_of(value) for value in values))
        if tags and result is UNKNOWN:
            return Number(None, tags)
        return checkpoint_regions.carry(result, values)

    @handles_expressions(ast.IfExp)
    def eval_conditional(self, expr: ast.IfExp, state: State) -> Value:
        test = self.eval(expr.test, state)
        if self.run_state.checkpoints:
            checkpoint_regions.decide(self, test, expr.test, "flow", state)
        return self.eval(expr.body, state).join(self.eval(expr.orelse, state))

    @handles_expressions(ast.NamedExpr)
    def eval_walrus(self, expr: ast.NamedExpr, state: State) -> Value:
        value = self.eval(expr.value, state)
        self.assign(expr.target, value, state, expr.value)
        return value

    # -- containers and items ---------------------------------------------------------------------------
    @handles_expressions(ast.Tuple, ast.List)
    def eval_sequence(self, expr: ast.Tuple | ast.List, state: State) -> Value:
        items = tuple(self.eval(e, state) for e in expr.elts)
        starred = any(isinstance(e, ast.Starred) for e in expr.elts)
        if isinstance(expr, ast.Tuple) and starred:
            return self._starred_tuple(expr, items, state)
        if isinstance(expr, ast.List):
            return self.new_list(state, items, expr, literal=True)
        return TupleVal(items)

    def _starred_tuple(self, expr: ast.Tuple, items: tuple[Value, ...], state: State) -> Value:
        """``(*grads, None)``: the items spread, exactly, when each starred value's are known (a
        tuple, a list built from literals); else a tuple of unknown length, with at least its
        other items (``extra["at_least"]``)."""
        spread: list[Value] = []
        known = True
        for elt, value in zip(expr.elts, items):
            if isinstance(elt, ast.Starred):
                more = self.known_items(value, state, exact=True)
                if more is None:
                    known = False
                    continue
                spread.extend(more)
            else:
                spread.append(value)
        if known:
            return TupleVal(tuple(spread))
        ref = self.new_list(state, items, expr, literal=False)
        state.heap[ref.oid].extra["at_least"] = len(spread)
        return ref

    @handles_expressions(ast.Dict)
    def eval_dict(self, expr: ast.Dict, state: State) -> Value:
        ref = self.new_object(state, "dict", expr)
        obj = state.heap[ref.oid]
        values: list[Value] = []
        for key, val in zip(expr.keys, expr.values):
            value = self.eval(val, state)
            values.append(value)
            if key is not None and isinstance(key, ast.Constant):
                obj.attrs[f"[{key.value!r}]"] = value
            obj.elem = value if obj.elem is None else obj.elem.join(value)
        if all(k is not None for k in expr.keys) and len(values) <= MAX_EXACT_UNROLL:
            obj.attrs["__items__"] = TupleVal(tuple(values))
        return ref

    @handles_expressions(ast.Set)
    def eval_set(self, expr: ast.Set, state: State) -> Value:
        for e in expr.elts:
            self.eval(e, state)
        return UNKNOWN

    @handles_expressions(ast.Starred)
    def eval_starred(self, expr: ast.Starred, state: State) -> Value:
        return self.eval(expr.value, state)

    @handles_expressions(ast.Subscript)
    def eval_subscript(self, expr: ast.Subscript, state: State) -> Value:
        container = self.eval(expr.value, state)
        key = self.eval(expr.slice, state)
        if isinstance(container, TensorVal) and self.run_state.checkpoints:
            checkpoint_regions.decide(self, key, expr.slice, "shape", state)
        if isinstance(container, TensorVal):
            result = torch_api.apply_op(self, state, "Tensor.__getitem__", [container], [expr.value], expr)
            if (_advanced_index(key) and isinstance(result, TensorVal) and result.storage is not None
                    and result.storage == container.storage):
                # `t[mask]`, `t[idx]`: advanced indexing copies (an in-place change of it leaves `t` alone).
                result = replace(result, storage=self.fresh())
            return result
        if isinstance(container, QualName):
            member = library_models.namespace_member(container.name, key.const if isinstance(key, Number) else None)
            return QualName(member) if member is not None else UNKNOWN
        if isinstance(container, TupleVal):
            if isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int):
                try:
                    return container.items[expr.slice.value]
                except IndexError:
                    return UNKNOWN
            if isinstance(expr.slice, ast.Slice):
                return UNKNOWN
            return self.iter_element(container, state)
        if isinstance(container, HeapRef):
            obj = state.heap.get(container.oid)
            if obj is None:
                return UNKNOWN
            if isinstance(key, Number) and isinstance(key.const, (str, int)) and f"[{key.const!r}]" in obj.attrs:
                return obj.attrs[f"[{key.const!r}]"]  # a key with one known value: that slot
            items = obj.attrs.get("__items__") if obj.kind == "list" else None
            if (isinstance(items, TupleVal) and isinstance(key, Number) and isinstance(key.const, int)
                    and not isinstance(key.const, bool) and -len(items.items) <= key.const < len(items.items)):
                return items.items[key.const]  # `outputs[-1]` of a list whose items are known
            if obj.kind == "module" and "library_model" in obj.extra:
                # `vgg.features[4]`: one of a library model's layers
                slot = f"[{key.const!r}]" if isinstance(key, Number) and isinstance(key.const, (str, int)) else "[*]"
                return obj.attrs.get(slot) or torch_api.library_submodule(self, state, container, slot, expr)
            if obj.kind == "module":
                children = obj.attrs.get("__children__")
                if (isinstance(children, TupleVal) and isinstance(expr.slice, ast.Constant)
                        and isinstance(expr.slice.value, int)):
                    try:
                        return children.items[expr.slice.value]
                    except IndexError:
                        return UNKNOWN
            if isinstance(expr.slice, ast.Slice):
                return container if obj.kind == "list" else UNKNOWN
            return obj.elem if obj.elem is not None else UNKNOWN
        return UNKNOWN

    @handles_expressions(ast.Slice)
    def eval_slice(self, expr: ast.Slice, state: State) -> Value:
        """``a:b:c`` in a subscript: its bounds run only inside a checkpointed function, where a
        bound the recomputation does not replay decides a shape (elsewhere a slice is unknown,
        as it always was)."""
        if not self.run_state.checkpoints:
            return UNKNOWN
        bounds = [self.eval(part, state) for part in (expr.lower, expr.upper, expr.step) if part is not None]
        tags = frozenset().union(*(checkpoint_regions.tags_of(bound) for bound in bounds))
        return Number(None, tags) if tags else UNKNOWN

    # -- the rest ---------------------------------------------------------------------------------------
    @handles_expressions(ast.Lambda)
    def eval_lambda(self, expr: ast.Lambda, state: State) -> Value:
        return self.lambda_function(expr, state)

    @handles_expressions(ast.JoinedStr, ast.FormattedValue)
    def eval_formatted(self, expr: ast.JoinedStr | ast.FormattedValue, state: State) -> Value:
        for child in child_nodes(expr):
            if isinstance(child, ast.expr):
                self.eval(child, state)
        return Number(None)

    @handles_expressions(ast.Await, ast.Yield, ast.YieldFrom)
    def eval_yield(self, expr: ast.Await | ast.Yield | ast.YieldFrom, state: State) -> Value:
        value = self.eval(expr.value, state) if expr.value is not None else NONE
        yielded = self.run_state.yielded
        if yielded and isinstance(expr, (ast.Yield, ast.YieldFrom)):
            yielded[-1].append(value if isinstance(expr, ast.Yield) else self.iter_element(value, state))
        return UNKNOWN
