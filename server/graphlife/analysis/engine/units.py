"""Units: what the engine analyzes from scratch, and the state each one starts from.

Why units: the module body runs first, with every function it calls inlined (the
caller's values know the most); each function or method nothing inlined is then
analyzed alone, starting from the module's names with unknown arguments, and a
method from a ``self`` built by its class's ``__init__``
(:mod:`graphlife.analysis.self_cache`). The language server replays a unit whose
code did not change (:mod:`graphlife.analysis.unit_cache`). The table of the
module's definitions is built here too, quietly: once for the functions analyzed
alone, and once apart from the running analysis for a call run again alone.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from graphlife.analysis import skipped_notes as skipped
from graphlife.analysis.engine.core import EngineCore
from graphlife.analysis.engine.imports import function_foreign_budget
from graphlife.analysis.engine_api import Flow, Timeout
from graphlife.analysis.events import FunctionBackwardEndEvent, UnitEndEvent
from graphlife.analysis.run_state import RunState
from graphlife.analysis.self_cache import BuiltSelf
from graphlife.analysis.state import State
from graphlife.analysis.tree_index import child_nodes
from graphlife.analysis.unit_order import callers_first
from graphlife.analysis.values import UNKNOWN, ClassRef, Number, TensorVal, Value

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_IMPORTS_AND_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _function_walk_step(child: ast.AST, owner: ast.ClassDef | None) -> tuple[bool, ast.ClassDef | None] | None:
    """How the search for functions goes into ``child``: (is it a function, the class owning
    what is inside), or ``None`` when no function of interest can be inside."""
    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True, None
    if isinstance(child, ast.ClassDef):
        return False, child
    if isinstance(child, (ast.If, ast.With, ast.Try, ast.For, ast.While)):
        return False, owner
    return None


def _functions_under(root: ast.AST, owner: ast.ClassDef | None) -> Iterator[tuple[_Function, ast.ClassDef | None]]:
    """The functions and methods inside ``root`` (a statement), depth first, the last child first."""
    stack: list[tuple[ast.AST, ast.ClassDef | None]] = [(root, owner)]
    while stack:
        node, owner = stack.pop()
        for child in child_nodes(node):
            step = _function_walk_step(child, owner)
            if step is not None:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield child, owner
                stack.append((child, step[1]))


def _functions_held(stmt: ast.AST, owner: ast.ClassDef | None) -> list[tuple[_Function, ast.ClassDef | None]]:
    """``list(_functions_under(stmt, owner))``, kept on the node. A class's list is made from its
    methods' lists (the walk of :func:`_functions_under` goes through each child in turn, the
    last first): after an edit in one method of a large class, the language server's new class
    node walks that method again, not every method."""
    found: list[tuple[_Function, ast.ClassDef | None]] | None = getattr(stmt, "_graphlife_functions", None)
    if found is not None:
        return found
    if isinstance(stmt, ast.ClassDef):
        found = []
        children: list[tuple[ast.AST, ast.ClassDef | None]] = []
        for child in child_nodes(stmt):
            step = _function_walk_step(child, owner)
            if step is not None:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.append((child, owner))
                children.append((child, step[1]))
        for child, inner in reversed(children):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.extend(_functions_held(child, None))  # what a function holds does not depend on where it is
            else:
                found.extend(_functions_under(child, inner))
    else:
        found = list(_functions_under(stmt, owner))
    setattr(stmt, "_graphlife_functions", found)  # noqa: B010 - a cache hung on the node
    return found


class Units(EngineCore):
    """The file's units in order, the state each starts from, and the module's definitions."""

    def run(self) -> list[str]:
        """Analyze the module body, then every function nothing inlined; notes about skipped work."""
        notes: list[str] = []
        tree = self.tree
        try:
            self.run_cached(tree, lambda: self.run_unit(tree.body, self.initial_state(), tree))
        except Timeout:
            return [skipped.TIME_BOX_CODE()]
        except RecursionError:
            notes.append(skipped.MODULE_TOO_DEEP())
        if self.unit_cache is not None:
            self.unit_cache.read_definitions(self)
        index = self.entry.index
        functions = callers_first(list(self.iter_functions()), index.parents)
        share = function_foreign_budget(len(functions))
        for func, owner in functions:
            if id(func) in self.inlined:
                continue  # already analyzed with the caller's values, which know more
            function = self._autograd_function_of(func, owner)
            if function is not None and func.name == "setup_context":
                continue  # runs after forward, in forward's unit (or where `apply` ran it)
            try:
                self.run_state.emitting = True
                self.foreign_budget = share
                current_self: Callable[[], object] | None = None
                if function is None:
                    unit = self._function_unit(func, owner)
                    if owner is not None:
                        current_self = self._self_of(func, owner)
                elif func.name == "backward":
                    unit = self._backward_unit(func, owner, function)
                else:
                    unit = self._forward_unit(func, function)
                self.run_cached(func, unit, current_self)
            except Timeout:
                notes.append(skipped.TIME_BOX_FUNCTIONS())
                break
            except RecursionError:
                notes.append(skipped.FUNCTION_TOO_DEEP(name=func.name))
        return notes

    def _autograd_function_of(self, func: _Function, owner: ast.ClassDef | None) -> ClassRef | None:
        """The custom autograd Function whose static ``forward``, ``setup_context`` or ``backward``
        ``func`` is: forward is analyzed the way ``apply`` runs it (:meth:`_forward_unit`, with
        ``setup_context`` after it), backward with a ctx and its gradients (:meth:`_backward_unit`),
        not as plain functions."""
        if owner is None or func.name not in ("forward", "setup_context", "backward"):
            return None
        if not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list):
            return None
        ref = self.lookup_class(owner, self.module_names())
        if not isinstance(ref, ClassRef) or not ref.is_autograd_function:
            return None
        if func.name == "setup_context" and self.find_method(ref, "forward", self.module_names()) is None:
            return None
        return ref

    def _forward_unit(self, forward: _Function, ref: ClassRef) -> Callable[[], None]:
        """A custom Function's forward that nothing applied: run as ``apply`` runs it, with a ctx
        and abstract inputs (``run_forward_alone``, :mod:`graphlife.analysis.engine.autograd_functions`)."""

        def run() -> None:
            state = self.module_names().copy()
            run = self.run_state
            run.current_unit, run.no_grad_writes, run.foreign_steps = forward, {}, 0
            run.stmt_stack.append(forward)
            try:
                self.run_forward_alone(ref, forward, state)
                self.emit(UnitEndEvent(stmt=forward, state=state, unit=forward))
            finally:
                run.stmt_stack.pop()

        return run

    def _backward_unit(self, backward: _Function, owner: ast.ClassDef | None, ref: ClassRef) -> Callable[[], None]:
        """A custom Function's backward (torch calls it, never the file): with a ctx and a tensor for
        each gradient it receives (``start_backward``, :mod:`graphlife.analysis.engine.autograd_functions`)."""

        def run() -> None:
            state = self.function_entry_state(backward, owner)
            self.run_state.stmt_stack.append(backward)
            try:
                self.start_backward(ref, backward, state)
            finally:
                self.run_state.stmt_stack.pop()
            returns: list[tuple[ast.Return, Value, State]] = []
            self.run_state.backward_returns = returns

            def ended(flow: Flow, final: State) -> None:
                self.run_state.backward_returns = None
                self.emit(FunctionBackwardEndEvent(stmt=backward, state=final, function=ref.node, backward=backward,
                                                   returns=tuple(returns), falls_through=flow.normal.reachable))

            try:
                self.run_unit(backward.body, state, backward, before_end=ended)
            finally:
                self.run_state.backward_returns = None

        return run

    def _function_unit(self, func: _Function, owner: ast.ClassDef | None) -> Callable[[], None]:
        """Running ``func`` alone, as the unit cache calls it when it cannot replay it."""
        return lambda: self.run_unit(func.body, self.function_entry_state(func, owner), func)

    def _self_of(self, func: _Function, owner: ast.ClassDef) -> Callable[[], BuiltSelf | None]:
        """What builds (or finds) the ``self`` a method analyzed alone starts from, doing to the
        run what building it does (for the unit cache: its record is replayed after an edit of
        ``__init__`` when that ``self`` prints the same, :mod:`graphlife.analysis.self_print`)."""

        def build() -> BuiltSelf | None:
            run = self.run_state
            saved, run.self_built = run.self_built, []
            try:
                self.function_entry_state(func, owner)
                found = [item for item in run.self_built if isinstance(item, BuiltSelf)]
            finally:
                run.self_built = saved
            return found[0] if len(found) == 1 else None

        return build

    def run_cached(self, unit: ast.AST, run: Callable[[], None],
                   current_self: Callable[[], object] | None = None) -> None:
        """Run one unit (the module body or a function analyzed alone), or let the unit cache
        replay what it recorded for the same code (the language server, after an edit elsewhere)."""
        if self.unit_cache is None:
            run()
        else:
            self.unit_cache.run(self, unit, run, current_self)

    def run_unit(self, body: list[ast.stmt], state: State, unit: ast.AST | None = None,
                 before_end: Callable[[Flow, State], None] | None = None) -> None:
        """Run a unit's body; ``before_end`` is told how it ended (its flow and final state) before
        the rules are (``UnitEndEvent``)."""
        run = self.run_state
        run.current_unit, run.no_grad_writes, run.foreign_steps = unit, {}, 0
        flow = self.exec_block(body, state)
        final = State.join_all([flow.normal, *(s for s, _ in flow.returns)])
        if before_end is not None:
            before_end(flow, final)
        if body:
            run.stmt_stack.append(body[-1])
            try:
                self.emit(UnitEndEvent(stmt=body[-1], state=final, unit=unit))
            finally:
                run.stmt_stack.pop()

    def initial_state(self) -> State:
        return State()

    def iter_functions(self) -> Iterator[tuple[_Function, ast.ClassDef | None]]:
        """Every function and method of the file (nested ones included): the top-level functions
        in file order, then what each top-level statement holds, the last statement first.

        What a statement holds is kept on it (the language server reuses the statements of
        unchanged blocks, so a keystroke does not walk the whole file for this)."""
        entries: list[tuple[ast.stmt, ast.ClassDef | None]] = []
        for stmt in self.tree.body:
            step = _function_walk_step(stmt, None)
            if step is not None:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield stmt, None
                entries.append((stmt, step[1]))
        for stmt, owner in reversed(entries):
            yield from _functions_held(stmt, owner)

    # -- the state a unit starts from ------------------------------------------------------------------
    def module_names(self) -> State:
        """Once per file: the module-level names a function analyzed alone sees (imports, defs, constants)."""
        if self._module_names is None:
            self._module_names = State()
            with self.quiet(), self.in_module(self.entry):
                self.bind_module_definitions(self._module_names)
                self.preload_imports(self._module_names)
        return self._module_names

    def definitions_table(self) -> dict[str, Value]:
        """This version's module-level imports, functions and classes bound once, by name (what
        the file's run has in ``globals`` once the module body ran), without touching the running
        analysis: a call run again alone (:mod:`graphlife.analysis.unit_cache`) may ask for it
        in the middle of the module body. Built quietly, in a run state of its own."""
        if self._definitions_table is None:
            run = RunState(emitting=False, create_graph_seen=self.run_state.create_graph_seen)
            with self.swapped_run_state(run), self.in_module(self.entry):
                self.bind_module_definitions(State())
            self._definitions_table = run.globals
        return self._definitions_table

    def function_entry_state(self, func: _Function, owner: ast.ClassDef | None) -> State:
        """Module-level names known (imports, classes, functions, simple globals); params unknown."""
        state = self.module_names().copy()
        state.grad_assumed = True  # its callers are unknown: they may run it under no_grad
        args = func.args.posonlyargs + func.args.args
        is_static = any(self.text(d) == "staticmethod" for d in func.decorator_list)
        is_classmethod = any(self.text(d) == "classmethod" for d in func.decorator_list)
        for index, arg in enumerate(args):
            state.env[arg.arg] = UNKNOWN
            if index == 0 and owner is not None and not is_static and not is_classmethod:
                ref = self.lookup_class(owner, state)
                if isinstance(ref, ClassRef) and func.name != "__init__":
                    # `self` is what `__init__` makes: built once per class (:mod:`self_cache`).
                    state, instance = self.self_cache.entry_state(self, ref, func, arg.arg, state)
                    state.env[arg.arg] = instance
        for arg in func.args.kwonlyargs:
            state.env[arg.arg] = UNKNOWN
        if func.args.vararg:
            state.env[func.args.vararg.arg] = UNKNOWN
        if func.args.kwarg:
            state.env[func.args.kwarg.arg] = UNKNOWN
        return state

    def lookup_class(self, owner: ast.ClassDef, state: State) -> Value:
        self.touch(owner)
        value = state.env.get(owner.name)
        if isinstance(value, ClassRef) and value.node is owner:
            return value
        return self.class_ref(owner, state)

    def bind_module_definitions(self, state: State) -> None:
        """Imports, defs, classes and constant-ish module assignments, for a function analyzed alone."""
        stack = self.run_state.stmt_stack
        for stmt in self.tree.body:
            if isinstance(stmt, _IMPORTS_AND_DEFINITIONS):
                stack.append(stmt)
                try:
                    self.exec_stmt(stmt, state)
                finally:
                    stack.pop()
            elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
                value: Value = UNKNOWN
                if isinstance(stmt.value, ast.Constant):
                    value = Number(stmt.value.value)
                elif isinstance(stmt.value, (ast.Attribute, ast.Name)):
                    value = self.eval_quiet(stmt.value, state)
                rebound_by_functions = self.module.index.declared_global
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        # A function that says `global name` may have assigned it before this one runs.
                        known = not isinstance(value, TensorVal) and target.id not in rebound_by_functions
                        state.env[target.id] = value if known else UNKNOWN
