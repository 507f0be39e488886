"""The engine's dispatch on node classes and its run state keep their contracts.

Statements and expressions find their handler by their node's class
(graphlife.analysis.engine.core): a subclass of a node class runs its base's handler,
as the ``isinstance`` chains did; a class with no handler does nothing (a statement) or
is unknown (an expression); a subclass of the interpreter that overrides a handler is
the one run. Everything one run of the engine changes lives in one run state
(graphlife.analysis.run_state): calls run apart and the table of the module's
definitions run in run states of their own and give the file's back as it was.
"""

from __future__ import annotations

import ast
import dataclasses
import time
from pathlib import Path

from graphlife.analysis import isolation
from graphlife.analysis.engine_api import Flow
from graphlife.analysis.interpreter import Interpreter
from graphlife.analysis.rule_api import Reporter
from graphlife.analysis.run_state import RunState
from graphlife.analysis.state import State
from graphlife.analysis.values import UNKNOWN, FunctionRef, Number, Value
from graphlife.rules import all_rules

EXPERIMENTS = (Path(__file__).parent / "data" / "experiments.py").read_text()


def _interpreter(source: str, cls: type[Interpreter] = Interpreter) -> Interpreter:
    tree = ast.parse(source)
    rules = [rule for rule in all_rules() if rule.hooks]
    return cls(tree, source, source.splitlines(), rules, Reporter(), time.monotonic() + 60)


class _MyName(ast.Name):
    """A node class the parser never makes (a tool's own node)."""


class _MyExpr(ast.Expr):
    pass


class _Opaque(ast.expr):
    """An expression class no handler declares."""


def test_a_subclass_of_a_node_class_runs_its_base_handler() -> None:
    interp = _interpreter("x = 1\n")
    state = State(env={"x": Number(1)})
    assert interp.eval(_MyName(id="x", ctx=ast.Load()), state) == Number(1)
    statement = _MyExpr(value=ast.NamedExpr(target=ast.Name(id="y", ctx=ast.Store()), value=ast.Constant(2)))
    interp.run_state.stmt_stack.append(statement)
    flow = interp.exec_stmt(statement, state)
    assert flow.normal is state and state.env["y"] == Number(2)  # the walrus ran: Expr's handler


def test_a_node_class_without_handler_is_unknown_or_does_nothing() -> None:
    interp = _interpreter("pass\n")
    state = State()
    assert interp.eval(_Opaque(), state) is UNKNOWN
    flow = interp.exec_stmt(ast.Pass(), state)
    assert isinstance(flow, Flow) and flow.normal is state and not (flow.breaks or flow.continues or flow.returns)


def test_an_override_of_a_handler_is_the_one_run() -> None:
    class Counting(Interpreter):
        names = 0

        def eval_name(self, expr: ast.Name, state: State) -> Value:
            Counting.names += 1
            return super().eval_name(expr, state)

    interp = _interpreter("x = 1\ny = x\n", Counting)
    interp.run()
    assert Counting.names >= 1
    assert Interpreter.expression_handlers[ast.Name] is not Counting.expression_handlers[ast.Name]


def _snapshot(run: RunState) -> dict[str, tuple[object, object]]:
    """Each field of a run state: the object itself, and a copy of a container's contents."""
    out: dict[str, tuple[object, object]] = {}
    for field in dataclasses.fields(run):
        value = getattr(run, field.name)
        if isinstance(value, dict):
            contents: object = list(value.items())
        elif isinstance(value, (list, set)):
            contents = list(value)
        else:
            contents = value
        out[field.name] = (value, contents)
    return out


def _same(before: dict[str, tuple[object, object]], after: dict[str, tuple[object, object]]) -> list[str]:
    """The fields that are another object, or whose contents changed."""
    differ = []
    for name, (obj, contents) in before.items():
        obj_after, contents_after = after[name]
        if obj_after is not obj or contents_after != contents:
            differ.append(name)
    return differ


def test_calls_run_apart_give_the_file_run_state_back(monkeypatch) -> None:
    interp = _interpreter(EXPERIMENTS)
    run = interp.run_state
    apart: list[tuple[list[str], str]] = []
    original = isolation.call_isolated

    def checked(engine: Interpreter, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State,
                site: ast.AST) -> Value | None:
        before = _snapshot(engine.run_state)
        result = original(engine, func, args, kwargs, state, site)
        # What a kept call hands back is written out; nothing else of the caller's run changes.
        handed_back = {"path_ends", "create_graph_seen", "no_grad_writes", "touched", "unit_inlined"}
        apart.append(([name for name in _same(before, _snapshot(engine.run_state)) if name not in handed_back],
                      func.node.name))
        return result

    monkeypatch.setattr(isolation, "call_isolated", checked)
    interp.run()
    assert [name for _, name in apart] == [
        "evaluate_with_grad", "keep_retained", "store_losses", "store_losses", "backward_twice",
    ]
    assert all(not changed for changed, _ in apart), apart
    assert interp.run_state is run
    assert not (run.stmt_stack or run.frames or run.call_stack or run.loop_stack or run.module_calls or run.yielded)


def test_the_definitions_table_leaves_the_running_run_state_alone() -> None:
    interp = _interpreter(EXPERIMENTS)
    interp.run()
    run = interp.run_state
    before = _snapshot(run)
    table = interp.definitions_table()
    assert _same(before, _snapshot(run)) == [] and interp.run_state is run
    assert {"torch", "nn", "Net", "evaluate_with_grad", "backward_twice"} <= table.keys()
    assert table is not run.globals
