"""A forward hook the engine cannot be sure of runs joined with the state where it did not.

A hook registered on some paths only, or on a module that code the engine did not see
had (it may have removed the hook, or kept it), may run or not: what it writes is
never the basis of an error, and it is not forgotten either. Each program is decided
by torch (``sys.argv`` has no extra argument when the oracle runs it).
"""

from __future__ import annotations

import textwrap

from graphlife.checker import check_source


def _errors(source: str) -> list[tuple[str, int]]:
    findings = check_source(textwrap.dedent(source)).findings
    return [(f.code, f.span.line) for f in findings if f.severity.value == "error"]


ONE_PATH = """
import sys
import torch
import torch.nn as nn

layer = nn.Linear(3, 3)
x = torch.randn(2, 3, requires_grad=True)
feats = {"x": x * 3}


def keep(module, inputs, output):
    feats["x"] = output.detach()


REGISTER
out = layer(x)
feats["x"].sum().backward()
"""


def test_a_forward_hook_registered_on_one_path_may_not_run() -> None:
    assert _errors(ONE_PATH.replace("REGISTER", "if len(sys.argv) > 1:\n    layer.register_forward_hook(keep)")) == []


def test_a_forward_hook_registered_on_every_path_runs() -> None:
    # torch: the hook replaces the tensor with a detached one, and the backward raises
    assert _errors(ONE_PATH.replace("REGISTER", "layer.register_forward_hook(keep)")) == [("GL104", 17)]


UNSEEN_HAD_THE_MODULE = """
import torch
import torch.nn as nn
import trainerlib

layer = nn.Linear(3, 3)
feats = {"x": torch.zeros(3)}


def keep(module, inputs, output):
    feats["x"] = output


layer.register_forward_hook(keep)
trainerlib.prepare(layer)
out = layer(torch.randn(2, 3))
feats["x"].sum().backward()
"""


def test_a_forward_hook_still_runs_after_code_the_engine_did_not_see_had_the_module() -> None:
    # with a `prepare` that keeps the hook, torch runs it and the backward goes through the output
    assert _errors(UNSEEN_HAD_THE_MODULE) == []
