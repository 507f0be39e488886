"""The engine's core: what every part of the interpreter shares, and how node classes find their handlers.

Why a core: the interpreter is split by concern (statements, expressions, calls,
loops, the heap, units), each part a mixin of :class:`EngineCore`. The core holds
the file being analyzed and the run state, the small helpers every part uses
(fresh ids, source text, spans, events, the time box, the code a unit read), and
the dispatch tables: a handler declares the node classes it runs
(:func:`handles_statements`, :func:`handles_expressions`), and ``exec_stmt`` and
``eval`` find it with one dictionary lookup on the node's class. A chain of
``isinstance`` tests ran in order for every statement and expression, a visible
share of the engine's time.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ClassVar, TypeVar

from graphlife.analysis import isolation, scopes
from graphlife.analysis.call_memo import CallMemo
from graphlife.analysis.engine_api import EngineParts, ExpressionWatch, Flow, Timeout, UnitRecorder
from graphlife.analysis.events import Event
from graphlife.analysis.modules import ModuleProvider, SourceModule
from graphlife.analysis.positions import node_span
from graphlife.analysis.rule_api import Reporter, Rule, RuleContext, hooks_by_event
from graphlife.analysis.run_state import RunState
from graphlife.analysis.self_cache import SelfCache
from graphlife.analysis.state import State
from graphlife.analysis.tree_index import TreeIndex
from graphlife.analysis.values import UNKNOWN, Value
from graphlife.findings import Span

_STATEMENT_KINDS = "_graphlife_statement_kinds"
_EXPRESSION_KINDS = "_graphlife_expression_kinds"

_Method = TypeVar("_Method", bound=Callable[..., object])

#: A handler as the tables hold it: the method's function, called with the interpreter, the node
#: (of one of the classes it declared) and the state. ``Any`` for both: each handler takes its
#: own mixin and its own node class, which a table of all of them cannot spell.
StatementHandler = Callable[[Any, Any, State], Flow]
ExpressionHandler = Callable[[Any, Any, State], Value]


def handles_statements(*kinds: type[ast.stmt]) -> Callable[[_Method], _Method]:
    """Declare a method the handler of statements of these node classes (``exec_stmt`` runs it)."""

    def mark(method: _Method) -> _Method:
        setattr(method, _STATEMENT_KINDS, kinds)
        return method

    return mark


def handles_expressions(*kinds: type[ast.expr]) -> Callable[[_Method], _Method]:
    """Declare a method the handler of expressions of these node classes (``eval`` runs it)."""

    def mark(method: _Method) -> _Method:
        setattr(method, _EXPRESSION_KINDS, kinds)
        return method

    return mark


def _handler_table(cls: type, marker: str) -> dict[type[ast.AST], Any]:
    """Node class -> the function of the method that handles it in ``cls`` (looked up by name,
    so that a subclass's override of a handler is the one run)."""
    names: dict[type[ast.AST], str] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            for kind in getattr(member, marker, ()):
                names[kind] = name
    return {kind: getattr(cls, name) for kind, name in names.items()}


def handler_for(table: dict[type[ast.AST], Any], kind: type[ast.AST], default: Any) -> Any:
    """The handler of a node class missing from ``table``: that of its nearest base class that has
    one (as ``isinstance`` would find it), else ``default``; kept in the table."""
    handler = next((table[base] for base in kind.__mro__[1:] if base in table), default)
    table[kind] = handler
    return handler


class EngineCore(EngineParts):
    """The interpreter's shared state and helpers; its parts are mixins of this class, written
    against :class:`~graphlife.analysis.engine_api.EngineParts` for what the others provide."""

    statement_handlers: ClassVar[dict[type[ast.AST], StatementHandler]] = {}
    expression_handlers: ClassVar[dict[type[ast.AST], ExpressionHandler]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.statement_handlers = _handler_table(cls, _STATEMENT_KINDS)
        cls.expression_handlers = _handler_table(cls, _EXPRESSION_KINDS)

    def __init__(self, tree: ast.Module, source: str, lines: list[str], rules: list[Rule], reporter: Reporter,
                 deadline: float, index: TreeIndex | None = None, unit_cache: UnitRecorder | None = None,
                 modules: ModuleProvider | None = None, path: str | None = None) -> None:
        # -- the file, and the other modules of the project it imports ----------------------------
        index = index if index is not None else TreeIndex.of_module(tree)
        self.modules = modules  # ``None``: the file alone (its imports of the project are unknown)
        self.entry = (modules.entry(path, tree, source, lines, index) if modules is not None
                      else SourceModule(path=path or "", name="__main__", tree=tree, source=source, lines=lines,
                                        index=index, is_main=True))
        #: The project's modules imported so far, by dotted name (``None``: not found or not readable).
        self.imported: dict[str, SourceModule | None] = {}
        #: Per imported module: its imports, functions and classes bound once (its ``globals``).
        self.module_tables: dict[str, dict[str, Value]] = {}
        self._star_names: dict[str, list[str]] = {}  # per imported module: what `import *` binds
        #: Per module (dotted name): the project's modules it star-imports, in order.
        self.star_sources: dict[str, list[str]] = {}
        self._exists: dict[str, bool] = {}  # dotted name -> a module of the project? (not read)
        #: Imported modules whose names are the same on every path (see ``_plain_namespace``).
        self.plain_namespaces: dict[str, dict[str, Value]] = {}
        #: Statements of other modules the running unit may run (:mod:`.imports` says why).
        self.foreign_budget = 8_000
        self._module_of: dict[int, SourceModule] = {}  # node id -> its module, once looked up
        self.deadline = deadline
        self.enter_module(self.entry)
        self._text_cache: dict[int, str] = {}
        # -- the rules -----------------------------------------------------------------------------
        self.reporter = reporter
        self.hooks = hooks_by_event(rules)  # event class -> the rules' hooks on it
        #: What the hooks see of the interpreter (``None`` once the check is over: it refers back).
        self.ctx: RuleContext | None = RuleContext(self)
        self.emitted = 0  # events emitted so far (sent or not, for the memo of calls that change nothing)
        # -- the run state, and what the file keeps across its runs ---------------------------------
        #: Where the running run is, and what it made and noted (:mod:`graphlife.analysis.run_state`):
        #: the module body and the functions analyzed alone run in this one, one after the other.
        self.run_state = RunState()
        self.backward_count = 0  # backwards run so far (a loop's end counts those it saw)
        self.inlined: set[int] = set()  # functions analyzed by inlining (not analyzed alone then)
        self.inline_log: list[ast.AST] = []  # every function inlined so far, in order (for the memo)
        self.last_call_roots: list[Value] = []  # what the last inlined call's garbage collection kept
        # -- work shared between runs and units ---------------------------------------------------------
        self._module_names: State | None = None  # the module's names a function analyzed alone starts from
        self._definitions_table: dict[str, Value] | None = None  # see ``definitions_table``
        self.self_cache = SelfCache()  # the `self` of the methods analyzed alone, per class
        self.call_memo = CallMemo()  # inlined calls that changed nothing, replayed (:mod:`call_memo`)
        self.unit_cache = unit_cache  # the language server's, kept between edits
        #: Run calls that take and return no graph apart (:mod:`graphlife.analysis.isolation`).
        #: Off only for the hover story, which reads the graph of the whole run at its end.
        self.isolate_calls = isolation.ENABLED
        #: What the hover's stories record of each evaluation (``None``: no story); set only by
        #: the stories' interpreter, whose ``eval`` reports every value to it.
        self.watch: ExpressionWatch | None = None

    # -- the module whose code runs ------------------------------------------------------------------
    def enter_module(self, module: SourceModule) -> None:
        """Make ``module`` the one whose code runs: its tree and indexes answer the questions
        about the running code (where a name is bound, which functions are generators)."""
        self.module = module
        self.tree = module.tree
        self.source = module.source
        self.lines = module.lines
        self.parents: dict[int, ast.AST] = module.index.parents
        self.if_nodes: list[ast.If] = module.index.if_nodes  # for rules that look for guards (GL304)
        self.rebound = module.index.rebound
        self._generators: set[int] = module.index.generators  # generator functions (no walk per call)
        self.walrus_possible = module.walrus_possible  # else only statements bind names (:mod:`scopes`)

    @contextmanager
    def in_module(self, module: SourceModule) -> Iterator[None]:
        """Run code of ``module`` (an imported function, a module's body), and come back to the
        running module after, whatever happens; the run's table of globals is the module's."""
        previous = self.module
        if module is previous:
            yield
            return
        run = self.run_state
        saved_globals = run.globals
        self.enter_module(module)
        if module is not self.entry:
            run.globals = self.module_tables.setdefault(module.name, {})
        try:
            yield
        finally:
            self.enter_module(previous)
            run.globals = saved_globals

    def module_of(self, node: ast.AST) -> SourceModule:
        """The module whose code ``node`` is (the running one first; the entry when unknown)."""
        if id(node) in self.parents or node is self.tree:
            return self.module
        known = self._module_of.get(id(node))
        if known is not None:
            return known
        found = self.entry
        if not (id(node) in found.index.parents or node is found.tree):
            for module in self.imported.values():
                if module is not None and (id(node) in module.index.parents or node is module.tree):
                    found = module
                    break
            else:
                return found  # not (yet) known: a module imported later may hold it
        self._module_of[id(node)] = found
        return found

    def foreign_path(self, node: ast.AST) -> str | None:
        """The path of the other file ``node`` is in (``None``: the file being checked)."""
        module = self.module_of(node)
        return None if module is self.entry else module.path

    # -- ids, text, places -------------------------------------------------------------------------
    def fresh(self) -> int:
        run = self.run_state
        run.next_id += 1
        return run.next_id

    def span(self, node: ast.AST) -> Span:
        module = self.module_of(node)
        span = node_span(node, module.lines)
        return span if module is self.entry else replace(span, path=module.path)

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
            except Exception:  # noqa: BLE001 - a node made by code may not unparse: no text then
                segment = ""
        segment = segment if len(segment) <= 80 else segment[:77] + "..."
        self._text_cache[key] = segment
        return segment

    def function_text(self, node: ast.AST) -> str | None:
        """The whole source text of a function (``None`` when its position is unknown)."""
        return self._segment(node)

    def _segment(self, node: ast.AST) -> str | None:
        lines = self.module_of(node).lines
        line: int | None = getattr(node, "lineno", None)
        end_line: int | None = getattr(node, "end_lineno", None)
        col: int | None = getattr(node, "col_offset", None)
        end_col: int | None = getattr(node, "end_col_offset", None)
        if line is None or end_line is None or col is None or end_col is None or end_line > len(lines):
            return None
        if line == end_line:
            return lines[line - 1].encode("utf-8")[col:end_col].decode("utf-8", "replace")
        first = lines[line - 1].encode("utf-8")[col:].decode("utf-8", "replace")
        last = lines[end_line - 1].encode("utf-8")[:end_col].decode("utf-8", "replace")
        return "\n".join([first, *lines[line:end_line - 1], last])

    def enclosing_function(self, node: ast.AST) -> ast.AST | None:
        """The function whose code ``node`` is (``None`` at module level)."""
        parents = self.module_of(node).index.parents
        current = parents.get(id(node))
        while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            current = parents.get(id(current))
        return current

    def local_names(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
        """The names a function binds (its locals), without those it declares global or nonlocal
        and those bound only in nested functions, classes and comprehensions (:mod:`scopes`)."""
        return scopes.local_names(func, self.module_of(func).walrus_possible)

    def is_generator(self, node: ast.AST) -> bool:
        """Does the function yield (its own body, not nested functions)?"""
        return id(node) in self.module_of(node).index.generators

    # -- where the run is ----------------------------------------------------------------------------
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
            argument: ast.expr | None = None
            if 0 <= index < len(frame.call.args):
                argument = frame.call.args[index]
            else:
                argument = next((kw.value for kw in frame.call.keywords if kw.arg == expr.id), None)
            stmt, expr = frame.stmt, argument
        return stmt

    def current_loop(self) -> ast.AST | None:
        loops = self.run_state.loop_stack
        return loops[-1][0] if loops else None

    def iteration(self) -> tuple[int, ...]:
        loops = self.run_state.loop_stack
        return tuple([i for _, i in loops]) if loops else ()

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

    # -- events, the time box, the code a unit read --------------------------------------------------
    def emit(self, event: Event) -> None:
        self.emitted += 1  # events sent or not, for the memo of calls that change nothing
        if not self.run_state.emitting:
            return
        hooks, ctx = self.hooks.get(type(event)), self.ctx
        if hooks and ctx is not None:
            for hook in hooks:
                hook(event, ctx)

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise Timeout

    def touch(self, node: ast.AST) -> None:
        """Note that the running unit read the code of ``node`` (a function or class of this file)."""
        touched = self.run_state.touched
        if touched is not None:
            touched[id(node)] = node

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

    def eval_quiet(self, expr: ast.expr, state: State) -> Value:
        """The value of ``expr``, unknown when evaluating it fails (a hook's question, a default)."""
        try:
            return self.eval(expr, state)
        except (Timeout, RecursionError):
            raise
        except Exception:  # noqa: BLE001 - a question about a value must not end the run
            return UNKNOWN
