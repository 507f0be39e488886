"""Calls analyzed apart (graphlife.analysis.isolation) find what inlining them finds.

A call that takes and returns no graph runs on a fresh state, graph store and
rule data, and the rules decide its pending findings when it returns. These tests
check that this changes nothing a user sees: the same findings (lines, messages,
fixes) with and without it on every fixture and example, and the cases where a
call must not be run apart (it returns a model, it reads a global tensor, a loop
carries state into it) still give the findings that need the caller's values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlife.analysis import isolation
from graphlife.checker import check_source
from tests.fixturelib import FIXTURES_DIR, fixture_dirs

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = (Path(__file__).parent / "data" / "experiments.py").read_text()


def _findings(source: str) -> list[tuple]:
    return [(f.code, f.severity, f.span, f.message, f.related, f.fixes) for f in check_source(source).findings]


def _calls_run_apart(monkeypatch, source: str) -> list[str]:
    """The callees the engine ran apart and kept so (not undone) while checking ``source``."""
    kept: list[str] = []
    original = isolation.call_isolated

    def spy(interp, func, *rest):
        result = original(interp, func, *rest)
        if result is not None:
            kept.append(func.node.name)
        return result

    monkeypatch.setattr(isolation, "call_isolated", spy)
    check_source(source)
    monkeypatch.undo()
    return kept


@pytest.mark.parametrize("group", [*(p.name for p in fixture_dirs()), "examples"])
def test_findings_are_those_of_inlining_every_call(group: str, monkeypatch) -> None:
    folder = ROOT / "examples" if group == "examples" else FIXTURES_DIR / group
    paths = sorted(folder.glob("*.py"))
    for path in paths:
        source = path.read_text()
        apart = _findings(source)
        monkeypatch.setattr(isolation, "ENABLED", False)
        inlined = _findings(source)
        monkeypatch.setattr(isolation, "ENABLED", True)
        assert apart == inlined, f"{path.name}: running calls apart changed the findings"


def test_experiments_are_run_apart_and_judged_at_their_end(monkeypatch) -> None:
    assert _calls_run_apart(monkeypatch, EXPERIMENTS) == [
        "evaluate_with_grad", "keep_retained", "store_losses", "store_losses", "backward_twice",
    ]
    found = [(f.code, f.span.line) for f in check_source(EXPERIMENTS).findings]
    lines = EXPERIMENTS.split("\n")

    def line_of(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line) + 1

    assert found == [
        ("GL205", line_of("for _ in range(3):")),  # decided when evaluate_with_grad returned
        ("GL202", line_of("loss.backward(retain_graph=True)")),  # no later backward in keep_retained
        ("GL201", line_of("history.append(loss)")),
        ("GL101", max(i + 1 for i, text in enumerate(lines) if text == "    loss.backward()")),  # the second
    ]


def test_a_call_that_returns_a_model_is_inlined(monkeypatch) -> None:
    source = (
        "import torch\nimport torch.nn as nn\n\n"
        "def build():\n"
        "    return nn.Linear(3, 1)\n\n"
        "model = build()\n"
        "loss = model(torch.randn(2, 3)).sum()\n"
        "loss.backward()\n"
        "loss.backward()\n"
    )
    assert _calls_run_apart(monkeypatch, source) == []  # tried, undone: the model is needed after
    assert [(f.code, f.span.line) for f in check_source(source).findings] == [("GL101", 10)]


def test_a_call_whose_result_is_discarded_is_run_apart_whatever_it_returns(monkeypatch) -> None:
    source = (
        "import torch\nimport torch.nn as nn\n\n"
        "def fit():\n"
        "    model = nn.Linear(3, 1)\n"
        "    loss = model(torch.randn(2, 3)).sum()\n"
        "    loss.backward(retain_graph=True)\n"
        "    return model\n\n"
        "def main():\n"
        "    fit()\n"
        "    fit()\n\n"
        "main()\n"
    )
    assert _calls_run_apart(monkeypatch, source) == ["fit", "fit", "main"]
    assert [(f.code, f.span.line) for f in check_source(source).findings] == [("GL202", 7)]


def test_a_callee_that_sees_a_global_tensor_is_inlined(monkeypatch) -> None:
    source = (
        "import torch\n\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "loss = (w * w).sum()\n\n"
        "def report():\n"
        "    loss.backward()\n\n"
        "loss.backward()\n"
        "report()\n"
    )
    assert _calls_run_apart(monkeypatch, source) == []
    assert [f.code for f in check_source(source).findings] == ["GL101"]


def test_a_call_in_a_loop_is_inlined(monkeypatch) -> None:
    source = (
        "import torch\n\n"
        "def step():\n"
        "    w = torch.randn(3, requires_grad=True)\n"
        "    return (w * w).sum().item()\n\n"
        "for epoch in range(3):\n"
        "    step()\n"
    )
    assert _calls_run_apart(monkeypatch, source) == []
    assert check_source(source).findings == []


def test_an_inplace_write_under_no_grad_in_a_call_apart_keeps_the_no_grad(monkeypatch) -> None:
    """GL104's fix unwraps a ``no_grad`` block only when nothing in it writes in place: a
    write made inside a call run apart still counts."""
    source = (
        "import torch\n\n"
        "def shrink(scale):\n"
        "    w = torch.ones(3, requires_grad=True)\n"
        "    w.mul_(scale)\n"
        "    return 0\n\n"
        "with torch.no_grad():\n"
        "    shrink(0.5)\n"
        "    loss = (torch.ones(3, requires_grad=True) * 2).sum()\n"
        "loss.backward()\n"
    )

    def gl104_fixes(text: str) -> list[str]:
        return [fix.kind for f in check_source(text).findings if f.code == "GL104" for fix in f.fixes]

    assert _calls_run_apart(monkeypatch, source) == ["shrink"]
    assert gl104_fixes(source.replace("    shrink(0.5)\n", "")) == ["unwrap_with"]  # nothing writes under it
    assert gl104_fixes(source) == []  # the write made by the call keeps the block
    monkeypatch.setattr(isolation, "ENABLED", False)
    assert gl104_fixes(source) == []
