"""A loop over the tensors a multi-output op gives runs at least once when the op always
gives one: ``x.chunk(n)`` gives one to ``n`` tensors, even of an empty tensor (checked with
torch 2.13: ``torch.empty(0, 3).chunk(4)`` gives four). So what the loop body does on its
first run holds after the loop on every path. A loop over a plain tensor's rows may run
zero times (its first dimension may be 0), and the engine does not claim more for
``split`` either.

Each program is judged by torch: the error's line is where it raises.
"""

from __future__ import annotations

import traceback

import pytest

from graphlife.checker import check_source

PROGRAM = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
x = torch.randn(8, 4)
loss = model(x).sum()
for part in ITERABLE:
    loss.backward()
    break
loss.backward()
"""
AFTER_THE_LOOP = 10


def _gl101(iterable: str) -> list[tuple[int, str]]:
    findings = check_source(PROGRAM.replace("ITERABLE", iterable)).findings
    return [(f.span.line, f.severity.value) for f in findings if f.code == "GL101"]


def _torch_raises_at(iterable: str) -> int | None:
    torch = pytest.importorskip("torch")
    assert torch is not None
    try:
        exec(compile(PROGRAM.replace("ITERABLE", iterable), "<program>", "exec"), {"__name__": "__program__"})  # noqa: S102 - the program under test
    except RuntimeError as exc:
        return [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<program>"][-1].lineno
    return None


@pytest.mark.parametrize("iterable", ["x.chunk(2)", "zip(x.chunk(4), x.chunk(4))", "enumerate(x.chunk(3))",
                                      "torch.tensor_split(x, 2)", "x.tensor_split(3)"])
def test_a_loop_over_an_op_that_always_gives_a_tensor_runs(iterable: str) -> None:
    assert _torch_raises_at(iterable) == AFTER_THE_LOOP
    assert _gl101(iterable) == [(AFTER_THE_LOOP, "error")]


@pytest.mark.parametrize("iterable", ["x", "x.split(2)", "x.unbind(0)"])
def test_a_loop_that_may_run_zero_times_is_only_a_warning(iterable: str) -> None:
    assert _torch_raises_at(iterable) == AFTER_THE_LOOP  # this x has rows; an empty one would not
    assert _gl101(iterable) == [(AFTER_THE_LOOP, "warning")]
