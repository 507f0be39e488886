"""Errors that torch raises only with gradients on are warnings in a function analyzed alone.

A function nothing in its file calls is analyzed without its callers; they may run it
under `torch.no_grad()` (a weight-conversion helper usually is). An in-place change of a
parameter there raises only if gradients are on: certain enough for a warning, not for
an error. Where the file itself shows the mode (module level, a caller in the file, an
explicit `with torch.enable_grad()`), the finding stays an error.
"""

from __future__ import annotations

from graphlife.checker import check

HELPER = """import torch
import torch.nn as nn


def convert(module):
    new = nn.Linear(4, 4)
    new.weight.copy_(module.weight)
    return new
"""


def _gl103(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.severity.value) for f in check(source) if f.code == "GL103"]


def test_a_helper_without_callers_gets_a_warning() -> None:
    findings = [f for f in check(HELPER) if f.code == "GL103"]
    assert [(f.line, f.severity.value) for f in findings] == [(7, "warning")]
    assert "analyzed without its callers" in findings[0].message


def test_a_caller_in_the_file_decides() -> None:
    with_grad = HELPER + "\nconvert(nn.Linear(4, 4))\n"
    assert _gl103(with_grad) == [(7, "error")]
    without_grad = HELPER + "\nwith torch.no_grad():\n    convert(nn.Linear(4, 4))\n"
    assert _gl103(without_grad) == []


def test_an_explicit_mode_inside_the_function_decides() -> None:
    explicit = HELPER.replace("    new.weight.copy_(module.weight)\n",
                              "    with torch.enable_grad():\n        new.weight.copy_(module.weight)\n")
    assert _gl103(explicit) == [(8, "error")]


def test_errors_at_a_backward_stay_errors() -> None:
    source = """import torch


def step(x):
    w = torch.randn(3, requires_grad=True)
    loss = (x * w).sum()
    loss.backward()
    loss.backward()
"""
    assert [(f.code, f.severity.value) for f in check(source)] == [("GL101", "error")]


LOGGER = """import torch
import torch.nn as nn


def log_weights(model: nn.Linear):
    return model.weight.numpy()
"""


def _gl109(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.severity.value) for f in check(source) if f.code == "GL109"]


def test_numpy_of_a_parameter_in_a_helper_without_callers_is_a_warning() -> None:
    """torch refuses `.numpy()` of a tensor that requires grad only while gradients are on."""
    findings = [f for f in check(LOGGER.replace("model: nn.Linear", "model")
                                 + "\nlog_weights(nn.Linear(2, 2))\n") if f.code == "GL109"]
    assert [(f.line, f.severity.value) for f in findings] == [(6, "error")]
    local = LOGGER.replace("    return model.weight.numpy()\n",
                           "    layer = nn.Linear(2, 2)\n    return layer.weight.numpy()\n")
    alone = [f for f in check(local) if f.code == "GL109"]
    assert [(f.line, f.severity.value) for f in alone] == [(7, "warning")]
    assert "analyzed without its callers" in alone[0].message
    assert _gl109(local + "\nwith torch.no_grad():\n    log_weights(None)\n") == []
