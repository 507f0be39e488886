"""The graph-lifetime story of a tensor (or a `.backward(` call) at a position, for hover.

No other tool can say this, and it comes straight from the engine: the file is
interpreted once more with a *watch* on every name and attribute chain; the
interpreter reports the abstract value and state each time it evaluates (or
assigns) one, and the backward and store events of the whole unit. The story
of an expression then says whether the tensor requires grad, where its graph
was built, which backward consumes (or already consumed) it, what changed it in
place, and what keeps it alive.

One watched run serves every expression of a version of the file: the stories
are an index built once (:class:`Stories`), and a hover on a name not hovered
before only looks its values up. (Watching one expression per run made each new
name cost a run of the whole file: 1.4 s on a 5,000-line file.)
"""

from __future__ import annotations

import ast
import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphlife.analysis import no_graph_reasons as reasons
from graphlife.analysis import story_text
from graphlife.analysis.blocks import parse_tolerant
from graphlife.analysis.events import BackwardEvent, StoreEvent
from graphlife.analysis.positions import byte_to_char_column
from graphlife.analysis.state import GraphStore, State
from graphlife.analysis.values import TensorVal, TupleVal, Value
from graphlife.findings import Line
from graphlife.text_lines import source_lines

if TYPE_CHECKING:
    from graphlife.analysis.modules import ModuleProvider
    from graphlife.analysis.rule_api import RuleContext

MAX_LISTED = 4


def story_at(source: str, line: int, column: int, *, time_budget: float = 2.0, modules: ModuleProvider | None = None,
             path: str | None = None) -> str | None:
    """Markdown for the tensor name or `.backward(` call at 1-based ``line``/``column`` (characters).
    With ``modules``, the story follows the file's imports into the user's other modules, and
    names the file of a line there (``line 16 of layers.py``)."""
    return Stories(source, modules=modules, path=path, time_budget=time_budget).at(line, column)


class Stories:
    """The stories of one version of a file: parsed once, run once with every expression
    watched, every story told then; a position's story is then a look-up.

    The mouse rests on one name after another, and VS Code asks for a hover each time; on
    a file of thousands of lines a parse costs a tenth of a second and a watched run a
    second or more, so one version's run answers every hover (the language server keeps one
    of these per analyzed version, and builds it before the first hover: :meth:`build`).
    Only the told stories and where the cursor selects each are kept, not the syntax tree
    nor the engine's states (tens of megabytes on a file of thousands of lines).
    Thread-safe: the first :meth:`build` runs under a lock, and a hover that comes while it
    runs waits for it instead of running another."""

    def __init__(self, source: str, *, modules: ModuleProvider | None = None, path: str | None = None,
                 time_budget: float = 2.0) -> None:
        self.source = source
        self.modules = modules
        self.path = path
        self.time_budget = time_budget
        #: The watched runs made (0 or 1): what a test counts.
        self.runs = 0
        #: How long the parse, the watched run and the telling took (seconds), once built.
        self.build_seconds: float | None = None
        self._lock = threading.Lock()
        self._index: _Index | None = None

    @property
    def built(self) -> bool:
        """Whether every story is told (a hover only looks it up)."""
        return self._index is not None

    def build(self) -> None:
        """Parse, run with every expression watched and tell every story, if not done yet (the
        server calls this on a worker once the version's diagnostics are out)."""
        with self._lock:
            if self._index is None:
                started = time.perf_counter()
                self._index = self._tell_all()
                self.build_seconds = time.perf_counter() - started

    def at(self, line: int, column: int) -> str | None:
        """The story at a 1-based position (see :func:`story_at`)."""
        self.build()
        assert self._index is not None
        spot = _spot_at(self._index.spots.get(line, ()), column)
        return None if spot is None else self._index.told.get(spot.node_key)

    def _tell_all(self) -> _Index:
        tree, _ = parse_tolerant(self.source)
        if tree is None:
            return _Index({}, {})
        lines = source_lines(self.source)
        candidates = _candidates_by_line(tree)
        spots = {line: [spot for spot in (_spot(node, lines) for node in nodes) if spot is not None]
                 for line, nodes in candidates.items()}
        nodes = [node for line_nodes in candidates.values() for node in line_nodes]
        # A backward's story reads the run's events only: the names and chains are watched.
        recorder = _Recorder(node for node in nodes if not isinstance(node, ast.Call))
        graph, place = _run(tree, self.source, lines, recorder, time.monotonic() + self.time_budget, self.modules,
                            self.path)
        self.runs += 1
        told: dict[tuple[int, int, int, int], str] = {}
        backward_calls = {id(event.call) for event in recorder.backwards}
        for node in nodes:
            if isinstance(node, ast.Call):
                story = _backward_story(recorder, graph, node, place) if id(node) in backward_calls else None
            else:
                story = _tensor_story(recorder, graph, node, place) if recorder.saw_any(node) else None
            if story is not None:
                told[_node_key(node)] = story
        return _Index(spots, told)


@dataclass(frozen=True)
class _Spot:
    """Where the cursor selects a candidate of one line: 1-based character columns, both ends
    included (the word ``backward`` of a call; a name; the last name of an attribute chain)."""

    start: int
    end: int
    is_backward_call: bool
    node_key: tuple[int, int, int, int]


@dataclass(frozen=True)
class _Index:
    """What a version's hovers read: the candidates of each line, and the stories told."""

    spots: dict[int, list[_Spot]]
    told: dict[tuple[int, int, int, int], str]


def _node_key(node: ast.AST) -> tuple[int, int, int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0),
            getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


# -- finding the expression under the cursor ----------------------------------------------------


def _candidates_by_line(tree: ast.Module) -> dict[int, list[ast.AST]]:
    """The nodes a cursor can select, by the line where the cursor must be: names and attribute
    chains on one line, and `.backward(` calls by the line of the word `backward`."""
    by_line: dict[int, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "backward" and func.end_lineno is not None:
                by_line.setdefault(func.end_lineno, []).append(node)
        elif isinstance(node, (ast.Name, ast.Attribute)) and node.lineno == node.end_lineno:
            by_line.setdefault(node.lineno, []).append(node)
    return by_line


def _spot(node: ast.AST, lines: list[str]) -> _Spot | None:
    """Where on its line the cursor selects a candidate (``None``: a node made by code, not
    parsed, has no place in the text)."""
    if isinstance(node, ast.Call):
        func = node.func  # `<root>.backward` (_candidates_by_line picks no other call)
        if func.end_lineno is None or func.end_col_offset is None:
            return None
        text = lines[func.end_lineno - 1] if func.end_lineno - 1 < len(lines) else ""
        end = byte_to_char_column(text, func.end_col_offset) + 1
        return _Spot(end - len("backward"), end, True, _node_key(node))  # the word `backward`
    if not isinstance(node, (ast.Name, ast.Attribute)) or node.end_col_offset is None:
        return None
    text = lines[node.lineno - 1] if node.lineno - 1 < len(lines) else ""
    start = byte_to_char_column(text, node.col_offset) + 1
    end = byte_to_char_column(text, node.end_col_offset) + 1
    if isinstance(node, ast.Attribute):
        start = end - len(node.attr)  # only the attribute name itself selects the chain (`self.h` on `h`)
    return _Spot(start, end, False, _node_key(node))


def _spot_at(spots: Iterable[_Spot], column: int) -> _Spot | None:
    """The `.backward(...)` call whose name is under the cursor, or else the innermost name or
    attribute chain there (the last of equal ones)."""
    best: _Spot | None = None
    for spot in spots:
        if not spot.start <= column <= spot.end:
            continue
        if spot.is_backward_call:
            return spot
        if best is None or spot.end - spot.start <= best.end - best.start:
            best = spot
    return best


# -- running the engine with a watch ----------------------------------------------------------


class _Recorder:
    """What one watched run saw: for each watched expression, the last tensor it held (and the
    state then), or, when it never held one, the last tuple of tensors; and every backward and
    store of the run. (A story tells the latest evaluation: in an unrolled loop, the second
    iteration's, which shows what the first carried over.)"""

    def __init__(self, watched: Iterable[ast.AST]):
        self.watched = {id(node) for node in watched}
        self.tensors: dict[int, tuple[TensorVal, State]] = {}
        self.tuples: dict[int, tuple[TupleVal, State]] = {}
        self.backwards: list[BackwardEvent] = []
        self.stores: list[StoreEvent] = []

    def saw(self, node: ast.AST, value: Value, state: State) -> None:
        key = id(node)  # the tree outlives the recorder (the stories are told before either goes)
        if key not in self.watched:
            return
        if isinstance(value, TensorVal):
            self.tensors[key] = (value, state.copy())
        elif isinstance(value, TupleVal) and any(isinstance(item, TensorVal) for item in value.items):
            self.tuples[key] = (value, state.copy())

    def saw_any(self, node: ast.AST) -> bool:
        """Whether ``node`` ever held a tensor or a tuple of tensors (else it has no story)."""
        return id(node) in self.tensors or id(node) in self.tuples

    def last_tensor(self, node: ast.AST) -> tuple[TensorVal, State] | None:
        """The tensor the story of ``node`` tells (the last item of a tuple when it held no tensor)."""
        key = id(node)
        if key in self.tensors:
            return self.tensors[key]
        if key in self.tuples:
            value, state = self.tuples[key]
            items = [item for item in value.items if isinstance(item, TensorVal)]
            return items[-1], state
        return None

    def on_backward(self, event: BackwardEvent, ctx: RuleContext) -> None:
        self.backwards.append(event)

    def on_store(self, event: StoreEvent, ctx: RuleContext) -> None:
        self.stores.append(event)


def _run(tree: ast.Module, source: str, lines: list[str], recorder: _Recorder, deadline: float,
         modules: ModuleProvider | None, path: str | None) -> tuple[GraphStore, Callable[[ast.AST], Line]]:
    """Interpret the file with the watch on; the graph store as the run left it, and where a
    node the run recorded is (its line, and its file when it is another module's)."""
    # The engine is imported at the first hover, not when the language server loads this module.
    from graphlife.analysis.engine_api import Timeout  # noqa: PLC0415
    from graphlife.analysis.interpreter import Interpreter  # noqa: PLC0415
    from graphlife.analysis.rule_api import Reporter, Rule, RuleDoc  # noqa: PLC0415
    from graphlife.findings import Severity  # noqa: PLC0415

    watched = recorder.watched

    class WatchingInterpreter(Interpreter):
        """The engine with a witness on every evaluation: the stories need the values the watched
        expressions took. Only the hover pays for the check, not every check of a file."""

        def eval(self, expr: ast.expr | None, state: State) -> Value:
            value = super().eval(expr, state)
            if expr is not None and id(expr) in watched:
                recorder.saw(expr, value, state)
            return value

    listener = Rule(code="story", name="graph-lifetime-story", severity=Severity.HINT, doc=RuleDoc(""))
    listener.on(BackwardEvent)(recorder.on_backward)
    listener.on(StoreEvent)(recorder.on_store)
    interp = WatchingInterpreter(tree, source, lines, [listener], Reporter(), deadline, modules=modules, path=path)
    interp.watch = recorder
    interp.isolate_calls = False  # the story reads one graph store at the end of the run
    try:
        with contextlib.suppress(Timeout, RecursionError):
            interp.run()
    finally:
        interp.ctx = None  # the hooks' context refers back to the interpreter

    def place(node: ast.AST) -> Line:
        return Line(getattr(node, "lineno", 0), interp.foreign_path(node))

    return interp.run_state.graph, place


# -- telling it -------------------------------------------------------------------------------


#: Where a node the run recorded is: its line, naming its file when it is another module's.
Place = Callable[[ast.AST], Line]


def _tensor_story(recorder: _Recorder, graph: GraphStore, target: ast.AST, place: Place) -> str | None:
    told = recorder.last_tensor(target)
    if told is None:
        return None
    name = ast.unparse(target)
    value, state = told
    out: list[str] = [story_text.TENSOR_TITLE(name=name)]
    requires = {True: story_text.YES, False: story_text.NO, None: story_text.DEPENDS}[value.requires_grad]()
    leaf = {True: story_text.A_LEAF, False: story_text.NOT_A_LEAF, None: story_text.LEAF_SOMETIMES}[value.leaf]()
    out.append(story_text.REQUIRES(requires=requires, leaf=leaf))
    if value.requires_grad is False and value.why:
        out.append(story_text.NO_GRAPH(why=value.why))
    roots = set(value.grad_fn)  # the latest evaluation (the second unrolled iteration shows carried state)
    if roots:
        _, reach = graph.reach(frozenset(roots), False)
        built = _sorted({place(graph.nodes[n].site) for n in reach})
        saving = _sorted({place(graph.nodes[n].site) for n in reach if graph.nodes[n].saves_certain})
        nodes = (story_text.NODE if len(reach) == 1 else story_text.NODES)(n=len(reach))
        out.append(story_text.BUILT(lines=_lines(built, word=True), nodes=nodes))
        if saving:
            out.append(story_text.SAVES(lines=_lines(saving, word=True)))
        freed = _freed_lines(state, reach, place)
        if freed:
            out.append(story_text.FREED(lines=_lines(freed)))
        consumers = _sorted({
            place(e.stmt) for e in recorder.backwards
            if (e.may & reach) and (place(e.stmt).path is not None or e.stmt.lineno >= getattr(target, "lineno", 0))
        })
        if consumers:
            retain = any(e.retain_graph for e in recorder.backwards if e.may & reach)
            used = story_text.BACKPROPAGATED if retain else story_text.CONSUMED
            out.append(used(lines=_lines(consumers, word=True)))
        elif not freed:
            out.append(story_text.NO_BACKWARD())
        keepers = sorted({
            (e.target, place(e.stmt))
            for e in recorder.stores
            if isinstance(e.value, TensorVal) and set(e.value.grad_fn) & reach
        }, key=lambda kept: (kept[0], _order(kept[1])))
        if keepers:
            kept = [story_text.KEEPER(name=t, line=ln) for t, ln in keepers[:MAX_LISTED]]
            out.append(story_text.KEPT_BY(keepers=story_text.story_list(kept)))
        iterations = {graph.nodes[n].iteration for n in reach if graph.nodes[n].iteration}
        if len(iterations) > 1:
            newest = max(iterations)
            carried = _sorted({
                place(graph.nodes[n].site)
                for n in reach
                if graph.nodes[n].iteration and graph.nodes[n].iteration < newest
            })
            out.append(story_text.CARRIED(lines=_lines(carried)))
    if value.storage is not None and state.bumps.get(value.storage):
        changes = _sorted({place(site) for _, site in state.bumps[value.storage] if hasattr(site, "lineno")})
        out.append(story_text.CHANGED(lines=_lines(changes, word=True), version=max(state.version_of(value.storage))))
    if value.inference:
        out.append(story_text.INFERENCE())
    return story_text.story(out)


def _backward_story(recorder: _Recorder, graph: GraphStore, call: ast.Call, place: Place) -> str | None:
    events = [e for e in recorder.backwards if e.call is call]
    if not events:
        return None
    event = events[-1]
    func = call.func  # `<root>.backward` (_node_at picks no other call)
    root = ast.unparse(func.value if isinstance(func, ast.Attribute) else func)
    out: list[str] = [story_text.BACKWARD_TITLE(root=root)]
    if not event.may:
        if isinstance(event.root, TensorVal) and event.root.requires_grad is False:
            why = event.root.why or reasons.NO_GRAD_REQUIRED()
            out.append(story_text.NO_GRAPH_RAISES(root=root, why=why))
        else:
            out.append(story_text.UNKNOWN())
        return story_text.story(out)
    built = _sorted({place(graph.nodes[n].site) for n in event.may})
    nodes = (story_text.GRAPH_NODE if len(event.may) == 1 else story_text.GRAPH_NODES)(n=len(event.may))
    out.append(story_text.WALKS(nodes=nodes, lines=_lines(built, word=True)))
    freed_before = _freed_lines(event.state, event.may, place)
    if freed_before:
        out.append(story_text.PARTLY_FREED(lines=_lines(freed_before)))
    if event.retain_graph is True:
        out.append(story_text.RETAINS())
    else:
        out.append(story_text.FREES())
    if event.leaves:
        groups = len(event.leaves)
        out.append(story_text.ACCUMULATES(groups=(story_text.GROUP if groups == 1 else story_text.GROUPS)(n=groups)))
    return story_text.story(out)


def _freed_lines(state: State, nodes: Iterable[int], place: Place) -> list[Line]:
    """The lines of the backwards that freed ``nodes`` on every path (the state keeps their statements)."""
    return _sorted({place(state.freed[n]) for n in nodes if n in state.freed})


def _order(line: Line) -> tuple[bool, str, int]:
    """The file checked first, then the other files by path; by number in each."""
    return (line.path is not None, line.path or "", line.number)


def _sorted(lines: Iterable[Line]) -> list[Line]:
    return sorted(lines, key=_order)


def _lines(lines: list[Line], word: bool = False) -> str:
    return story_text.line_list(lines, word=word)
