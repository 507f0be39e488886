"""Branches decided by constants the file sets: the branch Python takes is the only one analyzed.

A setting at the top of a script (`MODE = "eval"`, `LEVELS = 2`) decides `if` statements
exactly when both sides of the comparison are known on every path; anything the engine cannot
be sure of (a float, a division by zero, a value from the command line) leaves both branches.
"""

from __future__ import annotations

from graphlife.checker import check

TWICE = """import torch
import torch.nn as nn

MODE = {mode!r}
model = nn.Linear(4, 1)
loss = model(torch.randn(8, 4)).pow(2).mean()
loss.backward()
if {test}:
    loss.backward()
"""


def _codes(source: str) -> list[tuple[str, int, str]]:
    return [(f.code, f.line, f.severity.value) for f in check(source)]


def test_a_string_setting_decides_the_branch() -> None:
    assert _codes(TWICE.format(mode="train", test='MODE == "train"')) == [("GL101", 9, "error")]
    assert _codes(TWICE.format(mode="eval", test='MODE == "train"')) == []


def test_arithmetic_and_chained_comparisons_of_known_ints() -> None:
    assert _codes(TWICE.format(mode=3, test="0 < MODE - 1 <= 2")) == [("GL101", 9, "error")]
    assert _codes(TWICE.format(mode=3, test="MODE % 2 == 0")) == []


def test_and_or_stop_where_python_stops() -> None:
    unknown = "torch.cuda.is_available()"
    assert _codes(TWICE.format(mode="eval", test=f'MODE == "train" and {unknown}')) == []
    assert _codes(TWICE.format(mode="train", test=f'MODE == "train" or {unknown}')) == [("GL101", 9, "error")]
    # An operand the engine cannot decide may be the result: the second backward may run.
    assert [code for code, _, _ in _codes(TWICE.format(mode="train", test=f'MODE == "train" and {unknown}'))] == [
        "GL101"]


def test_what_is_not_certain_leaves_both_branches() -> None:
    for test in ("MODE // 0 == 1", "MODE * 0.5 == 1.5", "len(__file__) > 3"):
        findings = _codes(TWICE.format(mode=3, test=test))
        assert [code for code, _, _ in findings] == ["GL101"], test  # the branch may run


def test_a_counter_in_a_loop_is_not_one_iterations_value() -> None:
    """The body's second run stands for every later iteration: `step` is not 1 there."""
    source = """import torch
import torch.nn as nn

model = nn.Linear(4, 1)
step = 0
for x in [torch.randn(8, 4) for _ in range(8)]:
    loss = model(x).pow(2).mean()
    loss.backward()
    if step % 4 == 3:
        loss.backward()
    step += 1
"""
    assert [(code, line) for code, line, _ in _codes(source)] == [("GL101", 10)]
