"""Statements: blocks run in order, and the handler of each kind of statement but loops.

Why here: a block is where the engine decides that a path ends (torch raised at a
statement, an inlined call never returned) and where ``break``, ``continue`` and
``return`` leave; the branches (``if``, ``try``, ``match``) join their paths with
must and may facts kept apart. Each statement class has one handler, found by
``exec_stmt`` in the dispatch table (:mod:`graphlife.analysis.engine.core`); loops
have theirs in :mod:`graphlife.analysis.engine.loops`.
"""

from __future__ import annotations

import ast

from graphlife.analysis import checkpoint_regions, library_models, torch_api
from graphlife.analysis.engine.core import EngineCore, handler_for, handles_statements
from graphlife.analysis.engine_api import Flow
from graphlife.analysis.events import StoreEvent
from graphlife.analysis.state import State
from graphlife.analysis.values import (
    NONE,
    UNKNOWN,
    ClassRef,
    ContextVal,
    FunctionRef,
    HeapRef,
    NoneValue,
    Number,
    QualName,
    TensorVal,
    TupleVal,
    Value,
)

_MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")
_FUNCTION_BASES = ("torch.autograd.Function", "torch.autograd.function.Function")
#: ``try`` with ``except*`` (Python 3.11) runs as a ``try``.
_TRY_STAR: tuple[type[ast.stmt], ...] = (ast.TryStar,) if hasattr(ast, "TryStar") else ()


def _no_effect(engine: object, stmt: ast.stmt, state: State) -> Flow:
    """A statement the engine does not model (``pass``, ``global``): control goes on."""
    return Flow(normal=state)


class Statements(EngineCore):
    """Blocks, and every kind of statement except loops."""

    def exec_block(self, body: list[ast.stmt], state: State) -> Flow:
        flow = Flow(normal=state)
        stack = self.run_state.stmt_stack  # a run state swapped inside a statement is back after it
        foreign = self.module is not self.entry
        reporter = self.reporter
        for stmt in body:
            if not flow.normal.reachable:
                break
            self.check_time()
            if foreign:
                self.run_state.foreign_steps += 1
            stack.append(stmt)
            reporter.raised = False
            try:
                inner = self.exec_stmt(stmt, flow.normal)
            except RecursionError:
                inner = Flow(normal=flow.normal)
                self.havoc_targets(stmt, flow.normal)
            finally:
                stack.pop()
            run = self.run_state
            if reporter.raised or run.path_ends:
                run.path_ends = False
                # torch raises at this statement on every path: nothing after it runs.
                inner.normal = inner.normal.dead_copy()
                inner.returns, inner.breaks, inner.continues = [], [], []
                reporter.raised = False
            flow.normal = inner.normal
            self.collect_between_statements(flow.normal)
            if inner.breaks:  # most statements leave by their end only
                flow.breaks.extend(inner.breaks)
            if inner.continues:
                flow.continues.extend(inner.continues)
            if inner.returns:
                flow.returns.extend(inner.returns)
        return flow

    def havoc_targets(self, stmt: ast.stmt, state: State) -> None:
        """After a statement we could not interpret, forget what it may have assigned."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                state.env[node.id] = UNKNOWN

    def exec_stmt(self, stmt: ast.stmt, state: State) -> Flow:
        """Run one statement: the handler its node class declared (:func:`handles_statements`)."""
        handler = self.statement_handlers.get(stmt.__class__)
        if handler is None:
            handler = handler_for(self.statement_handlers, stmt.__class__, _no_effect)
        return handler(self, stmt, state)

    # -- simple statements ---------------------------------------------------------------------------
    @handles_statements(ast.Expr)
    def exec_expression(self, stmt: ast.Expr, state: State) -> Flow:
        value = self.eval(stmt.value, state)
        if isinstance(value, ContextVal) and value.kind == "set_grad_enabled" and isinstance(stmt.value, ast.Call):
            # `torch.set_grad_enabled(False)` called as a function switches the mode from here on.
            state.grad_enabled, state.grad_assumed = value.enabled, False
        return Flow(normal=state)

    @handles_statements(ast.Assign)
    def exec_assign(self, stmt: ast.Assign, state: State) -> Flow:
        value = self.eval(stmt.value, state)
        for target in stmt.targets:
            self.assign(target, value, state, stmt.value)
        return Flow(normal=state)

    @handles_statements(ast.AnnAssign)
    def exec_annotated_assign(self, stmt: ast.AnnAssign, state: State) -> Flow:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value, state), state, stmt.value)
        return Flow(normal=state)

    @handles_statements(ast.AugAssign)
    def exec_augassign(self, stmt: ast.AugAssign, state: State) -> Flow:
        target_value = self.eval(stmt.target, state)
        operand = self.eval(stmt.value, state)
        if isinstance(target_value, TensorVal):
            op = torch_api.AUG_OPS.get(type(stmt.op))
            result = torch_api.apply_inplace(self, state, f"Tensor.{op}" if op else "Tensor.__iadd__",
                                             target_value, stmt.target, [operand], stmt)
            if isinstance(stmt.target, ast.Subscript):
                base = self.eval(stmt.target.value, state)
                if isinstance(base, TensorVal):
                    return Flow(normal=state)  # the view's storage was bumped; the base name keeps its value
            self.assign(stmt.target, result, state, None)
            return Flow(normal=state)
        result = torch_api.binop(self, state, stmt.op, target_value, operand, stmt, stmt.target, stmt.value)
        entry_envs = self.run_state.loop_entry_envs
        if (
            isinstance(stmt.target, ast.Name) and isinstance(result, TensorVal)
            and library_models.stores_graph(self.run_state.graph, result)
            and entry_envs and stmt.target.id in entry_envs[-1][1].env
        ):
            self.emit(StoreEvent(stmt=self.current_stmt(), state=state, value=result,
                                 target=stmt.target.id, kind="accumulate", whole=operand))
        if isinstance(stmt.target, ast.Name) and isinstance(target_value, HeapRef):
            obj = state.heap.get(target_value.oid)
            if obj is not None and obj.kind == "list":
                self.list_extend(state, target_value, operand)
                return Flow(normal=state)
        self.assign(stmt.target, result, state, None)
        return Flow(normal=state)

    @handles_statements(ast.Delete)
    def exec_delete(self, stmt: ast.Delete, state: State) -> Flow:
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                state.env.pop(target.id, None)
            elif isinstance(target, ast.Subscript):
                container = self.eval(target.value, state)
                key = self.eval(target.slice, state)
                if isinstance(container, HeapRef) and container.oid in state.heap:
                    whole = isinstance(target.slice, ast.Slice) and not (
                        target.slice.lower or target.slice.upper or target.slice.step)
                    if whole:
                        torch_api.clear_container(state, container)  # `del items[:]`
                    elif isinstance(key, Number) and isinstance(key.const, (str, int)):
                        state.heap_write(container.oid).attrs.pop(f"[{key.const!r}]", None)
        return Flow(normal=state)

    @handles_statements(ast.Assert)
    def exec_assert(self, stmt: ast.Assert, state: State) -> Flow:
        test = self.eval(stmt.test, state)
        if self.run_state.checkpoints:
            checkpoint_regions.decide(self, test, stmt.test, "flow", state)
        return Flow(normal=state)

    # -- definitions ---------------------------------------------------------------------------------
    @handles_statements(ast.FunctionDef, ast.AsyncFunctionDef)
    def exec_function_def(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef, state: State) -> Flow:
        function = FunctionRef(node=stmt, key=id(stmt), closure=self.closure_of(stmt, state))
        self.bind_definition(stmt, stmt.name, function, state)
        return Flow(normal=state)

    @handles_statements(ast.ClassDef)
    def exec_class_def(self, stmt: ast.ClassDef, state: State) -> Flow:
        self.bind_definition(stmt, stmt.name, self.class_ref(stmt, state), state)
        return Flow(normal=state)

    def class_ref(self, node: ast.ClassDef, state: State) -> ClassRef:
        is_module = False
        is_function = False
        bases: list[Value] = []
        for base in node.bases:
            value = self.eval_quiet(base, state)
            bases.append(value)
            if isinstance(value, QualName):
                canonical = torch_api.canonical(value.name)
                if canonical in _MODULE_BASES or canonical.startswith("torch.nn."):
                    is_module = True
                if canonical in _FUNCTION_BASES:
                    is_function = True
            elif isinstance(value, ClassRef):
                is_module = is_module or value.is_module
                is_function = is_function or value.is_autograd_function
        return ClassRef(node=node, key=id(node), is_module=is_module, is_autograd_function=is_function,
                        bases=tuple(bases))

    # -- leaving a block -----------------------------------------------------------------------------
    @handles_statements(ast.Return)
    def exec_return(self, stmt: ast.Return, state: State) -> Flow:
        value = self.eval(stmt.value, state) if stmt.value is not None else NONE
        returns = self.run_state.backward_returns
        if returns is not None and not self.run_state.frames:
            returns.append((stmt, value, state))
        return Flow(normal=state.dead_copy(), returns=[(state, value)])

    @handles_statements(ast.Raise)
    def exec_raise(self, stmt: ast.Raise, state: State) -> Flow:
        if stmt.exc is not None:
            self.eval(stmt.exc, state)
        return Flow(normal=state.dead_copy())

    @handles_statements(ast.Break)
    def exec_break(self, stmt: ast.Break, state: State) -> Flow:
        return Flow(normal=state.dead_copy(), breaks=[state])

    @handles_statements(ast.Continue)
    def exec_continue(self, stmt: ast.Continue, state: State) -> Flow:
        return Flow(normal=state.dead_copy(), continues=[state])

    # -- branches ------------------------------------------------------------------------------------
    @handles_statements(ast.If)
    def exec_if(self, stmt: ast.If, state: State) -> Flow:
        test = self.eval(stmt.test, state)
        if self.run_state.checkpoints:
            checkpoint_regions.decide(self, test, stmt.test, "flow", state)
        truth = self.truth(test, stmt.test, state)
        if truth is True:
            return self.exec_block(stmt.body, state)
        if truth is False:
            return self.exec_block(stmt.orelse, state)
        then_flow = self.exec_block(stmt.body, state.copy())
        # The else branch goes on with the state itself, as a statement after the `if` would:
        # nothing reads it apart from this path once the then branch has its copy.
        else_flow = self.exec_block(stmt.orelse, state)
        return self.merge_flows([then_flow, else_flow])

    def truth(self, value: Value, expr: ast.expr, state: State) -> bool | None:
        """Static truth of a condition where it is certain (``__name__ == "__main__"``, constants)."""
        if isinstance(expr, ast.Compare) and isinstance(expr.left, ast.Name) and expr.left.id == "__name__":
            return self._main_guard_truth(expr)
        if isinstance(expr, ast.Constant):
            return bool(expr.value)
        if (
            isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], (ast.Is, ast.IsNot))
            and isinstance(expr.comparators[0], ast.Constant) and expr.comparators[0].value is None
        ):
            subject = self.eval_quiet(expr.left, state)
            is_none = None
            if isinstance(subject, NoneValue):
                is_none = True
            elif (isinstance(subject, TensorVal) and not subject.nullable) or isinstance(subject, (TupleVal, HeapRef)):
                is_none = False
            if is_none is not None:
                return is_none if isinstance(expr.ops[0], ast.Is) else not is_none
        if isinstance(value, Number) and value.const is not None and isinstance(value.const, (bool, int)):
            return bool(value.const)
        return None

    def _main_guard_truth(self, expr: ast.Compare) -> bool:
        """``if __name__ == "__main__":`` runs in the file being checked, not in a module it
        imports (any other test of ``__name__`` is taken as the main guard's)."""
        if self.module.is_main:
            return True
        ops, right = expr.ops, expr.comparators
        if len(ops) == 1 and isinstance(right[0], ast.Constant) and right[0].value == "__main__":
            return isinstance(ops[0], ast.NotEq)
        return True

    def merge_flows(self, flows: list[Flow]) -> Flow:
        # The flows are the branches' own (their states are not read again once merged).
        merged = Flow(normal=State.join_all([f.normal for f in flows], owned=True))
        for flow in flows:
            merged.breaks.extend(flow.breaks)
            merged.continues.extend(flow.continues)
            merged.returns.extend(flow.returns)
        return merged

    @handles_statements(ast.Match)
    def exec_match(self, stmt: ast.Match, state: State) -> Flow:
        self.eval(stmt.subject, state)
        flows = [self.exec_block(case.body, state.copy()) for case in stmt.cases]
        flows.append(Flow(normal=state))
        return self.merge_flows(flows)

    @handles_statements(ast.Try, *_TRY_STAR)
    def exec_try(self, stmt: ast.Try, state: State) -> Flow:
        body_flow = self.exec_block(stmt.body, state.copy())
        flows = [self.exec_block(stmt.orelse, body_flow.normal)] if stmt.orelse else [body_flow]
        if stmt.orelse:
            flows[0].breaks.extend(body_flow.breaks)
            flows[0].continues.extend(body_flow.continues)
            flows[0].returns.extend(body_flow.returns)
        if stmt.handlers:
            # A handler starts from a state where any prefix of the body ran: join entry and exit.
            handler_entry = State.join_all([state, body_flow.normal]) if body_flow.normal.reachable else state.copy()
            for handler in stmt.handlers:
                entry = handler_entry.copy()
                if handler.name:
                    entry.env[handler.name] = UNKNOWN
                flows.append(self.exec_block(handler.body, entry))
        merged = self.merge_flows(flows)
        if stmt.finalbody:
            final = self.exec_block(stmt.finalbody, merged.normal)
            final.breaks.extend(merged.breaks)
            final.continues.extend(merged.continues)
            final.returns.extend(merged.returns)
            return final
        return merged

    @handles_statements(ast.With, ast.AsyncWith)
    def exec_with(self, stmt: ast.With | ast.AsyncWith, state: State) -> Flow:
        saved_grad, saved_inference, saved_assumed = state.grad_enabled, state.inference_mode, state.grad_assumed
        for item in stmt.items:
            value = self.eval(item.context_expr, state)
            if isinstance(value, ContextVal):
                torch_api.enter_context(state, value)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, UNKNOWN if isinstance(value, ContextVal) else value, state, None)
        flow = self.exec_block(stmt.body, state)
        for out in [flow.normal, *flow.breaks, *flow.continues, *(s for s, _ in flow.returns)]:
            out.grad_enabled, out.inference_mode, out.grad_assumed = saved_grad, saved_inference, saved_assumed
        return flow
