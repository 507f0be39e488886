"""The graph-lifetime story of a tensor (or a `.backward(` call) at a position, for hover.

No other tool can say this, and it comes straight from the engine: the file is
interpreted once more with a *watch* on the expression under the cursor; the
interpreter records the abstract value and state each time it evaluates that
expression, and the backward and store events of the whole unit. The story
then says whether the tensor requires grad, where its graph was built, which
backward consumes (or already consumed) it, what changed it in place, and what
keeps it alive.
"""

from __future__ import annotations

import ast
import contextlib
import time
from collections.abc import Callable, Iterable
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
    """The stories of one version of a file: parsed once, each expression's story told once.

    The mouse rests on the same names again and again, and VS Code asks for a hover each
    time; on a file of thousands of lines a parse costs a tenth of a second and a watched
    run most of a second, so one version's parse and stories are kept (the language server
    keeps one of these per analyzed version). Thread-safe enough for its use: a race only
    computes a story twice."""

    def __init__(self, source: str, *, modules: ModuleProvider | None = None, path: str | None = None,
                 time_budget: float = 2.0) -> None:
        self.source = source
        self.modules = modules
        self.path = path
        self.time_budget = time_budget
        self._parsed: tuple[ast.Module | None, list[str], dict[int, list[ast.AST]]] | None = None
        self._told: dict[tuple[int, int, int, int], str | None] = {}

    def at(self, line: int, column: int) -> str | None:
        """The story at a 1-based position (see :func:`story_at`)."""
        if self._parsed is None:
            tree, _ = parse_tolerant(self.source)
            self._parsed = (tree, source_lines(self.source), _candidates_by_line(tree) if tree is not None else {})
        tree, lines, by_line = self._parsed
        if tree is None:
            return None
        target = _node_at(by_line.get(line, ()), lines, line, column)
        if target is None:
            return None
        key = (getattr(target, "lineno", 0), getattr(target, "col_offset", 0),
               getattr(target, "end_lineno", 0) or 0, getattr(target, "end_col_offset", 0) or 0)
        if key not in self._told:
            self._told[key] = self._tell(tree, lines, target)
        return self._told[key]

    def _tell(self, tree: ast.Module, lines: list[str], target: ast.AST) -> str | None:
        recorder = _Recorder(target)
        graph, place = _run(tree, self.source, lines, recorder, time.monotonic() + self.time_budget, self.modules,
                            self.path)
        if isinstance(target, ast.Call):
            return _backward_story(recorder, graph, target, place)
        return _tensor_story(recorder, graph, target, place)


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


def _node_at(tree: ast.Module | Iterable[ast.AST], lines: list[str], line: int, column: int) -> ast.AST | None:
    """The innermost name / attribute chain, or a `.backward(...)` call whose name is under the
    cursor, among the nodes of ``tree`` (or the candidate nodes given)."""
    best: ast.AST | None = None
    best_size = 0
    for node in (ast.walk(tree) if isinstance(tree, ast.AST) else tree):
        if not isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            continue
        if isinstance(node, ast.Call):
            func = node.func
            if not (isinstance(func, ast.Attribute) and func.attr == "backward"):
                continue
            # the cursor on the word `backward`
            start_line = func.end_lineno
            if start_line is None or func.end_col_offset is None:
                continue  # a node made by code, not parsed: it has no place in the text
            text = lines[start_line - 1] if start_line - 1 < len(lines) else ""
            end = byte_to_char_column(text, func.end_col_offset) + 1
            start = end - len("backward")
            if line == start_line and start <= column <= end:
                return node
            continue
        if node.lineno != line or node.end_lineno != line or node.end_col_offset is None:
            continue
        text = lines[line - 1] if line - 1 < len(lines) else ""
        start = byte_to_char_column(text, node.col_offset) + 1
        end = byte_to_char_column(text, node.end_col_offset) + 1
        if isinstance(node, ast.Attribute):
            # only the attribute name itself selects the chain (`self.h` on `h`)
            start = end - len(node.attr)
        if start <= column <= end:
            size = end - start
            if best is None or size <= best_size:
                best, best_size = node, size
    return best


# -- running the engine with a watch ----------------------------------------------------------


class _Recorder:
    def __init__(self, target: ast.AST):
        self.target = target
        self.values: list[tuple[Value, State]] = []
        self.backwards: list[BackwardEvent] = []
        self.stores: list[StoreEvent] = []

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

    class WatchingInterpreter(Interpreter):
        """The engine with a witness on every evaluation: the story needs each value the watched
        expression took. Only the hover pays for the check, not every check of a file."""

        def eval(self, expr: ast.expr | None, state: State) -> Value:
            value = super().eval(expr, state)
            if expr is recorder.target:
                recorder.values.append((value, state.copy()))
            return value

    listener = Rule(code="story", name="graph-lifetime-story", severity=Severity.HINT, doc=RuleDoc(""))
    listener.on(BackwardEvent)(recorder.on_backward)
    listener.on(StoreEvent)(recorder.on_store)
    interp = WatchingInterpreter(tree, source, lines, [listener], Reporter(), deadline, modules=modules, path=path)
    interp.watch = (recorder.target, recorder.values)
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
    tensors = [(v, s) for v, s in recorder.values if isinstance(v, TensorVal)]
    tuples = [(v, s) for v, s in recorder.values if isinstance(v, TupleVal)]
    if not tensors and tuples:
        tensors = [(item, s) for v, s in tuples for item in v.items if isinstance(item, TensorVal)]
    if not tensors:
        return None
    name = ast.unparse(target)
    value, state = tensors[-1]
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
