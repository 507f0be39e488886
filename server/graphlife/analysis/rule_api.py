"""The rule API: what a rule is, and everything a rule may ask of the engine.

Rules (:mod:`graphlife.rules`) see the engine through this module and the events
(:mod:`graphlife.analysis.events`) only, the way a type checker's rules see an
evaluator interface and not the evaluator: the interpreter can change how it runs
without touching a rule, and what a rule depends on is written down here, typed.

- A :class:`Rule` has metadata, its documentation (:class:`RuleDoc`), and either a
  syntactic check (``check_module(ctx: ModuleContext)``, called once per file) or
  hooks on engine events, registered by the event's class::

      @RULE.on(BackwardEvent)
      def on_backward(event: BackwardEvent, ctx: RuleContext) -> None: ...

- A hook gets the event and a :class:`RuleContext`: report, spans and text of
  nodes, the graph, the loops and the iteration the event is in, the names that
  carry state into the loop, the syntax tree around a node, the grad mode, and the
  rule's own state for the running unit (:meth:`RuleContext.unit_state`).

Why the unit state and the ``touch`` calls matter: the language server replays a
unit whose code did not change from what it reported
(:mod:`graphlife.analysis.unit_cache`), and runs calls that take and give no graph
apart from their caller (:mod:`graphlife.analysis.isolation`). Both give the full
check's answer only if a rule keeps what it gathers in its unit state, reports it
by ``unit_end``, and notes every piece of code it reads beyond what the engine ran
(``docs/CONVENTIONS.md``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Protocol,
    TypeVar,
    cast,
)

from graphlife.analysis.doc_languages import (
    ENGLISH,
    SIMPLIFIED_CHINESE,
    Translation,
    heading,
    language_of,
    severity_note,
)
from graphlife.analysis.events import Event
from graphlife.analysis.positions import node_span
from graphlife.analysis.semantics import ApplyCall, FunctionClass, GradSwitch, Semantics, semantics_of
from graphlife.analysis.values import UNKNOWN, TensorVal, Tri, Value
from graphlife.findings import (
    Finding,
    FixRecipe,
    Line,
    Message,
    Related,
    Severity,
    Span,
)

if TYPE_CHECKING:  # pragma: no cover
    from graphlife.analysis.modules import SourceModule
    from graphlife.analysis.run_state import RunState
    from graphlife.analysis.state import GraphStore, State

#: Sections of a rule's docstring written for the project's test authors (where a fixture's
#: expected line is), not for users: the hover, ``graphlife rules`` and docs/rules.md leave them out.
TEST_AUTHOR_SECTIONS = ("Fixture line",)

EventT = TypeVar("EventT", bound=Event)
StateT = TypeVar("StateT")

#: A hook on events of one class: called as ``hook(event, ctx)``.
Hook = Callable[[EventT, "RuleContext"], None]
#: A hook as the dispatch table holds it: only ever called with events of the class it is filed under.
AnyHook = Callable[[Event, "RuleContext"], None]


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class RuleDoc:
    """A rule's documentation split into its sections, in one language.

    Built from the English docstring and its translations (``RuleDoc(__doc__, zh_cn=ZH_CN)``,
    see :mod:`graphlife.analysis.doc_languages`); :meth:`in_language` gives the same interface
    over the text of another language. Section titles are always the English ones:
    ``section("What torch says")`` finds ``## torch 的报错`` in the Chinese text."""

    text: str
    #: The Simplified Chinese documentation, written next to the English docstring.
    zh_cn: Translation | None = None
    #: The language of :attr:`text` (one of :data:`~graphlife.analysis.doc_languages.LANGUAGES`).
    language: str = ENGLISH
    #: For a translated view, the English documentation it came from.
    english: RuleDoc | None = field(default=None, repr=False, compare=False)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages this rule's documentation is written in, English first."""
        source = self.english or self
        return (ENGLISH, SIMPLIFIED_CHINESE) if source.zh_cn is not None else (ENGLISH,)

    def in_language(self, language: str) -> RuleDoc:
        """The documentation in ``language`` (``"en"`` or ``"zh-CN"``; a locale tag such as
        ``zh-cn`` works too): English for any other language, and when the rule has no
        translation into it yet."""
        source = self.english or self
        if language_of(language) == SIMPLIFIED_CHINESE and source.zh_cn is not None:
            return RuleDoc(source.zh_cn.text, zh_cn=source.zh_cn, language=SIMPLIFIED_CHINESE, english=source)
        return source

    def section(self, title: str) -> str:
        """The body of one section, named by its English title (empty when missing)."""
        shown = heading(title, self.language)
        pattern = re.compile(rf"^## {re.escape(shown)}\s*$(.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
        match = pattern.search(self.text)
        return match.group(1).strip() if match else ""

    @property
    def summary(self) -> str:
        return self.text.strip().splitlines()[0].strip() if self.text.strip() else ""

    @property
    def user_text(self) -> str:
        """The documentation without the sections for test authors (:data:`TEST_AUTHOR_SECTIONS`)."""
        kept: list[str] = []
        skipping = False
        for line in self.text.strip().splitlines():
            if line.startswith("## "):
                skipping = line[3:].strip() in TEST_AUTHOR_SECTIONS
            if not skipping:
                kept.append(line)
        return "\n".join(kept).strip()

    @property
    def torch_says(self) -> str:
        """The first paragraph of ``What torch says`` on one line (empty when the section is missing)."""
        paragraph = self.section("What torch says").split("\n\n", 1)[0]
        return " ".join(paragraph.split())


@dataclass
class Rule:
    """A rule: code, name, default severity, documentation, and what runs it.

    Syntactic rules set ``check_module``; engine rules register hooks with :meth:`on`."""

    code: str
    name: str
    severity: Severity
    doc: RuleDoc
    torch_message: str = ""  # what torch raises or warns, verbatim where it raises
    #: Syntactic rules: called once per file with a :class:`ModuleContext`.
    check_module: Callable[[ModuleContext], None] | None = None
    #: Engine rules: hooks by the class of event they handle (filled by :meth:`on`).
    _hooks: dict[type[Event], list[object]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def on(self, event_type: type[EventT]) -> Callable[[Hook[EventT]], Hook[EventT]]:
        """Register the decorated function as this rule's hook on ``event_type`` (its exact class).
        A rule may register several hooks on one event class; they run in registration order."""

        def register(hook: Hook[EventT]) -> Hook[EventT]:
            self._hooks.setdefault(event_type, []).append(hook)
            return hook

        return register

    @property
    def hooks(self) -> Mapping[type[Event], Sequence[object]]:
        """The event classes this rule hooks (empty for a syntactic rule), with their hooks."""
        return self._hooks

    @property
    def docs_anchor(self) -> str:
        """The rule's heading anchor in docs/rules.md."""
        return f"{self.code.lower()}-{self.name}"

    def markdown(self, language: str = ENGLISH) -> str:
        """The rule's user documentation (``graphlife rules CODE``, the editor's rule page), in
        ``language`` when the rule is documented in it (see :meth:`RuleDoc.in_language`)."""
        doc = self.doc.in_language(language)
        return f"**{self.code} {self.name}**{severity_note(self.severity.value, doc.language)}\n\n{doc.user_text}"


def hooks_by_event(rules: Iterable[Rule]) -> dict[type[Event], list[AnyHook]]:
    """The dispatch table the interpreter emits through: for each event class, the hooks of
    every rule on it, in rule order. Each list holds hooks of exactly that class, so calling
    them with an event of that class is what each hook was declared to take."""
    table: dict[type[Event], list[AnyHook]] = {}
    for rule in rules:
        for event_type, hooks in rule.hooks.items():
            table.setdefault(event_type, []).extend(cast("list[AnyHook]", hooks))
    return table


# --------------------------------------------------------------------------- reporting

#: One ``Reporter.report`` call as the unit cache records it.
ReportArgs = tuple[Rule, Span, "str | Message", "Severity | None", tuple[Related, ...], tuple[FixRecipe, ...]]


class LogMark:
    """What a recording keeps in :attr:`Reporter.log` besides reports: a call analyzed apart
    (:class:`graphlife.analysis.call_records.Nested`), whose reports its own record holds."""


@dataclass
class Reporter:
    """Collects findings for one file; drops exact duplicates (loops are unrolled twice)."""

    findings: list[Finding] = field(default_factory=list)
    _seen: set[tuple[str, Span]] = field(default_factory=set)
    #: Set when an error was reported: the engine ends the path (torch raised there).
    raised: bool = False
    #: When a list: every report as made (:data:`ReportArgs`), before de-duplication, and the
    #: markers of calls run apart (the unit cache records units with it).
    log: list[ReportArgs | LogMark] | None = None
    #: The path of the file checked: a message about another file names it (``line 9 of train.py``).
    checked_path: str | None = None

    def report(
        self,
        rule: Rule,
        span: Span,
        message: str | Message,
        *,
        severity: Severity | None = None,
        related: Iterable[Related] = (),
        fixes: Iterable[FixRecipe] = (),
    ) -> None:
        """Add a finding. ``message`` is text, or a :class:`Message` when it names lines (the log
        keeps it as given, so that a replay can move its lines; the finding gets its text)."""
        related, fixes = tuple(related), tuple(fixes)
        if self.log is not None:
            self.log.append((rule, span, message, severity, related, fixes))
        text = message.seen_from(span.path, self.checked_path) if isinstance(message, Message) else message
        key = (rule.code, span)
        if (severity or rule.severity) is Severity.ERROR:
            self.raised = True
        if key in self._seen:
            # A stronger severity seen later (e.g. on the second unrolled
            # iteration) replaces the weaker one.
            new_severity = severity or rule.severity
            for index, old in enumerate(self.findings):
                if (old.code, old.span) == key and _rank(new_severity) < _rank(old.severity):
                    self.findings[index] = Finding(rule.code, rule.name, new_severity, span, text, related, fixes)
            return
        self._seen.add(key)
        self.findings.append(
            Finding(
                code=rule.code,
                name=rule.name,
                severity=severity or rule.severity,
                span=span,
                message=text,
                related=related,
                fixes=fixes,
            )
        )


def _rank(severity: Severity) -> int:
    return [Severity.ERROR, Severity.WARNING, Severity.INFORMATION, Severity.HINT].index(severity)


# --------------------------------------------------------------------------- syntactic rules


class SourceText(Protocol):
    """The checked file's text, as the fixes that rewrite a definition read it: a
    :class:`ModuleContext` or a :class:`RuleContext` (whose hooks then write the same edits)."""

    @property
    def lines(self) -> list[str]: ...

    def span(self, node: ast.AST) -> Span: ...



@dataclass
class ModuleContext:
    """What a rule's ``check_module(ctx)`` hook gets: the parsed file and a reporter.

    Rules that are about the *shape* of a definition (custom
    ``autograd.Function`` classes, ``checkpoint`` calls) read the tree here.
    Rules about values and graphs use the engine's event hooks instead
    (:mod:`graphlife.analysis.events`), never the spelling of names.
    """

    tree: ast.Module
    source: str
    lines: list[str]
    reporter: Reporter
    _semantics: Semantics | None = field(default=None, init=False, repr=False, compare=False)

    def span(self, node: ast.AST) -> Span:
        """The 1-based character span of an ``ast`` node."""
        return node_span(node, self.lines)

    @property
    def semantics(self) -> Semantics:
        """What the syntax of the file says: what a name means at a node, the grad-mode switches,
        the custom autograd Functions, the parent of a node (:mod:`graphlife.analysis.semantics`),
        made once per tree from the checker's walk of it."""
        if self._semantics is None:
            self._semantics = semantics_of(self.tree)
        return self._semantics


# --------------------------------------------------------------------------- engine rules


@dataclass(frozen=True)
class GradMode:
    """Whether autograd records at a program point."""

    enabled: Tri  # gradients are recorded (None: on some paths only)
    inference: Tri  # inside ``torch.inference_mode()``
    #: ``enabled`` holds only by assumption: a function analyzed without its callers, before
    #: anything in it sets the mode (a caller may run it under ``no_grad``).
    assumed: bool


class Engine(Protocol):
    """What :class:`RuleContext` reads of the interpreter. The interpreter satisfies it
    structurally: this module does not import the interpreter, the interpreter imports it.
    What belongs to the running run (the graph, the statements and loops running, the
    rules' unit state) is read from its run state at each call: a call run apart runs
    with a run state of its own."""

    @property
    def tree(self) -> ast.Module: ...
    @property
    def reporter(self) -> Reporter: ...
    @property
    def parents(self) -> Mapping[int, ast.AST]: ...
    @property
    def if_nodes(self) -> Sequence[ast.If]: ...
    @property
    def inlined(self) -> set[int]: ...
    @property
    def run_state(self) -> RunState: ...

    def span(self, node: ast.AST) -> Span: ...
    def text(self, node: ast.AST | None) -> str: ...
    def blame(self, stmt: ast.stmt, expr: ast.expr | None) -> ast.stmt: ...
    def carried_names(self, node_ids: set[int], state: State) -> list[tuple[str, ast.AST]]: ...
    def eval_quiet(self, expr: ast.expr, state: State) -> Value: ...
    def touch(self, node: ast.AST) -> None: ...
    def touch_whole_file(self) -> None: ...
    @property
    def entry(self) -> SourceModule: ...
    def module_of(self, node: ast.AST) -> SourceModule: ...
    def foreign_path(self, node: ast.AST) -> str | None: ...


#: Expressions :meth:`RuleContext.value_of` evaluates: names, attributes and items (no calls).
_REFERENCE_NODES = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.UnaryOp, ast.unaryop, ast.expr_context)


class RuleContext:
    """What an engine rule's hook may ask, at the event it handles (one per analyzed file).

    The code: :meth:`span`, :meth:`text`, :meth:`parent`, :meth:`ancestors`,
    :meth:`enclosing_function`, :attr:`module`, :meth:`if_statements`; what names mean
    and which grad-mode switches a ``with`` or a function has: :meth:`qualified_name`,
    :meth:`binds`, :meth:`grad_switches`; reading code the engine did not run is noted
    with :meth:`touch` / :meth:`read_whole_file` (and by :meth:`mentions`, :meth:`file_calls`).
    The run: :attr:`graph`, :meth:`running_statements`, :meth:`call_sites`,
    :meth:`blame`, :meth:`running_loops`, :meth:`iteration`, :meth:`state_before_loop`,
    :meth:`carried_names`, :meth:`lookup_name`, :meth:`value_of`, :meth:`grad_mode`,
    :meth:`was_inlined`, :meth:`backward_cleared_by`, and the in-place writes made with
    gradients off. The rule's memory: :meth:`unit_state`, :meth:`take_unit_state`,
    :meth:`file_state`. Findings: :meth:`report`.
    """

    __slots__ = ("_engine", "_file_states", "_semantics")

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._file_states: dict[type, object] = {}
        self._semantics: Semantics | None = None

    # -- findings --------------------------------------------------------------------
    def report(
        self,
        rule: Rule,
        span: Span,
        message: str | Message,
        *,
        severity: Severity | None = None,
        related: Iterable[Related] = (),
        fixes: Iterable[FixRecipe] = (),
    ) -> None:
        """Report a finding (recorded for the unit cache). An error ends the path: torch raised there.
        A message that names lines is a :class:`~graphlife.findings.Message` with :meth:`line`
        arguments (a replay moves them with the code); other messages may be plain text."""
        self._engine.reporter.report(rule, span, message, severity=severity, related=related, fixes=fixes)

    # -- the code --------------------------------------------------------------------
    def span(self, node: ast.AST) -> Span:
        """The 1-based character span of a node."""
        return self._engine.span(node)

    def text(self, node: ast.AST | None) -> str:
        """The source text of a node, shortened to 80 characters (empty for ``None``)."""
        return self._engine.text(node)

    def line(self, node: ast.AST) -> Line:
        """The 1-based line where ``node`` starts, as a message argument (``line {built}``)."""
        return Line(cast(int, getattr(node, "lineno", 0)), self._engine.foreign_path(node))

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node ``node`` is a child of (``None`` for the module), in the file where it is."""
        return self._engine.module_of(node).index.parents.get(id(node))

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        """The parent of ``node``, its parent, ... up to the module."""
        parents = self._engine.module_of(node).index.parents
        current = parents.get(id(node))
        while current is not None:
            yield current
            current = parents.get(id(current))

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function whose code ``node`` is (``None`` at module level)."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return ancestor
        return None

    @property
    def module(self) -> ast.Module:
        """The file's tree. Its top-level imports and the names it defines are part of what
        every unit depends on; a rule that reads into the body of a function or class the
        engine did not run calls :meth:`touch` on it (or :meth:`read_whole_file`)."""
        return self._engine.tree

    @property
    def lines(self) -> list[str]:
        """The checked file's lines (for fixes that rewrite its code: :class:`SourceText`)."""
        return self._engine.entry.lines

    def in_checked_file(self, node: ast.AST) -> bool:
        """Is ``node`` code of the checked file (not of a module of the project it imported)?"""
        return self._engine.module_of(node) is self._engine.entry

    def if_statements(self) -> Sequence[ast.If]:
        """Every ``if`` statement of the file, in source order (for rules that look for guards)."""
        return self._engine.if_nodes

    def touch(self, node: ast.AST) -> None:
        """Note that the running unit read the code of ``node`` (a function or class of this
        file): the unit cache runs the unit again when that code changes."""
        self._engine.touch(node)

    def read_whole_file(self) -> ast.Module:
        """The file's tree, noting that the running unit read all of it (a proof that looks for
        callers or gradient users anywhere): after any edit the unit cache runs it again."""
        self._engine.touch_whole_file()
        return self._engine.tree

    # -- what the syntax says ------------------------------------------------------------
    def _model(self, node: ast.AST | None = None) -> Semantics:
        """The semantic model of the file ``node`` is in (the running module's without one)."""
        module = self._engine.module_of(node) if node is not None else self._engine.module_of(self._engine.tree)
        if module is not self._engine.entry:
            return semantics_of(module.tree, module.index)
        tree = module.tree
        if self._semantics is None:
            self._semantics = semantics_of(tree)
        return self._semantics

    def qualified_name(self, expr: ast.expr) -> str | None:
        """The qualified name ``expr`` means where it is written (``T.no_grad`` -> ``torch.no_grad``
        after ``import torch as T``), through imports, aliases and scopes; ``None`` for a local
        variable or a builtin. The scopes it read are noted (:meth:`touch`)."""
        return self._model(expr).names.qualified_name(expr, self.touch)

    def binds(self, name: str, at: ast.AST) -> bool:
        """Does ``name`` at node ``at`` mean something the file binds (a variable, a parameter, an
        import, a definition), not a builtin? The scopes it read are noted."""
        return self._model(at).names.binds(name, at, self.touch)

    def grad_switches(self, construct: ast.With | ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[GradSwitch, ...]:
        """The grad-mode switches (``torch.no_grad()``, ``set_grad_enabled(flag)``, ...) a ``with``
        statement enters, or the grad-mode decorators of a function, in the order they take
        effect. The scopes their names were read in are noted."""
        grad = self._model(construct).grad
        if isinstance(construct, ast.With):
            return grad.with_switches(construct, self.touch)
        return grad.decorator_switches(construct, self.touch)

    def mentions(self, name: str) -> Sequence[ast.AST]:
        """Every place the file may refer to ``name`` (a name, an attribute ``.name``, a string
        ``"name"``), noting the whole file as read (:meth:`read_whole_file`)."""
        self._engine.touch_whole_file()
        return self._model().mentions(name)

    def file_calls(self) -> Sequence[ast.Call]:
        """Every call of the file, in source order, noting the whole file as read."""
        self._engine.touch_whole_file()
        return self._model().nodes(ast.Call)

    def autograd_function(self, node: ast.ClassDef) -> FunctionClass | None:
        """The custom ``torch.autograd.Function`` class ``node`` defines, with its methods (own and
        inherited from the file's Function classes) and ctx parameters; ``None`` when it is not
        one. The class's code, and that of every method it has, is noted as read (:meth:`touch`):
        a rule reads forward's, ``setup_context``'s and backward's code through it."""
        self.touch(node)
        fn = self._model(node).functions.of_class(node)
        for method in fn.methods.values() if fn is not None else ():
            self.touch(method)
        return fn

    def apply_calls(self, fn: FunctionClass) -> list[ApplyCall]:
        """The calls of ``fn.apply`` in its file (``Fn.apply(...)`` or a name bound to it), noting
        the whole file as read (:meth:`read_whole_file`): a call may be added anywhere."""
        self._engine.touch_whole_file()
        return self._model(fn.node).functions.calls_of(fn)

    # -- the run ---------------------------------------------------------------------
    @property
    def graph(self) -> GraphStore:
        """Every graph node made so far in the running unit (a call run apart has its own)."""
        return self._engine.run_state.graph

    def running_statements(self) -> tuple[ast.stmt, ...]:
        """The statement running at each depth: the unit's top-level statement first, down
        through blocks and inlined calls to the event's statement."""
        return tuple(self._engine.run_state.stmt_stack)

    def call_sites(self) -> tuple[ast.stmt, ...]:
        """The statements that made the inlined calls the event is in, outermost first."""
        return tuple(frame.stmt for frame in self._engine.run_state.frames)

    def blame(self, stmt: ast.stmt, expr: ast.expr | None) -> ast.stmt:
        """Where to report a fault of the value ``expr`` at ``stmt``: when the value came in as
        an argument of an inlined helper, the caller's call statement (recursively)."""
        return self._engine.blame(stmt, expr)

    def running_loops(self) -> tuple[ast.AST, ...]:
        """The loops (and comprehensions) running, outermost first, across inlined calls."""
        return tuple(loop for loop, _ in self._engine.run_state.loop_stack)

    def current_loop(self) -> ast.AST | None:
        """The innermost running loop, if any."""
        stack = self._engine.run_state.loop_stack
        return stack[-1][0] if stack else None

    def iteration(self) -> tuple[int, ...]:
        """The iteration index of each running loop, outermost first (loops run twice)."""
        return tuple(index for _, index in self._engine.run_state.loop_stack)

    def state_before_loop(self, index: int = -1) -> State | None:
        """The state before the running loop ``running_loops()[index]`` started (``-1``: the
        innermost); ``None`` when there is no such loop."""
        states = self._engine.run_state.loop_pre_states
        return states[index] if -len(states) <= index < len(states) else None

    def carried_names(self, node_ids: set[int], state: State) -> list[tuple[str, ast.AST]]:
        """Names (or ``self.attr``) that, at the top of the current loop, held graphs reaching
        ``node_ids``, with the loop: the state one iteration hands to the next."""
        return self._engine.carried_names(node_ids, state)

    def lookup_name(self, name: str, state: State) -> Value | None:
        """What ``name`` is bound to in ``state``, or among the module's definitions; ``None``
        when unbound (a builtin)."""
        value = state.env.get(name)
        return value if value is not None else self._engine.run_state.globals.get(name)

    def value_of(self, expr: ast.expr, state: State) -> Value:
        """The engine's value of a reference expression (``optimizer``, ``self.opt``,
        ``opts[0]``) in ``state``. Anything else is unknown: evaluating a call from a hook
        would run code the program does not run there."""
        if not all(isinstance(node, _REFERENCE_NODES) for node in ast.walk(expr)):
            return UNKNOWN
        return self._engine.eval_quiet(expr, state)

    def is_tensor(self, value: Value) -> bool:
        """Is ``value`` certainly a tensor? A value that may not be one (an input of a custom
        Function analyzed without its callers) is one once the run has used it where only a
        tensor works: a tensor method or attribute, a torch op's tensor argument, ``@``,
        ``save_for_backward`` (torch would have raised otherwise)."""
        if not isinstance(value, TensorVal):
            return False
        return not value.opaque or (value.storage is not None and value.storage in self._engine.run_state.tensor_uses)

    def grad_mode(self, state: State) -> GradMode:
        """Whether gradients are recorded in ``state``."""
        return GradMode(state.grad_enabled, state.inference_mode, state.grad_assumed)

    def was_inlined(self, function: ast.AST) -> bool:
        """Was ``function`` analyzed by inlining it into a caller (in this unit or an earlier one)?"""
        return id(function) in self._engine.inlined

    def backward_cleared_by(self, zero_grad: ast.AST) -> ast.AST | None:
        """The backward whose gradients the ``zero_grad`` statement ``zero_grad`` cleared."""
        return self._engine.run_state.zeroed_after.get(id(zero_grad))

    def note_write_without_grad(self) -> None:
        """Note that an in-place write made with gradients off runs under every statement
        running now (across inlined calls): their ``no_grad`` matters. Kept by the engine
        for the running unit; it crosses into and out of calls run apart."""
        writes = self._engine.run_state.no_grad_writes
        for stmt in self._engine.run_state.stmt_stack:
            writes[id(stmt)] = stmt

    def written_without_grad(self, statements: Iterable[ast.AST]) -> bool:
        """Does an in-place write made with gradients off run under one of ``statements``
        (so far in the running unit)?"""
        writes = self._engine.run_state.no_grad_writes
        return any(id(stmt) in writes for stmt in statements)

    # -- the rule's memory -----------------------------------------------------------
    def unit_state(self, kind: type[StateT]) -> StateT:
        """The rule's state of type ``kind`` for the running unit, made with ``kind()`` on first
        use. A call run apart starts with none and the caller's is back after it; report what
        it holds at ``UnitEndEvent`` (see :meth:`take_unit_state`)."""
        data = self._engine.run_state.rule_data
        found = data.get(kind)
        if found is None:
            found = data[kind] = kind()
        return cast(StateT, found)

    def take_unit_state(self, kind: type[StateT]) -> StateT | None:
        """The rule's state of type ``kind`` for the running unit, forgotten (at ``UnitEndEvent``:
        what was pending is decided now); ``None`` when there is none."""
        return cast("StateT | None", self._engine.run_state.rule_data.pop(kind, None))

    def file_state(self, kind: type[StateT]) -> StateT:
        """A state of type ``kind`` kept for the whole file, made with ``kind()`` on first use.
        Only for what depends on the code alone (a cache of guards found in the tree): it is
        not part of any unit's record."""
        found = self._file_states.get(kind)
        if found is None:
            found = self._file_states[kind] = kind()
        return cast(StateT, found)
