"""Deeply nested loops: the engine runs loops nested deeper than ``MAX_UNROLLED_NESTING`` once
instead of twice, so that the work does not double with every level (a public results script
with nineteen nested loops stopped at the time box: nothing after it was analyzed)."""

from __future__ import annotations

from graphlife.analysis.engine.loops import MAX_UNROLLED_NESTING
from graphlife.checker import check_source


def _nested(levels: int, body: list[str]) -> str:
    lines = ["import torch", "import torch.nn as nn", "", "values = [1, 2]", "table = {}"]
    for level in range(levels):
        lines.append("    " * level + f"for v{level} in values:")
    indent = "    " * levels
    lines += [indent + line for line in body]
    return "\n".join(lines) + "\n"


def test_twenty_nested_loops_are_analyzed_to_the_end() -> None:
    body = ["table = {" + ", ".join(f"'k{i}': v{i}" for i in range(20)) + "}"]
    source = _nested(20, body) + "\nloss = nn.Linear(2, 1)(torch.randn(3, 2)).sum()\nloss.backward()\nloss.backward()\n"
    result = check_source(source)
    assert not any("time box" in note for note in result.notes)
    assert [(f.code, f.span.line) for f in result.findings] == [("GL101", source.count("\n"))]  # the code after them


def test_a_double_backward_deep_inside_nested_loops_is_still_found() -> None:
    levels = MAX_UNROLLED_NESTING + 2
    body = ["loss = nn.Linear(2, 1)(torch.randn(3, 2)).sum()", "loss.backward()", "loss.backward()"]
    source = _nested(levels, body)
    found = [(f.code, f.severity.value, f.span.line) for f in check_source(source).findings]
    assert found == [("GL101", "error", source.count("\n"))]
