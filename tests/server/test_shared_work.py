"""Work the engine shares between units and calls finds what doing it again finds.

Two shortcuts keep the engine's cost proportional to the code: the ``self`` of the
methods analyzed alone is built once per class (graphlife.analysis.self_cache), and
an inlined call that changed nothing is replayed when it is made again with the
same inputs (graphlife.analysis.call_memo). These tests check that users see the
same findings with and without them on every fixture and example, that a replayed
call gives what running it gives, that one method's writes to ``self`` never reach
another method, and that getters that fan out cost work linear in their number.
"""

from __future__ import annotations

import ast
import sys
import time
from pathlib import Path

import pytest

from graphlife.analysis import call_memo, self_cache
from graphlife.analysis import interpreter as engine
from graphlife.analysis.rule_api import Reporter
from graphlife.analysis.state import State
from graphlife.analysis.values import UNKNOWN, Number
from graphlife.checker import check_source
from graphlife.incremental import IncrementalChecker
from graphlife.rules import all_rules
from tests.fixturelib import FIXTURES_DIR, fixture_dirs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from generate import generate_fanout  # noqa: E402

GROUPS = [*(p.name for p in fixture_dirs()), "examples"]


def _paths(group: str) -> list[Path]:
    folder = ROOT / "examples" if group == "examples" else FIXTURES_DIR / group
    return sorted(folder.glob("*.py"))


def _findings(source: str) -> list[tuple]:
    return [(f.code, f.severity, f.span, f.message, f.related, f.fixes) for f in check_source(source).findings]


@pytest.mark.parametrize("group", GROUPS)
def test_findings_are_those_of_doing_all_the_work(group: str, monkeypatch) -> None:
    for path in _paths(group):
        source = path.read_text()
        shared = _findings(source)
        monkeypatch.setattr(call_memo, "ENABLED", False)
        monkeypatch.setattr(self_cache, "ENABLED", False)
        alone = _findings(source)
        monkeypatch.undo()
        assert shared == alone, f"{path.name}: sharing work between units and calls changed the findings"


def _statements(source: str, monkeypatch) -> int:
    count = 0
    original = engine.Interpreter.exec_stmt

    def counting(self, stmt, state):
        nonlocal count
        count += 1
        return original(self, stmt, state)

    monkeypatch.setattr(engine.Interpreter, "exec_stmt", counting)
    check_source(source)
    monkeypatch.setattr(engine.Interpreter, "exec_stmt", original)
    return count


def test_getters_that_fan_out_cost_work_linear_in_their_number(monkeypatch) -> None:
    counts = {levels: _statements(generate_fanout(levels), monkeypatch) for levels in (3, 6, 9, 12)}
    steps = [counts[6] - counts[3], counts[9] - counts[6], counts[12] - counts[9]]
    assert max(steps) <= 2 * max(min(steps), 1) and counts[12] < 2000, counts
    monkeypatch.setattr(call_memo, "ENABLED", False)
    assert _statements(generate_fanout(9), monkeypatch) > 5 * counts[9]  # each call run: 3**depth


def test_a_replayed_call_gives_what_running_it_gives(monkeypatch) -> None:
    """Before every replay, run the call too: same result, nothing changed, same code read."""
    replays = 0
    differences: list[str] = []
    original = call_memo.CallMemo.call

    def checked(memo, interp, func, args, kwargs, state, site):
        nonlocal replays
        key = call_memo._key(interp, func, state)
        entry = next((e for e in memo.entries.get(key, ()) if call_memo._matches(e, func, args, kwargs, state)), None)
        if entry is not None:
            replays += 1
            heap, facts, maps = state.heap, call_memo._facts(interp), call_memo._maps(state)
            run = interp.run_state
            saved, first = run.touched, len(interp.inline_log)
            touched: dict = {}
            run.touched = touched
            try:
                result = interp.inline_call(func, args, kwargs, state, site)
            finally:
                run.touched = saved
            expected = State(env=state.env, heap=dict(heap))
            interp.collect_after_call(expected, entry.roots)  # what the replay leaves
            same = (
                repr(result) == repr(entry.result) and call_memo._facts(interp) == facts
                and call_memo._same_heap(expected.heap, state.heap) and call_memo._same_maps(maps, state)
                and {id(node) for node in interp.inline_log[first:]} == entry.inlined
                and (interp.unit_cache is None or touched.keys() == entry.touched.keys())
            )
            if not same:  # noted, not raised: the engine's quiet runs would swallow an exception
                differences.append(f"{func.node.name}: {result!r} / {entry.result!r}")
        return original(memo, interp, func, args, kwargs, state, site)

    monkeypatch.setattr(call_memo.CallMemo, "call", checked)
    check_source(generate_fanout(8))
    for group in GROUPS:
        for path in _paths(group):
            check_source(path.read_text())
    assert replays > 50 and not differences, differences[:5]


METHODS = '''
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 4)
        self.history = []
        self.last = None

    def first(self, x):
        self.last = self.model(x)

    def second(self, x):
        return self.last
'''


def _entry_states(source: str) -> tuple[engine.Interpreter, dict[str, State]]:
    tree = ast.parse(source)
    rules = [rule for rule in all_rules() if rule.hooks]
    interp = engine.Interpreter(tree, source, source.splitlines(), rules, Reporter(), time.monotonic() + 60)
    owner = next(stmt for stmt in tree.body if isinstance(stmt, ast.ClassDef))
    methods = {stmt.name: stmt for stmt in owner.body if isinstance(stmt, ast.FunctionDef)}
    return interp, {name: interp.function_entry_state(methods[name], owner) for name in ("first", "second")}


def test_each_method_gets_a_self_of_its_own() -> None:
    interp, states = _entry_states(METHODS)
    first, second = states["first"], states["second"]
    ref_first, ref_second = first.env["self"], second.env["self"]
    assert len(interp.self_cache.built) == 1  # built once
    obj = first.heap_write(ref_first.oid)
    obj.attrs["last"] = Number(1)
    first.heap_write(first.heap[ref_first.oid].attrs["history"].oid).elem = Number(2)
    seen = second.heap[ref_second.oid]
    # `first` may have run before `second`: what it assigns is not known there, and not `first`'s own write
    assert seen.attrs["last"] is UNKNOWN
    assert second.heap[seen.attrs["history"].oid].elem is None
    # made "at" each method's own definition, as when built for it
    assert first.heap[ref_first.oid].site.name == "first" and seen.site.name == "second"


GRAD_IN_INIT = '''
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 4)
        self.start = self.model.weight.grad

    def first(self, x):
        return self.start

    def second(self, x):
        return self.start
'''


def _entry_states_around_create_graph(source: str) -> tuple[engine.Interpreter, State, State]:
    """The entry states of ``first`` before a ``backward(create_graph=True)`` ran in the file and
    of ``second`` after one ran (the fact is carried from unit to unit)."""
    tree = ast.parse(source)
    rules = [rule for rule in all_rules() if rule.hooks]
    interp = engine.Interpreter(tree, source, source.splitlines(), rules, Reporter(), time.monotonic() + 60)
    owner = next(stmt for stmt in tree.body if isinstance(stmt, ast.ClassDef))
    methods = {stmt.name: stmt for stmt in owner.body if isinstance(stmt, ast.FunctionDef)}
    before = interp.function_entry_state(methods["first"], owner)
    interp.run_state.create_graph_seen = True
    after = interp.function_entry_state(methods["second"], owner)
    return interp, before, after


def test_a_self_that_reads_no_grad_is_built_once_for_both_create_graph_facts() -> None:
    interp, before, after = _entry_states_around_create_graph(METHODS)
    assert len({id(built) for built in interp.self_cache.built.values()}) == 1
    assert interp.run_state.create_graph_seen  # reusing it leaves the file's fact as it is
    assert before.heap[before.env["self"].oid].attrs.keys() == after.heap[after.env["self"].oid].attrs.keys()


def test_a_self_whose_init_reads_a_grad_is_built_for_each_create_graph_fact() -> None:
    """After ``backward(create_graph=True)`` a ``.grad`` may have a graph: what ``__init__`` read
    from one is not what it read before."""
    interp, before, after = _entry_states_around_create_graph(GRAD_IN_INIT)
    assert len({id(built) for built in interp.self_cache.built.values()}) == 2
    start_before = before.heap[before.env["self"].oid].attrs["start"]
    start_after = after.heap[after.env["self"].oid].attrs["start"]
    assert start_before.requires_grad is False and start_after.requires_grad is None


KEPT_GRAPH = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.keep = True

    def log(self):
        return 1

    def run(self, x):
        loss = self.model(x).sum()
        loss.backward(retain_graph=self.keep)
        loss.backward()
'''


def test_an_edit_of_init_reaches_every_method_in_the_language_server() -> None:
    """The ``self`` built once depends on ``__init__``'s code: the unit cache runs the methods again."""
    checker = IncrementalChecker()
    versions = [KEPT_GRAPH, KEPT_GRAPH.replace("self.keep = True", "self.keep = False"), KEPT_GRAPH]
    seen = []
    for source in versions:
        incremental = [(f.code, f.span, f.message) for f in checker.check(source).findings]
        assert incremental == [(f.code, f.span, f.message) for f in check_source(source).findings]
        seen.append([code for code, _, _ in incremental])
    assert seen == [[], ["GL101"], []]


HELPER_ABOVE_ITS_CALLER = '''
import torch


def scaled(x):
    y = x * 2
    return y


def train():
    model = torch.nn.Linear(3, 1)
    loss = scaled(model(torch.randn(2, 3))).sum()
    loss.backward()
'''


def _runs_per_line(source: str, monkeypatch) -> dict[int, int]:
    runs: dict[int, int] = {}
    original = engine.Interpreter.exec_stmt

    def counting(self, stmt, state):
        runs[stmt.lineno] = runs.get(stmt.lineno, 0) + 1
        return original(self, stmt, state)

    monkeypatch.setattr(engine.Interpreter, "exec_stmt", counting)
    check_source(source)
    monkeypatch.setattr(engine.Interpreter, "exec_stmt", original)
    return runs


def test_a_helper_written_above_its_caller_is_analyzed_once_inlined(monkeypatch) -> None:
    """Functions are analyzed alone callers first: the helper is inlined in ``train`` before its
    turn comes, and not analyzed alone again."""
    runs = _runs_per_line(HELPER_ABOVE_ITS_CALLER, monkeypatch)
    assert runs[6] == 1 and runs[7] == 1  # the helper's body
    assert runs[12] == 1


HELPER_ITS_CALLER_NEVER_REACHES = '''
import torch


def step():
    x = torch.randn(3, requires_grad=True)
    loss = (x * 2).sum()
    loss.backward()
    loss.backward()


def train():
    if False:
        step()
'''


def test_a_helper_its_callers_never_reach_is_still_analyzed_alone() -> None:
    findings = check_source(HELPER_ITS_CALLER_NEVER_REACHES).findings
    assert [(f.code, f.span.line) for f in findings if f.severity.value == "error"] == [("GL101", 9)]
