"""The abstract interpreter: walks each unit (module body, function, method) in
program order over abstract values, builds graph nodes, and emits events.

Why an interpreter and not patterns: the bugs graphlife finds span loops and
functions ("built in iteration k, freed by its backward, reached again in
iteration k+1 through a carried variable"). Loops are unrolled twice (exactly,
once per item, when iterating a known tuple of modules); branches are joined
keeping must/may apart; functions and methods of the same file are inlined
with the caller's values (bounded depth); unknown calls give unknown values,
which are never the basis of an error.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable

from graphlife.analysis import isolation, scopes, torch_api
from graphlife.analysis.call_memo import CallMemo
from graphlife.analysis.events import Event, LoopEndEvent, StoreEvent, UnitEndEvent
from graphlife.analysis.positions import node_span
from graphlife.analysis.rule_api import ModuleContext, Reporter, Rule, RuleContext, hooks_by_event
from graphlife.analysis.run_state import CallFrame, RunState
from graphlife.analysis.self_cache import SelfCache
from graphlife.analysis.state import State
from graphlife.analysis.tree_index import TreeIndex
from graphlife.analysis.values import (
    replace,
    NONE,
    UNKNOWN,
    BoundMethod,
    ClassRef,
    ContextVal,
    FunctionRef,
    HeapObject,
    HeapRef,
    Number,
    QualName,
    TensorVal,
    TupleVal,
    ValuesIndices,
    Value,
)
from graphlife.findings import Finding, Span

MAX_INLINE_DEPTH = 6
MAX_EXACT_UNROLL = 8
#: Loops nested deeper than this (with the comprehensions and the loops of the inlined callers)
#: run their body once, not twice: each level of two iterations doubles the work, and a file of
#: twenty nested loops would otherwise never finish. Bugs between iterations live in the outer
#: levels (epochs, batches, time steps).
MAX_UNROLLED_NESTING = 6
HEAP_GC_THRESHOLD = 64


class Timeout(Exception):
    """The per-file time box ran out."""


@dataclass
class Flow:
    """Where control goes after a block: on, or out through break/continue/return."""

    normal: State
    breaks: list[State] = field(default_factory=list)
    continues: list[State] = field(default_factory=list)
    returns: list[tuple[State, Value]] = field(default_factory=list)


def analyze_module(
    tree: ast.Module, source: str, rules: list[Rule], *, deadline: float, index: TreeIndex | None = None, unit_cache=None,
    lines: list[str] | None = None,
) -> tuple[list[Finding], list[str]]:
    """Findings of ``rules`` on one parsed file, and notes about skipped work.

    ``index`` and ``unit_cache`` are for the language server, which keeps them between
    edits (:mod:`graphlife.incremental`); the findings are the same without them."""
    reporter = Reporter()
    lines = lines if lines is not None else source.splitlines()
    notes: list[str] = []
    whole_file = index is None
    if whole_file:  # a full check: one walk of the file, shared with the rules that need one
        index = TreeIndex.of_module(tree)
        tree._graphlife_located = index.located
    try:
        context = ModuleContext(tree=tree, source=source, lines=lines, reporter=reporter)
        for rule in rules:
            if rule.check_module is not None:
                try:
                    rule.check_module(context)
                except Exception as exc:  # a rule bug must not cost the other rules
                    notes.append(f"rule {rule.code} failed: {type(exc).__name__}: {exc}")
        hooked = [rule for rule in rules if rule.hooks]
        if hooked:
            interpreter = Interpreter(tree, source, lines, hooked, reporter, deadline, index=index, unit_cache=unit_cache)
            try:
                notes.extend(interpreter.run())
            except Exception as exc:  # noqa: BLE001 - an engine bug must never take the editor down
                notes.append(f"internal error in the engine ({type(exc).__name__}: {exc}); some findings may be missing")
            finally:
                interpreter.ctx = None  # the hooks' context refers back to the interpreter
    finally:
        release_tree(tree, whole_file)
    return reporter.findings, notes


def release_tree(tree: ast.Module, whole_file: bool) -> None:
    """Take back what a check hung on the tree that refers back into it.

    Why: the GL4 rules' index of the file keeps the tree it maps, and the top-level
    functions found in a class keep the class as their owner. Left there, they put the
    tree in reference cycles: after a check of 5,000 lines, 65,000 objects that only the
    cycle collector frees, at the cost of the next file's time. The language server keeps
    the statements of unchanged blocks between edits (``whole_file`` False), and their
    caches with them: only the file-wide index goes then. A caller that checks the same
    tree again builds what it needs again; nothing else reads these after the check.
    """
    for name in ("_graphlife_located", "_graphlife_gl4_index"):
        tree.__dict__.pop(name, None)
    if whole_file:
        for stmt in tree.body:
            stmt.__dict__.pop("_graphlife_functions", None)


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


def _functions_under(root: ast.AST, owner: ast.ClassDef | None) -> Iterable[tuple[ast.AST, ast.ClassDef | None]]:
    """The functions and methods inside ``root`` (a statement), depth first, the last child first."""
    stack: list[tuple[ast.AST, ast.ClassDef | None]] = [(root, owner)]
    while stack:
        node, owner = stack.pop()
        for child in ast.iter_child_nodes(node):
            step = _function_walk_step(child, owner)
            if step is not None:
                if step[0]:
                    yield child, owner
                stack.append((child, step[1]))


def _methods_of(node: ast.ClassDef) -> dict[str, ast.AST]:
    """The methods a class body defines, by name (the first of a name, as a scan finds it); kept
    on the class node: a lookup per `self.x` scanned the body, 15% of the work on a large class."""
    table = getattr(node, "_graphlife_methods", None)
    if table is None:
        table = {}
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                table.setdefault(stmt.name, stmt)
        node._graphlife_methods = table
    return table


class Interpreter:
    """Interprets one file's units and dispatches events to rule hooks."""

    def __init__(self, tree: ast.Module, source: str, lines: list[str], rules: list[Rule], reporter: Reporter, deadline: float,
                 index: TreeIndex | None = None, unit_cache=None):
        self.tree = tree
        self.source = source
        self.lines = lines
        self.reporter = reporter
        self.deadline = deadline
        self.hooks = hooks_by_event(rules)  # event class -> the rules' hooks on it
        self.ctx = RuleContext(self)  # what the hooks see of the interpreter
        self._text_cache: dict[int, str] = {}
        #: Where the running run is, and what it made and noted (:mod:`graphlife.analysis.run_state`):
        #: the module body and the functions analyzed alone run in this one, one after the other.
        self.run_state = RunState()
        self._module_names: State | None = None  # the module's names a function analyzed alone starts from
        self._definitions_table: dict[str, Value] | None = None  # see ``definitions_table``
        self.backward_count = 0  # backwards run so far (a loop's end counts those it saw)
        #: The expression a hover story watches and what it recorded (``None``: no story); set
        #: only by :class:`WatchingInterpreter`, whose ``eval`` records the watched values.
        self.watch: tuple[ast.AST, list] | None = None
        self.inlined: set[int] = set()  # functions analyzed by inlining (not analyzed alone then)
        index = index if index is not None else TreeIndex.of_module(tree)
        self.parents: dict[int, ast.AST] = index.parents
        self.if_nodes: list[ast.If] = index.if_nodes  # for rules that look for guards (GL304)
        self.rebound = index.rebound
        self._generators: set[int] = index.generators  # generator functions (no walk per call)
        self.unit_cache = unit_cache
        #: Run calls that take and return no graph apart (:mod:`graphlife.analysis.isolation`).
        #: Off only for the hover story, which reads the graph of the whole run at its end.
        self.isolate_calls = isolation.ENABLED
        self.self_cache = SelfCache()  # the `self` of the methods analyzed alone, per class
        self.call_memo = CallMemo()  # inlined calls that changed nothing, replayed (:mod:`call_memo`)
        self.emitted = 0  # events emitted so far
        self.inline_log: list[ast.AST] = []  # every function inlined so far, in order (for the memo)
        self.walrus_possible = ":=" in source  # else only statements bind names (:mod:`scopes`)
        self.last_call_roots: list[Value] = []  # what the last inlined call's garbage collection kept

    # -- small helpers --------------------------------------------------------------
    def fresh(self) -> int:
        self.run_state.next_id += 1
        return self.run_state.next_id

    def span(self, node: ast.AST) -> Span:
        return node_span(node, self.lines)

    def text(self, node: ast.AST | None) -> str:
        """The source text of a node (shortened), from the lines already split: this is on the hot path."""
        if node is None:
            return ""
        key = id(node)
        cached = self._text_cache.get(key)
        if cached is not None:
            return cached
        segment = self._segment(node)
        if segment is None:
            try:
                segment = ast.unparse(node)
            except Exception:  # noqa: BLE001
                segment = ""
        segment = segment if len(segment) <= 80 else segment[:77] + "..."
        self._text_cache[key] = segment
        return segment

    def function_text(self, node: ast.AST) -> str | None:
        """The whole source text of a function (``None`` when its position is unknown)."""
        return self._segment(node)

    def _segment(self, node: ast.AST) -> str | None:
        line, end_line = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if None in (line, end_line, col, end_col) or end_line > len(self.lines):
            return None
        if line == end_line:
            return self.lines[line - 1].encode("utf-8")[col:end_col].decode("utf-8", "replace")
        first = self.lines[line - 1].encode("utf-8")[col:].decode("utf-8", "replace")
        last = self.lines[end_line - 1].encode("utf-8")[:end_col].decode("utf-8", "replace")
        return "\n".join([first, *self.lines[line:end_line - 1], last])

    def current_stmt(self) -> ast.stmt:
        return self.run_state.stmt_stack[-1]

    def blame(self, stmt: ast.stmt, expr: ast.expr | None) -> ast.stmt:
        """Where to report a fault of the value ``expr`` at ``stmt``: when the value came in as an
        argument of an inlined helper, the caller's call statement (recursively) is where the
        helper was misused, so that is the line to underline."""
        for frame in reversed(self.run_state.frames):
            if not isinstance(expr, ast.Name) or expr.id not in frame.params or frame.call is None:
                break
            index = frame.params.index(expr.id) - (1 if frame.bound else 0)
            argument = None
            if 0 <= index < len(frame.call.args):
                argument = frame.call.args[index]
            else:
                argument = next((kw.value for kw in frame.call.keywords if kw.arg == expr.id), None)
            stmt, expr = frame.stmt, argument
        return stmt

    def current_loop(self) -> ast.AST | None:
        return self.run_state.loop_stack[-1][0] if self.run_state.loop_stack else None

    def iteration(self) -> tuple[int, ...]:
        return tuple(i for _, i in self.run_state.loop_stack)

    def emit(self, event: Event) -> None:
        self.emitted += 1  # events sent or not, for the memo of calls that change nothing
        if not self.run_state.emitting:
            return
        for hook in self.hooks.get(type(event), ()):
            hook(event, self.ctx)

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise Timeout

    @contextmanager
    def swapped_run_state(self, run: RunState) -> Iterator[RunState]:
        """Run with ``run`` as the run state, and give the previous one back after, whatever
        happens (:mod:`graphlife.analysis.run_state`)."""
        previous, self.run_state = self.run_state, run
        try:
            yield run
        finally:
            self.run_state = previous

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """No rule sees the events of what runs inside (a quiet evaluation of the module's definitions)."""
        run = self.run_state
        emitting, run.emitting = run.emitting, False
        try:
            yield
        finally:
            run.emitting = emitting

    # -- units ----------------------------------------------------------------------
    def run(self) -> list[str]:
        notes: list[str] = []
        try:
            self.run_cached(self.tree, lambda: self.run_unit(self.tree.body, self.initial_state(), self.tree))
        except Timeout:
            return ["analysis stopped at the time box; later code was not analyzed"]
        except RecursionError:
            notes.append("module body too deeply nested; parts were not analyzed")
        if self.unit_cache is not None:
            self.unit_cache.read_definitions(self)
        for func, owner in self.iter_functions():
            if id(func) in self.inlined:
                continue  # already analyzed with the caller's values, which know more
            try:
                self.run_state.emitting = True
                self.run_cached(func, lambda: self.run_unit(func.body, self.function_entry_state(func, owner), func))
            except Timeout:
                notes.append("analysis stopped at the time box; later functions were not analyzed")
                break
            except RecursionError:
                notes.append(f"function {func.name} too deeply nested; not analyzed")
        return notes

    def run_cached(self, unit: ast.AST, run) -> None:
        """Run one unit (the module body or a function analyzed alone), or let the unit cache
        replay what it recorded for the same code (the language server, after an edit elsewhere)."""
        if self.unit_cache is None:
            run()
        else:
            self.unit_cache.run(self, unit, run)

    def touch(self, node: ast.AST) -> None:
        """Note that the running unit read the code of ``node`` (a function or class of this file)."""
        if self.run_state.touched is not None:
            self.run_state.touched[id(node)] = node

    def touch_whole_file(self) -> None:
        """Note that the running unit read every definition of the file (a fix proof that looks
        for callers or gradient users anywhere): after any edit the unit cache runs it again.
        Methods are noted one by one, as the cache tracks them apart."""
        if self.run_state.touched is None:
            return
        for stmt in self.tree.body:
            self.touch(stmt)
            if isinstance(stmt, ast.ClassDef):
                for item in stmt.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.touch(item)

    def enclosing_function(self, node: ast.AST) -> ast.AST | None:
        """The function whose code ``node`` is (``None`` at module level)."""
        current = self.parents.get(id(node))
        while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            current = self.parents.get(id(current))
        return current

    def run_unit(self, body: list[ast.stmt], state: State, unit: ast.AST | None = None) -> None:
        self.run_state.current_unit, self.run_state.no_grad_writes = unit, {}
        flow = self.exec_block(body, state)
        final = State.join_all([flow.normal, *(s for s, _ in flow.returns)])
        if body:
            self.run_state.stmt_stack.append(body[-1])
            try:
                self.emit(UnitEndEvent(stmt=body[-1], state=final, unit=unit))
            finally:
                self.run_state.stmt_stack.pop()

    def note_module_call(self, ref: HeapRef, call: ast.AST) -> None:
        for calls in self.run_state.module_calls:
            calls.append((ref, call))

    def initial_state(self) -> State:
        return State()

    def iter_functions(self) -> Iterable[tuple[ast.FunctionDef, ast.ClassDef | None]]:
        """Every function and method of the file (nested ones included): the top-level functions
        in file order, then what each top-level statement holds, the last statement first.

        What a statement holds is kept on it (the language server reuses the statements of
        unchanged blocks, so a keystroke does not walk the whole file for this)."""
        entries: list[tuple[ast.stmt, ast.ClassDef | None]] = []
        for stmt in self.tree.body:
            step = _function_walk_step(stmt, None)
            if step is not None:
                if step[0]:
                    yield stmt, None
                entries.append((stmt, step[1]))
        for stmt, owner in reversed(entries):
            found = getattr(stmt, "_graphlife_functions", None)
            if found is None:
                found = stmt._graphlife_functions = list(_functions_under(stmt, owner))
            yield from found

    def module_names(self) -> State:
        """Once per file: the module-level names a function analyzed alone sees (imports, defs, constants)."""
        if self._module_names is None:
            self._module_names = State()
            with self.quiet():
                self.bind_module_definitions(self._module_names)
        return self._module_names

    def definitions_table(self) -> dict[str, Value]:
        """This version's module-level imports, functions and classes bound once, by name (what
        the file's run has in ``globals`` once the module body ran), without touching the running
        analysis: a call run again alone (:mod:`graphlife.analysis.unit_cache`) may ask for it
        in the middle of the module body. Built in a run state of its own, quietly."""
        if self._definitions_table is None:
            run = RunState(emitting=False, create_graph_seen=self.run_state.create_graph_seen)
            with self.swapped_run_state(run):
                self.bind_module_definitions(State())
            self._definitions_table = run.globals
        return self._definitions_table

    def function_entry_state(self, func: ast.FunctionDef, owner: ast.ClassDef | None) -> State:
        """Module-level names known (imports, classes, functions, simple globals); params unknown."""
        state = self.module_names().copy()
        state.grad_assumed = True  # its callers are unknown: they may run it under no_grad
        args = func.args.posonlyargs + func.args.args
        is_static = any(self.text(d) == "staticmethod" for d in func.decorator_list)
        for index, arg in enumerate(args):
            state.env[arg.arg] = UNKNOWN
            is_classmethod = any(self.text(d) == "classmethod" for d in func.decorator_list)
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
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.run_state.stmt_stack.append(stmt)
                try:
                    self.exec_stmt(stmt, state)
                finally:
                    self.run_state.stmt_stack.pop()
            elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
                value = UNKNOWN
                if isinstance(stmt.value, ast.Constant):
                    value = Number(stmt.value.value)
                elif isinstance(stmt.value, (ast.Attribute, ast.Name)):
                    value = self.eval_quiet(stmt.value, state)
                for target in stmt.targets:
                    state.env[target.id] = value if not isinstance(value, TensorVal) else UNKNOWN

    def eval_quiet(self, expr: ast.expr, state: State) -> Value:
        try:
            return self.eval(expr, state)
        except (Timeout, RecursionError):
            raise
        except Exception:  # noqa: BLE001
            return UNKNOWN

    # -- statements -----------------------------------------------------------------
    def exec_block(self, body: list[ast.stmt], state: State) -> Flow:
        flow = Flow(normal=state)
        for stmt in body:
            if not flow.normal.reachable:
                break
            self.check_time()
            self.run_state.stmt_stack.append(stmt)
            self.reporter.raised = False
            try:
                inner = self.exec_stmt(stmt, flow.normal)
            except RecursionError:
                inner = Flow(normal=flow.normal)
                self.havoc_targets(stmt, flow.normal)
            finally:
                self.run_state.stmt_stack.pop()
            if self.reporter.raised or self.run_state.path_ends:
                self.run_state.path_ends = False
                # torch raises at this statement on every path: nothing after it runs.
                inner.normal = inner.normal.copy()
                inner.normal.reachable = False
                inner.returns, inner.breaks, inner.continues = [], [], []
                self.reporter.raised = False
            flow.normal = inner.normal
            flow.breaks.extend(inner.breaks)
            flow.continues.extend(inner.continues)
            flow.returns.extend(inner.returns)
        return flow

    def havoc_targets(self, stmt: ast.stmt, state: State) -> None:
        """After a statement we could not interpret, forget what it may have assigned."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                state.env[node.id] = UNKNOWN

    def exec_stmt(self, stmt: ast.stmt, state: State) -> Flow:  # noqa: C901 (one dispatch)
        if isinstance(stmt, ast.Expr):
            value = self.eval(stmt.value, state)
            if isinstance(value, ContextVal) and value.kind == "set_grad_enabled" and isinstance(stmt.value, ast.Call):
                # `torch.set_grad_enabled(False)` called as a function switches the mode from here on.
                state.grad_enabled, state.grad_assumed = value.enabled, False
        elif isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, state)
            for target in stmt.targets:
                self.assign(target, value, state, stmt.value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, self.eval(stmt.value, state), state, stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            self.exec_augassign(stmt, state)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self.exec_import(stmt, state)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.bind_definition(stmt, stmt.name, FunctionRef(node=stmt, key=id(stmt)), state)
        elif isinstance(stmt, ast.ClassDef):
            self.bind_definition(stmt, stmt.name, self.class_ref(stmt, state), state)
        elif isinstance(stmt, ast.If):
            return self.exec_if(stmt, state)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            return self.exec_for(stmt, state)
        elif isinstance(stmt, ast.While):
            return self.exec_while(stmt, state)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            return self.exec_with(stmt, state)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            return self.exec_try(stmt, state)
        elif isinstance(stmt, ast.Return):
            value = self.eval(stmt.value, state) if stmt.value is not None else NONE
            dead = state.copy()
            dead.reachable = False
            return Flow(normal=dead, returns=[(state, value)])
        elif isinstance(stmt, ast.Raise):
            if stmt.exc is not None:
                self.eval(stmt.exc, state)
            dead = state.copy()
            dead.reachable = False
            return Flow(normal=dead)
        elif isinstance(stmt, ast.Break):
            dead = state.copy()
            dead.reachable = False
            return Flow(normal=dead, breaks=[state])
        elif isinstance(stmt, ast.Continue):
            dead = state.copy()
            dead.reachable = False
            return Flow(normal=dead, continues=[state])
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    state.env.pop(target.id, None)
        elif isinstance(stmt, ast.Assert):
            self.eval(stmt.test, state)
        elif isinstance(stmt, ast.Match):
            return self.exec_match(stmt, state)
        return Flow(normal=state)

    def bind_definition(self, stmt: ast.stmt, name: str, value: Value, state: State) -> None:
        """Top-level imports, functions and classes live in one shared table, not in every state:
        copying and joining states then costs nothing for them (large files have hundreds)."""
        if self.parents.get(id(stmt)) is self.tree and not self.rebound.get(name):
            self.run_state.globals[name] = value
            state.env.pop(name, None)
        else:
            state.env[name] = value

    def exec_import(self, stmt: ast.Import | ast.ImportFrom, state: State) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self.bind_definition(stmt, alias.asname, QualName(alias.name), state)
                else:
                    top = alias.name.split(".")[0]
                    self.bind_definition(stmt, top, QualName(top), state)
        else:
            module = stmt.module or ""
            for alias in stmt.names:
                if alias.name == "*":
                    continue
                self.bind_definition(stmt, alias.asname or alias.name, QualName(f"{module}.{alias.name}" if module else alias.name), state)

    def class_ref(self, node: ast.ClassDef, state: State) -> ClassRef:
        is_module = False
        is_function = False
        for base in node.bases:
            value = self.eval_quiet(base, state)
            if isinstance(value, QualName):
                canonical = torch_api.canonical(value.name)
                if canonical in ("torch.nn.Module", "torch.nn.modules.module.Module") or canonical.startswith("torch.nn."):
                    is_module = True
                if canonical in ("torch.autograd.Function", "torch.autograd.function.Function"):
                    is_function = True
            elif isinstance(value, ClassRef):
                is_module = is_module or value.is_module
                is_function = is_function or value.is_autograd_function
        return ClassRef(node=node, key=id(node), is_module=is_module, is_autograd_function=is_function)

    def exec_augassign(self, stmt: ast.AugAssign, state: State) -> None:
        target_value = self.eval(stmt.target, state)
        operand = self.eval(stmt.value, state)
        if isinstance(target_value, TensorVal):
            op = torch_api.AUG_OPS.get(type(stmt.op))
            result = torch_api.apply_inplace(self, state, f"Tensor.{op}" if op else "Tensor.__iadd__",
                                             target_value, stmt.target, [operand], stmt)
            if isinstance(stmt.target, ast.Subscript):
                base = self.eval(stmt.target.value, state)
                if isinstance(base, TensorVal):
                    return  # the view's storage was bumped; the base name keeps its value
            self.assign(stmt.target, result, state, None)
        else:
            result = torch_api.binop(self, state, stmt.op, target_value, operand, stmt, stmt.target, stmt.value)
            if (
                isinstance(stmt.target, ast.Name) and isinstance(result, TensorVal) and result.requires_grad is True
                and self.run_state.loop_entry_envs and stmt.target.id in self.run_state.loop_entry_envs[-1][1].env
            ):
                self.emit(StoreEvent(stmt=self.current_stmt(), state=state, value=result,
                                              target=stmt.target.id, kind="accumulate", whole=operand))
            if isinstance(stmt.target, ast.Name) and isinstance(target_value, HeapRef) and isinstance(operand, Value):
                obj = state.heap.get(target_value.oid)
                if obj is not None and obj.kind == "list":
                    self.list_extend(state, target_value, operand)
                    return
            self.assign(stmt.target, result, state, None)

    def exec_if(self, stmt: ast.If, state: State) -> Flow:
        test = self.eval(stmt.test, state)
        truth = self.truth(test, stmt.test, state)
        if truth is True:
            return self.exec_block(stmt.body, state)
        if truth is False:
            return self.exec_block(stmt.orelse, state)
        then_flow = self.exec_block(stmt.body, state.copy())
        else_flow = self.exec_block(stmt.orelse, state.copy())
        return self.merge_flows([then_flow, else_flow])

    def truth(self, value: Value, expr: ast.expr, state: State) -> bool | None:
        """Static truth of a condition where it is certain (``__name__ == "__main__"``, constants)."""
        if isinstance(expr, ast.Compare) and isinstance(expr.left, ast.Name) and expr.left.id == "__name__":
            return True
        if isinstance(expr, ast.Constant):
            return bool(expr.value)
        if (
            isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], (ast.Is, ast.IsNot))
            and isinstance(expr.comparators[0], ast.Constant) and expr.comparators[0].value is None
        ):
            subject = self.eval_quiet(expr.left, state)
            is_none = None
            if isinstance(subject, NONE.__class__):
                is_none = True
            elif (isinstance(subject, TensorVal) and not subject.nullable) or isinstance(subject, (TupleVal, HeapRef)):
                is_none = False
            if is_none is not None:
                return is_none if isinstance(expr.ops[0], ast.Is) else not is_none
        if isinstance(value, Number) and value.const is not None and isinstance(value.const, (bool, int)):
            return bool(value.const)
        return None

    def merge_flows(self, flows: list[Flow]) -> Flow:
        merged = Flow(normal=State.join_all([f.normal for f in flows]))
        for flow in flows:
            merged.breaks.extend(flow.breaks)
            merged.continues.extend(flow.continues)
            merged.returns.extend(flow.returns)
        return merged

    def exec_match(self, stmt: ast.Match, state: State) -> Flow:
        self.eval(stmt.subject, state)
        flows = [self.exec_block(case.body, state.copy()) for case in stmt.cases]
        flows.append(Flow(normal=state))
        return self.merge_flows(flows)

    def exec_try(self, stmt: ast.AST, state: State) -> Flow:
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

    def exec_with(self, stmt: ast.With, state: State) -> Flow:
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

    # -- loops ----------------------------------------------------------------------
    def exec_for(self, stmt: ast.For, state: State) -> Flow:
        iterable = self.eval(stmt.iter, state)
        items = self.exact_items(iterable, stmt.iter, state)
        if items is not None and len(items) > 1 and len(self.run_state.loop_stack) >= MAX_UNROLLED_NESTING:
            items = None  # too deep to unroll item by item: once, with what the items have in common
        if items is not None:
            return self.run_loop(stmt, state, [lambda s, v=v: self.assign(stmt.target, v, s, None) for v in items],
                                 may_skip=False, count_known=True)
        element = self.iter_element(iterable, state)
        count = self.constant_range_length(stmt.iter)
        iterations = 2 if count is None or count >= 2 else max(count, 0)
        capped = iterations > 1 and len(self.run_state.loop_stack) >= MAX_UNROLLED_NESTING
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

        binders = [lambda s, index=index: bind(s, index) for index in range(iterations)]
        known = count is not None and not capped
        if count is None and self.nonempty(iterable, state):
            count = 1
        return self.run_loop(stmt, state, binders, may_skip=count is None or count == 0, count_known=known)

    def container_birth(self, iterable: Value, state: State) -> int | None:
        """How many loops ran when the container being iterated was made (``None``: not a
        container whose one abstract element stands for several runtime ones)."""
        if isinstance(iterable, HeapRef) and iterable.oid in state.heap:
            obj = state.heap[iterable.oid]
            if obj.kind in ("list", "dict", "enumerate", "zip", "object"):
                return len(obj.extra.get("born", ()))
        return None

    def containers_indexed_by_target(self, loop: ast.For) -> tuple[str, ...]:
        """The names ``data`` of ``data[i]`` in the loop's body, ``i`` being bound by the loop
        (``for i in range(len(data))``, ``for i, x in enumerate(...)``); kept on the loop node."""
        found = getattr(loop, "_graphlife_indexed", None)
        if found is None:
            targets = {node.id for node in ast.walk(loop.target) if isinstance(node, ast.Name)}
            found = tuple(sorted({
                node.value.id for statement in loop.body for node in ast.walk(statement)
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and isinstance(node.slice, ast.Name) and node.slice.id in targets
            }))
            loop._graphlife_indexed = found
        return found

    def next_element_of(self, container: Value | None, state: State) -> None:
        """:meth:`next_element` for a container indexed by the loop's variable."""
        birth = self.container_birth(container, state) if container is not None else None
        if birth is not None and state.heap[container.oid].kind == "list":
            self.next_element(self.iter_element(container, state), birth, state)

    def next_element(self, element: Value, birth: int, state: State) -> None:
        """The loop goes on to another element of the container: what a backward through the
        previous one freed is not freed in this one. The container's one abstract element
        stands for all of them, so its graph nodes made in loops that ran after the container
        was made (one forward per element: a comprehension, ``append`` in a loop) are another
        element's now. Nodes the elements share stay freed, and a backward through them again
        raises: those made before (``h`` of ``[head(h) for ...]``), and those one iteration's
        nodes reach from another's (a hidden state carried from step to step and appended at
        each: every element's graph holds the earlier steps)."""
        graph = self.run_state.graph.nodes
        nodes: set[int] = set()
        for tensor in torch_api.tensors_in(element, state):
            if tensor.grad_fn:
                _, reach = self.run_state.graph.reach(tensor.grad_fn, False)
                nodes.update(n for n in reach if len(graph[n].iteration) > birth)
        shared: set[int] = set()
        for node in nodes:
            made = graph[node].iteration
            stack = list(graph[node].parents)
            seen: set[int] = set()
            while stack:
                parent = stack.pop()
                if parent in seen or parent not in nodes:
                    continue
                seen.add(parent)
                if graph[parent].iteration != made:
                    shared.add(parent)  # an earlier iteration's node, carried into this one's graph
                stack.extend(graph[parent].parents)
        nodes -= shared
        if nodes & state.freed.keys():
            freed = state.writable("freed")
            for node in nodes:
                freed.pop(node, None)
        if nodes & state.may_freed.keys():
            may_freed = state.writable("may_freed")
            for node in nodes:
                may_freed.pop(node, None)

    def nonempty(self, iterable: Value, state: State) -> bool:
        """A module's parameters: there is at least one (a loop over them runs)."""
        if isinstance(iterable, HeapRef) and iterable.oid in state.heap:
            obj = state.heap[iterable.oid]
            module = obj.extra.get("module") if obj.kind == "params" else None
            if isinstance(module, HeapRef):
                return bool(torch_api.module_params(state, module)[0])
        return False

    def exec_while(self, stmt: ast.While, state: State) -> Flow:
        infinite = isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)
        binders = [lambda s: self.eval(stmt.test, s)] * (2 if len(self.run_state.loop_stack) < MAX_UNROLLED_NESTING else 1)
        return self.run_loop(stmt, state, binders, may_skip=not infinite, infinite=infinite)

    def run_loop(self, stmt, state: State, binders, *, may_skip: bool, infinite: bool = False, count_known: bool = False) -> Flow:
        exits: list[State] = [state.copy()] if may_skip else []
        returns: list[tuple[State, Value]] = []
        current = state
        first_node, backwards_before = len(self.run_state.graph.nodes), self.backward_count
        self.run_state.module_calls.append([])
        self.run_state.loop_entry_envs.append((stmt, state))
        self.run_state.loop_pre_states.append(state.copy())
        try:
            for index, bind in enumerate(binders):
                self.run_state.loop_stack.append((stmt, index))
                self.run_state.loop_entry_envs[-1] = (stmt, current)
                try:
                    entry = current.copy()
                    bind(entry)
                    flow = self.exec_block(stmt.body, entry)
                finally:
                    self.run_state.loop_stack.pop()
                returns.extend(flow.returns)
                exits.extend(flow.breaks)
                current = State.join_all([flow.normal, *flow.continues])
                if not current.reachable:
                    break
                if index < len(binders) - 1 and not count_known and not infinite:
                    # An unknown number of iterations: the loop may also end after this one.
                    exits.append(current.copy())
        finally:
            self.run_state.loop_entry_envs.pop()
            self.run_state.loop_pre_states.pop()
            calls = self.run_state.module_calls.pop()
        if not infinite or not exits:
            exits.append(current)
        after = State.join_all(exits) if exits else current
        self.emit(LoopEndEvent(stmt=stmt, state=after, loop=stmt, first_node=first_node,
                                           last_node=len(self.run_state.graph.nodes), backwards=self.backward_count - backwards_before,
                                           module_calls=calls))
        if not infinite and getattr(stmt, "orelse", None):
            orelse = self.exec_block(stmt.orelse, after)
            orelse.returns.extend(returns)
            return orelse
        return Flow(normal=after, returns=returns)

    def constant_range_length(self, expr: ast.expr) -> int | None:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "range":
            args = expr.args
            if all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in args) and 1 <= len(args) <= 3:
                try:
                    return len(range(*[a.value for a in args]))
                except (TypeError, ValueError):
                    return None
        if isinstance(expr, (ast.List, ast.Tuple)):
            return len(expr.elts)
        return None

    def exact_items(self, iterable: Value, expr: ast.expr, state: State) -> list[Value] | None:
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
            if obj is not None and obj.kind == "module" and isinstance(obj.attrs.get("__children__"), TupleVal):
                children = obj.attrs["__children__"].items
                if 0 < len(children) <= MAX_EXACT_UNROLL:
                    return list(children)
        return None

    def iter_element(self, iterable: Value, state: State) -> Value:
        if isinstance(iterable, TupleVal):
            result = None
            for item in iterable.items:
                result = item if result is None else result.join(item)
            return result or UNKNOWN
        if isinstance(iterable, HeapRef):
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
        if isinstance(iterable, TensorVal):
            if iterable.requires_grad is False:
                return replace(iterable, storage=iterable.storage)  # rows are views without a graph
            return replace(iterable, leaf=False if iterable.requires_grad else iterable.leaf, certain=False)
        return UNKNOWN

    # -- assignment -----------------------------------------------------------------
    def assign(self, target: ast.expr, value: Value, state: State, value_expr: ast.expr | None) -> None:
        if self.watch is not None and target is self.watch[0]:
            self.watch[1].append((value, state.copy()))
        if isinstance(target, ast.Name):
            if isinstance(value, TensorVal) and not value.desc:
                value = replace(value, desc=target.id)
            state.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            if isinstance(value, TupleVal) and len(value.items) == len(elts) and not any(isinstance(e, ast.Starred) for e in elts):
                for elt, item in zip(elts, value.items):
                    self.assign(elt, item, state, None)
            else:
                element = self.iter_element(value, state) if isinstance(value, (HeapRef, TupleVal)) else UNKNOWN
                if isinstance(value, TensorVal):
                    # Unpacking a tensor (`q, k, v = t.chunk(3)`): views that share its graph.
                    element = replace(value, leaf=False if value.requires_grad else value.leaf)
                for elt in elts:
                    self.assign(elt.value if isinstance(elt, ast.Starred) else elt, element if not isinstance(elt, ast.Starred) else UNKNOWN, state, None)
        elif isinstance(target, ast.Attribute):
            receiver = self.eval(target.value, state)
            if target.attr == "requires_grad" and isinstance(receiver, TensorVal):
                flag = value.const if isinstance(value, Number) and isinstance(value.const, bool) else None
                torch_api.set_requires_grad(self, state, receiver, target.value, flag, "attribute", self.current_stmt())
                return
            if isinstance(receiver, TensorVal) and target.attr in ("data", "grad"):
                if target.attr == "data":
                    pass  # `t.data = other` swaps the storage behind the graph's back; not modeled
                elif receiver.leaf:
                    storages = torch_api.param_storages(receiver, state)
                    torch_api.zero_grads(self, state, storages, target, set_to_none=isinstance(value, type(NONE)))
                return
            if isinstance(receiver, HeapRef) and receiver.oid in state.heap:
                self.maybe_store(state, receiver, value, self.text(target), "attribute")
                obj = state.heap_write(receiver.oid)
                obj.attrs[target.attr] = value
                if isinstance(value, TensorVal) and value.is_param:
                    obj.param_storages = obj.param_storages | ({value.storage} if value.storage else frozenset())
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, state)
            self.eval(target.slice, state)
            if isinstance(container, TensorVal):
                torch_api.apply_inplace(self, state, "Tensor.__setitem__", container, target.value, [value], self.current_stmt())
            elif isinstance(container, HeapRef) and container.oid in state.heap:
                self.maybe_store(state, container, value, self.text(target), "setitem")
                obj = state.heap_write(container.oid)
                obj.elem = value if obj.elem is None else obj.elem.join(value)
                obj.attrs.pop("__items__", None)
                if isinstance(target.slice, ast.Constant):
                    obj.attrs[f"[{target.slice.value!r}]"] = value
        elif isinstance(target, ast.Starred):
            self.assign(target.value, UNKNOWN, state, None)

    def maybe_store(self, state: State, ref: HeapRef, value: Value, target: str, kind: str) -> None:
        """Emit ``store`` when a graph-carrying tensor goes into an object that outlives the iteration."""
        if not self.run_state.loop_stack or ref.oid not in state.heap:
            return
        born = state.heap[ref.oid].extra.get("born", ())
        if len(born) >= len(self.run_state.loop_stack):
            return  # made in this iteration: it dies with it
        for tensor in torch_api.tensors_in(value, state):
            if tensor.requires_grad is True and tensor.grad_fn:
                self.emit(StoreEvent(stmt=self.current_stmt(), state=state, value=tensor, target=target,
                                              kind=kind, whole=value))
                return

    def list_extend(self, state: State, ref: HeapRef, values: Value) -> None:
        obj = state.heap_write(ref.oid)
        element = self.iter_element(values, state) if isinstance(values, (HeapRef, TupleVal)) else values
        obj.elem = element if obj.elem is None else obj.elem.join(element)
        items, more = obj.attrs.get("__items__"), self.known_items(values, state)
        if isinstance(items, TupleVal) and more is not None and len(items.items) + len(more) <= 16:
            obj.attrs["__items__"] = TupleVal(items.items + tuple(more))
        else:
            obj.attrs.pop("__items__", None)

    def known_items(self, value: Value, state: State) -> list[Value] | None:
        """The items of a tuple, or of a list whose contents are known (built from literals and appends)."""
        if isinstance(value, TupleVal):
            return list(value.items)
        if isinstance(value, HeapRef) and value.oid in state.heap:
            items = state.heap[value.oid].attrs.get("__items__")
            if isinstance(items, TupleVal):
                return list(items.items)
        return None

    # -- expressions ----------------------------------------------------------------
    def eval(self, expr: ast.expr | None, state: State) -> Value:  # noqa: C901 (one dispatch)
        if expr is None:
            return NONE
        if isinstance(expr, ast.Name):
            if expr.id in state.env:
                return state.env[expr.id]
            if expr.id in self.run_state.globals:
                return self.run_state.globals[expr.id]
            return torch_api.builtin_name(expr.id)
        if isinstance(expr, ast.Constant):
            return NONE if expr.value is None else Number(expr.value)
        if isinstance(expr, ast.Attribute):
            return self.eval_attribute(expr, state)
        if isinstance(expr, ast.Call):
            return self.eval_call(expr, state)
        if isinstance(expr, ast.BinOp):
            return self.eval_binop_chain(expr, state)
        if isinstance(expr, ast.UnaryOp):
            operand = self.eval(expr.operand, state)
            if isinstance(operand, TensorVal) and isinstance(expr.op, ast.USub):
                return torch_api.apply_op(self, state, "Tensor.__neg__", [operand], [expr.operand], expr)
            if isinstance(expr.op, ast.Not):
                return Number(None)
            return operand if isinstance(operand, TensorVal) else Number(None) if isinstance(operand, Number) else UNKNOWN
        if isinstance(expr, (ast.Tuple, ast.List)):
            items = tuple(self.eval(e, state) for e in expr.elts)
            if isinstance(expr, ast.List) or any(isinstance(e, ast.Starred) for e in expr.elts):
                return self.new_list(state, items, expr, literal=isinstance(expr, ast.List))
            return TupleVal(items)
        if isinstance(expr, ast.Dict):
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
        if isinstance(expr, ast.Set):
            for e in expr.elts:
                self.eval(e, state)
            return UNKNOWN
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self.eval_comprehension(expr, state)
        if isinstance(expr, ast.DictComp):
            self.eval_comprehension(expr, state)
            return self.new_object(state, "dict", expr)
        if isinstance(expr, ast.Subscript):
            return self.eval_subscript(expr, state)
        if isinstance(expr, ast.Compare):
            values = [self.eval(expr.left, state)] + [self.eval(c, state) for c in expr.comparators]
            if any(isinstance(v, TensorVal) for v in values):
                return TensorVal(requires_grad=False, leaf=True, storage=self.fresh(), origin=expr)
            return Number(None)
        if isinstance(expr, ast.BoolOp):
            values = [self.eval(v, state) for v in expr.values]
            result = values[0]
            for value in values[1:]:
                result = result.join(value)
            return result
        if isinstance(expr, ast.IfExp):
            self.eval(expr.test, state)
            return self.eval(expr.body, state).join(self.eval(expr.orelse, state))
        if isinstance(expr, ast.Lambda):
            return UNKNOWN
        if isinstance(expr, ast.NamedExpr):
            value = self.eval(expr.value, state)
            self.assign(expr.target, value, state, expr.value)
            return value
        if isinstance(expr, ast.Starred):
            return self.eval(expr.value, state)
        if isinstance(expr, (ast.JoinedStr, ast.FormattedValue)):
            for child in ast.iter_child_nodes(expr):
                if isinstance(child, ast.expr):
                    self.eval(child, state)
            return Number(None)
        if isinstance(expr, (ast.Await, ast.Yield, ast.YieldFrom)):
            value = self.eval(expr.value, state) if getattr(expr, "value", None) is not None else NONE
            if self.run_state.yielded and isinstance(expr, (ast.Yield, ast.YieldFrom)):
                self.run_state.yielded[-1].append(value if isinstance(expr, ast.Yield) else self.iter_element(value, state))
            return UNKNOWN
        return UNKNOWN

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

    def eval_comprehension(self, expr, state: State) -> Value:
        """A comprehension is a loop: its element is evaluated twice, as a loop body would be."""
        inner = state.copy()
        element: Value | None = None
        for generator in expr.generators:
            iterable = self.eval(generator.iter, inner)
            self.assign(generator.target, self.iter_element(iterable, inner), inner, None)
        self.run_state.loop_entry_envs.append((expr, inner))
        self.run_state.loop_pre_states.append(inner.copy())
        try:
            for index in range(2):
                self.run_state.loop_stack.append((expr, index))
                self.run_state.loop_entry_envs[-1] = (expr, inner)
                try:
                    for generator in expr.generators:
                        for condition in generator.ifs:
                            self.eval(condition, inner)
                    value = self.eval(expr.elt, inner) if not isinstance(expr, ast.DictComp) else self.eval(expr.value, inner)
                finally:
                    self.run_state.loop_stack.pop()
                element = value  # one evaluation stands for every element (a join would blur them)
        finally:
            self.run_state.loop_entry_envs.pop()
            self.run_state.loop_pre_states.pop()
        # Keep effects (heap, versions, freed graphs) but not the comprehension's own names.
        env = state.env
        state.adopt(inner)
        state.env = env
        ref = self.new_list(state, (), expr, literal=False)
        state.heap[ref.oid].elem = element
        return ref

    def eval_subscript(self, expr: ast.Subscript, state: State) -> Value:
        container = self.eval(expr.value, state)
        self.eval(expr.slice, state)
        if isinstance(container, TensorVal):
            return torch_api.apply_op(self, state, "Tensor.__getitem__", [container], [expr.value], expr)
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
            if isinstance(expr.slice, ast.Constant) and f"[{expr.slice.value!r}]" in obj.attrs:
                return obj.attrs[f"[{expr.slice.value!r}]"]
            if obj.kind == "module":
                children = obj.attrs.get("__children__")
                if isinstance(children, TupleVal) and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int):
                    try:
                        return children.items[expr.slice.value]
                    except IndexError:
                        return UNKNOWN
            if isinstance(expr.slice, ast.Slice):
                return container if obj.kind == "list" else UNKNOWN
            return obj.elem if obj.elem is not None else UNKNOWN
        return UNKNOWN

    def eval_attribute(self, expr: ast.Attribute, state: State) -> Value:
        receiver = self.eval(expr.value, state)
        if isinstance(receiver, QualName):
            return QualName(f"{receiver.name}.{expr.attr}")
        if isinstance(receiver, TensorVal):
            return torch_api.tensor_attribute(self, state, receiver, expr)
        if isinstance(receiver, HeapRef):
            obj = state.heap.get(receiver.oid)
            if obj is not None and expr.attr in obj.attrs:
                return obj.attrs[expr.attr]
            if obj is not None and obj.kind == "module" and obj.class_ref is None and obj.param_storages and (
                expr.attr in ("weight", "bias", "in_proj_weight", "in_proj_bias") or expr.attr.startswith(("weight_", "bias_"))
            ):
                # A parameter of a torch module (`layer.weight`): a leaf that requires grad unless frozen.
                frozen = obj.frozen
                bias = obj.extra.get("bias_storage")
                weight = min(obj.param_storages - {bias}) if obj.param_storages - {bias} else bias
                return TensorVal(requires_grad=(not frozen) if frozen is not None else None, leaf=True,
                                 storage=bias if expr.attr.startswith("bias") or expr.attr == "in_proj_bias" else weight,
                                 is_param=True, origin=expr,
                                 desc=self.text(expr), created_with_grad=obj.site)
            if obj is not None and obj.class_ref is not None:
                method = self.find_method(obj.class_ref, expr.attr, state)
                if method is not None:
                    return FunctionRef(node=method, key=id(method), bound_self=receiver)
                if obj.kind == "module" and expr.attr not in torch_api.MODULE_METHODS:
                    return UNKNOWN  # set by a torch base class (`self.weight` of an nn.Linear subclass)
            return BoundMethod(receiver, expr.attr)
        if isinstance(receiver, ClassRef):
            method = self.find_method(receiver, expr.attr, state)
            if method is not None:
                return FunctionRef(node=method, key=id(method))
            return BoundMethod(receiver, expr.attr)
        if isinstance(receiver, ValuesIndices) and expr.attr in ("values", "indices"):
            return receiver.items[0 if expr.attr == "values" else 1]
        if isinstance(receiver, (TupleVal, Number, NONE.__class__)):
            return BoundMethod(receiver, expr.attr)
        return BoundMethod(receiver, expr.attr) if receiver is not UNKNOWN else UNKNOWN

    def find_method(self, ref: ClassRef, name: str, state: State, depth: int = 0) -> ast.FunctionDef | None:
        self.touch(ref.node)
        found = _methods_of(ref.node).get(name)
        if found is not None:
            return found
        if depth > 5:
            return None
        for base in ref.node.bases:
            value = self.eval_quiet(base, state)
            if isinstance(value, ClassRef):
                found = self.find_method(value, name, state, depth + 1)
                if found is not None:
                    return found
        return None

    # -- objects --------------------------------------------------------------------
    def new_object(self, state: State, kind: str, site: ast.AST | None, **attrs) -> HeapRef:
        oid = self.fresh()
        state.heap[oid] = HeapObject(kind=kind, site=site, **attrs)
        state.heap[oid].extra["born"] = self.iteration()
        return HeapRef(oid)

    def new_list(self, state: State, items: tuple[Value, ...], site: ast.AST, literal: bool) -> HeapRef:
        element = None
        for item in items:
            element = item if element is None else element.join(item)
        ref = self.new_object(state, "list", site)
        state.heap[ref.oid].elem = element
        if literal and len(items) <= MAX_EXACT_UNROLL:
            state.heap[ref.oid].attrs["__items__"] = TupleVal(items)
        return ref

    def instantiate(self, ref: ClassRef, args: list[Value], kwargs: dict[str, Value], state: State, site: ast.AST) -> Value:
        kind = "module" if ref.is_module else "object"
        instance = self.new_object(state, kind, site, cls=ref.node.name, class_ref=ref)
        init = self.find_method(ref, "__init__", state)
        if init is not None:
            self.call_function(FunctionRef(node=init, key=id(init), bound_self=instance), args, kwargs, state, site)
        return instance

    # -- calls ----------------------------------------------------------------------
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
                if items is None:
                    args.append(UNKNOWN)
                    break  # positions after an unknown *args are unknown
                args.extend(items)
            else:
                args.append(value)
        kwargs = {kw.arg: self.eval(kw.value, state) for kw in call.keywords if kw.arg is not None}
        for kw in call.keywords:
            if kw.arg is None:
                self.eval(kw.value, state)
        if isinstance(func, FunctionRef):
            return self.call_function(func, args, kwargs, state, call)
        if isinstance(func, ClassRef):
            if func.is_autograd_function:
                return UNKNOWN
            return self.instantiate(func, args, kwargs, state, call)
        if isinstance(func, HeapRef):
            return torch_api.call_object(self, state, func, args, kwargs, call)
        if isinstance(func, QualName):
            return torch_api.call_qualname(self, state, func.name, args, kwargs, call)
        if isinstance(func, BoundMethod):
            result = torch_api.call_method(self, state, func.receiver, func.name, args, kwargs, call)
            return self.no_grad_opaque(result, state, call)
        return self.no_grad_opaque(UNKNOWN, state, call)

    def no_grad_opaque(self, result: Value, state: State, call: ast.Call) -> Value:
        """Whatever an unknown call returns while gradients are off carries no graph."""
        if result is UNKNOWN and state.grad_enabled is False:
            mode = "torch.inference_mode()" if state.inference_mode else "torch.no_grad()"
            return TensorVal(requires_grad=False, leaf=True, storage=self.fresh(), origin=call, desc=self.text(call),
                             inference=state.inference_mode, opaque=True,
                             why=f"computed while gradients were disabled (`{mode}`)", why_site=self.current_stmt())
        return result

    def call_function(self, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State, site: ast.AST) -> Value:
        """Inline a function of this file with the caller's values (bounded depth, no recursion),
        or run it apart (:mod:`graphlife.analysis.isolation`): then its code is read by that
        call's own record, not by the caller's, and an edit in it does not make the caller's
        record stale."""
        node = func.node
        if len(self.run_state.call_stack) >= MAX_INLINE_DEPTH or func.key in self.run_state.call_stack or isinstance(node, ast.AsyncFunctionDef):
            self.touch(node)
            return UNKNOWN
        if self.isolate_calls and isolation.may_isolate(self, func, args, kwargs, state, site):
            result = isolation.call_isolated(self, func, args, kwargs, state, site)
            if result is not None:
                return result
        self.touch(node)
        return self.call_memo.call(self, func, args, kwargs, state, site)

    def inline_call(self, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State, site: ast.AST) -> Value:
        """Run the callee's body on the caller's state: its effects on heap, graph and versions
        stay, its locals do not."""
        node = func.node
        is_generator = self.is_generator(node)
        decorators = [self.text(d) for d in node.decorator_list]
        callee_state = state.copy()
        # The caller's names stay visible to the callee (an approximation of globals and closures),
        # except the callee's own locals: before their first assignment they are unbound, never
        # the caller's value (`out` of the caller is not `out` of a loop that ran zero times).
        local = self.local_names(node)
        env = {name: value for name, value in state.env.items() if name not in local}
        params = node.args.posonlyargs + node.args.args
        positional = list(args)
        if func.bound_self is not None and "staticmethod" not in decorators:
            positional = [func.bound_self, *positional]
        for index, param in enumerate(params):
            if index < len(positional):
                env[param.arg] = positional[index]
            elif param.arg in kwargs:
                env[param.arg] = kwargs[param.arg]
            else:
                defaults = node.args.defaults
                offset = index - (len(params) - len(defaults))
                env[param.arg] = self.eval_quiet(defaults[offset], state) if 0 <= offset < len(defaults) else UNKNOWN
        for index, param in enumerate(node.args.kwonlyargs):
            default = node.args.kw_defaults[index]
            env[param.arg] = kwargs.get(param.arg, self.eval_quiet(default, state) if default is not None else UNKNOWN)
        if node.args.vararg:
            extra = positional[len(params):]
            env[node.args.vararg.arg] = TupleVal(tuple(extra))
        if node.args.kwarg:
            env[node.args.kwarg.arg] = UNKNOWN
        callee_state.env = env
        if "torch.no_grad()" in decorators or "torch.no_grad" in decorators or "torch.inference_mode()" in decorators:
            callee_state.grad_enabled, callee_state.grad_assumed = False, False
            if "inference_mode" in " ".join(decorators):
                callee_state.inference_mode = True
        if is_generator:
            self.run_state.yielded.append([])
        self.inlined.add(func.key)
        self.inline_log.append(node)
        if self.run_state.unit_inlined is not None:
            self.run_state.unit_inlined.add(func.key)
        self.run_state.call_stack.append(func.key)
        self.run_state.frames.append(CallFrame(call=site if isinstance(site, ast.Call) else None, stmt=self.current_stmt(),
                                     params=[p.arg for p in params], bound=func.bound_self is not None and "staticmethod" not in decorators))
        try:
            flow = self.exec_block(node.body, callee_state)
        finally:
            self.run_state.call_stack.pop()
            self.run_state.frames.pop()
            yielded = self.run_state.yielded.pop() if is_generator else None
        outs = [s for s, _ in flow.returns] + ([flow.normal] if flow.normal.reachable else [])
        if not outs:
            self.run_state.path_ends = True  # the callee raises on every path: so does this call
            return UNKNOWN
        after = State.join_all(outs)
        # Back in the caller: its own names, the callee's effects on heap, graph and versions.
        caller_env, caller_grad, caller_inference, caller_assumed = state.env, state.grad_enabled, state.inference_mode, state.grad_assumed
        state.adopt(after)
        state.env, state.grad_enabled, state.inference_mode, state.grad_assumed = caller_env, caller_grad, caller_inference, caller_assumed
        self.last_call_roots = [result_value for _, result_value in flow.returns] + list(yielded or ())
        self.collect_after_call(state, self.last_call_roots)
        if yielded is not None:
            # A generator: what the caller iterates over is the join of what it yields.
            ref = self.new_list(state, (), site, literal=False)
            element = None
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

    def local_names(self, func: ast.AST) -> frozenset[str]:
        """The names a function binds (its locals), without those it declares global or nonlocal
        and those bound only in nested functions, classes and comprehensions (:mod:`scopes`)."""
        return scopes.local_names(func, self.walrus_possible)

    def collect_after_call(self, state: State, returned: list[Value]) -> None:
        """Back from a call: drop what the callee made that nothing reaches, once the heap is large."""
        if len(state.heap) > HEAP_GC_THRESHOLD:
            self.collect_garbage(state, returned)

    def collect_garbage(self, state: State, extra_roots: list[Value]) -> None:
        """Drop heap objects nothing can reach any more (a returned helper's locals).

        Without this, every inlined call leaves its objects in the heap and each
        state copy or join pays for them: quadratic on large files.
        """
        roots: list[Value] = list(state.env.values()) + extra_roots
        for _, entry in self.run_state.loop_entry_envs:
            roots.extend(entry.env.values())
        for pre in self.run_state.loop_pre_states:
            roots.extend(pre.env.values())
        live: set[int] = set()
        stack = roots
        while stack:
            value = stack.pop()
            if isinstance(value, HeapRef):
                if value.oid in live or value.oid not in state.heap:
                    continue
                live.add(value.oid)
                obj = state.heap[value.oid]
                stack.extend(obj.attrs.values())
                if obj.elem is not None:
                    stack.append(obj.elem)
                stack.extend(v for v in obj.extra.values() if isinstance(v, Value))
            elif isinstance(value, TupleVal):
                stack.extend(value.items)
            elif isinstance(value, TensorVal) and value.owner is not None:
                stack.append(HeapRef(value.owner))
            elif isinstance(value, FunctionRef) and value.bound_self is not None:
                stack.append(value.bound_self)
            elif isinstance(value, BoundMethod):
                stack.append(value.receiver)
        if len(live) < len(state.heap):
            state.heap = {oid: obj for oid, obj in state.heap.items() if oid in live}

    def is_generator(self, node: ast.AST) -> bool:
        """Does the function yield (its own body, not nested functions)?"""
        return id(node) in self._generators

    # -- carried state --------------------------------------------------------------
    def names_assigned_in(self, loop: ast.AST) -> frozenset[str]:
        """The names (and ``name.attr`` attributes) a loop's body and target bind, kept on the loop node."""
        found = getattr(loop, "_graphlife_assigned", None)
        if found is None:
            roots = [getattr(loop, "target", None), *getattr(loop, "body", ()), *getattr(loop, "generators", ())]
            names: set[str] = set()
            for root in roots:
                for node in ast.walk(root) if root is not None else ():
                    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                        names.add(node.id)
                    elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                          and isinstance(node.value, ast.Name)):
                        names.add(f"{node.value.id}.{node.attr}")  # `self.h = ...`
            found = frozenset(names)
            loop._graphlife_assigned = found
        return found

    def carried_names(self, node_ids: set[int], state: State) -> list[tuple[str, ast.AST]]:
        """Names (or ``self.attr``) that, at the top of the current loop, held graphs reaching ``node_ids``."""
        if not self.run_state.loop_entry_envs:
            return []
        found: list[tuple[str, ast.AST]] = []
        loop, entry = self.run_state.loop_entry_envs[-1]
        before = self.run_state.loop_pre_states[-1].env if self.run_state.loop_pre_states else {}
        candidates: list[tuple[str, Value]] = []
        assigned = self.names_assigned_in(loop)
        for name, value in sorted(entry.env.items()):
            if name not in before:
                continue  # first bound inside the loop: a leftover of the last iteration, not carried state
            if name in assigned:
                candidates.append((name, value))
            # else the loop never rebinds it: it carries nothing from one iteration to the next
            # by itself, but the attributes the loop sets on it do (`self.h = ...`).
            if isinstance(value, HeapRef) and value.oid in entry.heap:
                obj = entry.heap[value.oid]
                if obj.kind in ("module", "object"):
                    candidates.extend((f"{name}.{attr}", v) for attr, v in sorted(obj.attrs.items())
                                      if not attr.startswith("_") and f"{name}.{attr}" in assigned)
        for name, value in candidates:
            for tensor in torch_api.tensors_in(value, entry):
                _, may = self.run_state.graph.reach(tensor.grad_fn, False)
                if may & node_ids:
                    found.append((name, loop))
                    break
        return found
