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
    out = [f"**`{name}`** — graph lifetime (graphlife)"]
    requires = {True: "yes", False: "no", None: "depends on the path"}[value.requires_grad]
    leaf = {True: "a leaf", False: "not a leaf (computed)", None: "a leaf on some paths"}[value.leaf]
    out.append(f"- requires grad: **{requires}**; {leaf}")
    if value.requires_grad is False and value.why:
        out.append(f"- no graph: {value.why}")
    roots = set(value.grad_fn)  # the latest evaluation (the second unrolled iteration shows carried state)
    if roots:
        _, reach = graph.reach(frozenset(roots), False)
        built = _sorted({place(graph.nodes[n].site) for n in reach})
        saving = _sorted({place(graph.nodes[n].site) for n in reach if graph.nodes[n].saves_certain})
        out.append(
            f"- graph built at line{'s' if len(built) > 1 else ''} {_lines(built)}"
            f" ({len(reach)} node{'s' if len(reach) != 1 else ''})"
        )
        if saving:
            out.append(f"- saves tensors for backward at line{'s' if len(saving) > 1 else ''} {_lines(saving)}")
        freed = _freed_lines(state, reach, place)
        if freed:
            out.append(
                f"- **already freed** by the backward at line {_lines(freed)}: a second backward through it raises"
            )
        consumers = _sorted({
            place(e.stmt) for e in recorder.backwards
            if (e.may & reach) and (place(e.stmt).path is not None or e.stmt.lineno >= getattr(target, "lineno", 0))
        })
        if consumers:
            retain = any(e.retain_graph for e in recorder.backwards if e.may & reach)
            verb = "backpropagated" if retain else "consumed (and freed)"
            out.append(f"- {verb} by the backward at line{'s' if len(consumers) > 1 else ''} {_lines(consumers)}")
        elif not freed:
            out.append("- no backward in this file reaches it: its saved tensors live as long as the tensor")
        keepers = sorted({
            (e.target, place(e.stmt))
            for e in recorder.stores
            if isinstance(e.value, TensorVal) and set(e.value.grad_fn) & reach
        }, key=lambda kept: (kept[0], _order(kept[1])))
        if keepers:
            out.append("- kept alive by " + ", ".join(f"`{t}` (line {ln})" for t, ln in keepers[:MAX_LISTED]))
        iterations = {graph.nodes[n].iteration for n in reach if graph.nodes[n].iteration}
        if len(iterations) > 1:
            newest = max(iterations)
            carried = _sorted({
                place(graph.nodes[n].site)
                for n in reach
                if graph.nodes[n].iteration and graph.nodes[n].iteration < newest
            })
            out.append(
                f"- reaches the graph of an earlier loop iteration (built at line {_lines(carried)}):"
                " state carried across iterations"
            )
    if value.storage is not None and state.bumps.get(value.storage):
        changes = _sorted({place(site) for _, site in state.bumps[value.storage] if hasattr(site, "lineno")})
        out.append(
            f"- changed in place at line{'s' if len(changes) > 1 else ''} {_lines(changes)}"
            f" (version {max(state.version_of(value.storage))})"
        )
    if value.inference:
        out.append("- an **inference tensor** (made under `torch.inference_mode()`): it cannot be saved for backward")
    return "\n".join(out)


def _backward_story(recorder: _Recorder, graph: GraphStore, call: ast.Call, place: Place) -> str | None:
    events = [e for e in recorder.backwards if e.call is call]
    if not events:
        return None
    event = events[-1]
    func = call.func  # `<root>.backward` (_node_at picks no other call)
    root = ast.unparse(func.value if isinstance(func, ast.Attribute) else func)
    out = [f"**`{root}.backward()`** — graph lifetime (graphlife)"]
    if not event.may:
        if isinstance(event.root, TensorVal) and event.root.requires_grad is False:
            why = event.root.why or "it does not require grad"
            out.append(f"- `{root}` has no graph: {why} — this backward raises")
        else:
            out.append("- the graph behind it is not known here (it comes from code graphlife cannot see)")
        return "\n".join(out)
    built = _sorted({place(graph.nodes[n].site) for n in event.may})
    out.append(
        f"- walks {len(event.may)} graph node{'s' if len(event.may) != 1 else ''}"
        f" built at line{'s' if len(built) > 1 else ''} {_lines(built)}"
    )
    freed_before = _freed_lines(event.state, event.may, place)
    if freed_before:
        out.append(f"- part of it was **already freed** by the backward at line {_lines(freed_before)}: this raises")
    if event.retain_graph is True:
        out.append("- `retain_graph=True`: the saved tensors stay alive after it")
    else:
        out.append("- frees the saved tensors of every node it walks (a later backward through them raises)")
    if event.leaves:
        groups = len(event.leaves)
        out.append(f"- accumulates into `.grad` of {groups} parameter group{'s' if groups != 1 else ''}")
    return "\n".join(out)


def _freed_lines(state: State, nodes: Iterable[int], place: Place) -> list[Line]:
    """The lines of the backwards that freed ``nodes`` on every path (the state keeps their statements)."""
    return _sorted({place(state.freed[n]) for n in nodes if n in state.freed})


def _order(line: Line) -> tuple[bool, str, int]:
    """The file checked first, then the other files by path; by number in each."""
    return (line.path is not None, line.path or "", line.number)


def _sorted(lines: Iterable[Line]) -> list[Line]:
    return sorted(lines, key=_order)


def _lines(lines: list[Line]) -> str:
    if len(lines) > 6:
        return ", ".join(str(line) for line in lines[:6]) + ", …"
    return ", ".join(str(line) for line in lines)
