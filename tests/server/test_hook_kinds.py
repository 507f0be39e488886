"""Post-accumulate-grad hooks, the deprecated module backward hook, and hooks registered in
loops over a model's submodules: each program is run under torch here, and the analyzer's
errors must be exactly the lines where torch raises (or fewer, where a hook only may run).
"""

from __future__ import annotations

import textwrap
import traceback
import warnings

import pytest

from graphlife.checker import check_source

torch = pytest.importorskip("torch")


def _errors(source: str) -> list[tuple[str, int]]:
    findings = check_source(source).findings
    return [(f.code, f.span.line) for f in findings if f.severity.value == "error"]


def _torch_raises_at(source: str) -> int | None:
    """The line of the program where torch raises, or ``None`` when it runs clean."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, "<program>", "exec"), {"__name__": "__program__"})  # noqa: S102 - the program under test
    except RuntimeError as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<program>"]
        return frames[-1].lineno if frames else -1
    return None


def _judged(source: str) -> tuple[list[tuple[str, int]], int | None]:
    source = textwrap.dedent(source)
    return _errors(source), _torch_raises_at(source)


POST_ACCUMULATE = """
import sys
import torch

w = torch.randn(3, requires_grad=True)
seen = {"g": w * 3}


def grab(param):
    seen["g"] = param.grad


REGISTER
BACKWARD
seen["g"].sum().backward()
"""


def test_a_post_accumulate_hook_gets_the_leaf_after_its_grad_was_filled() -> None:
    source = POST_ACCUMULATE.replace("REGISTER", "w.register_post_accumulate_grad_hook(grab)")
    errors, raised = _judged(source.replace("BACKWARD", "(w * 2).sum().backward()"))
    assert raised == 15 and errors == [("GL104", 15)]  # `.grad` has no graph: torch raises


def test_autograd_grad_runs_no_post_accumulate_hook() -> None:
    source = POST_ACCUMULATE.replace("REGISTER", "w.register_post_accumulate_grad_hook(grab)")
    errors, raised = _judged(source.replace("BACKWARD", "torch.autograd.grad((w * 2).sum(), w)"))
    assert raised is None and errors == []


def test_a_post_accumulate_hook_registered_on_one_path_may_not_run() -> None:
    register = "if len(sys.argv) > 99:\n    w.register_post_accumulate_grad_hook(grab)"
    source = POST_ACCUMULATE.replace("REGISTER", register)
    errors, raised = _judged(source.replace("BACKWARD", "(w * 2).sum().backward()"))
    assert raised is None and errors == []


LEGACY = """
import torch
import torch.nn as nn

layer = nn.Linear(3, 3)
seen = {"g": torch.zeros(3)}


def grab(module, grad_input, grad_output):
    seen["g"] = STORED


layer.register_backward_hook(grab)
layer(torch.randn(2, 3)).sum().backward()
seen["g"].sum().backward()
"""


def test_a_legacy_backward_hook_may_run_so_what_it_writes_is_not_known() -> None:
    # torch runs it and the stored tensor has a graph: the last backward goes through
    errors, raised = _judged(LEGACY.replace("STORED", "torch.ones(3, requires_grad=True)"))
    assert raised is None and errors == []


def test_a_legacy_backward_hook_is_never_the_basis_of_an_error() -> None:
    # torch raises (the hook's gradient has no graph), but what the hook gets is the last
    # op's gradients, which the engine does not model: it stays silent
    source = LEGACY.replace("STORED", "grad_output[0]")
    errors, raised = _judged(source.replace("torch.zeros(3)", "torch.ones(3, requires_grad=True) * 2"))
    assert raised == 15 and errors == []


SUBMODULES = """
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
saved = {}


def keep_grad(module, grad_input, grad_output):
    saved["g"] = grad_output[0]


for ITEM in model.METHOD():
    module = ITEM
    module.register_full_backward_hook(keep_grad)
model(torch.randn(5, 4)).sum().backward()
saved["g"].sum().backward()
"""


@pytest.mark.parametrize("method, item", [("children", "m"), ("modules", "m"), ("named_children", "(_, m)"),
                                          ("named_modules", "(_, m)")])
def test_hooks_registered_over_the_submodules_run(method: str, item: str) -> None:
    source = SUBMODULES.replace("METHOD", method).replace("for ITEM", f"for {item}").replace("= ITEM", "= m")
    errors, raised = _judged(source)
    assert raised == 17 and errors == [("GL104", 17)]


def test_a_model_with_a_submodule_the_engine_does_not_know_lists_none() -> None:
    # the loop may go over a module the engine cannot see: its hooks escape, no error
    source = SUBMODULES.replace("METHOD", "children").replace("for ITEM", "for m").replace("= ITEM", "= m")
    source = source.replace("model = nn.Sequential(",
                            "import sys\nmodel = nn.Sequential(*[nn.Identity()] * len(sys.argv), ")
    errors, _ = _judged(source)
    assert errors == []


NESTED_BACKWARD = """
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
probe = nn.Linear(4, 1)
x = torch.randn(3, 4)
hidden = model[1](model[0](x))
aux = AUX


def aux_gradient(grad):
    aux.backward(retain_graph=True)
    return grad


out = model[2](hidden)
out.register_hook(aux_gradient)
out.sum().backward()
"""


def _infos(source: str, code: str) -> list[int]:
    return [f.span.line for f in check_source(source).findings if f.code == code]


@pytest.mark.parametrize("aux, needed", [("hidden.pow(2).sum()", True), ("probe(x).pow(2).sum()", False)])
def test_a_backward_a_hook_runs_retains_for_the_rest_of_the_enclosing_backward(aux: str, needed: bool) -> None:
    # GL202 says the argument can go exactly where torch runs clean without it: the hook runs
    # inside `out`'s backward, which goes on through `hidden`'s graph after it
    source = textwrap.dedent(NESTED_BACKWARD.replace("AUX", aux))
    assert _torch_raises_at(source) is None
    dropped = _torch_raises_at(source.replace("aux.backward(retain_graph=True)", "aux.backward()"))
    assert (dropped is not None) is needed
    assert _infos(source, "GL202") == ([] if needed else [14])
