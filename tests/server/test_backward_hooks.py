"""Tensor hooks and full backward hooks run inside the backward that reaches them.

Each case is a program torch decides: a hook that certainly runs hands the code a
gradient without a graph (a backward through it raises: GL104), one that may run or
not (registered or removed on one path, on a tensor the backward may not reach, run
by code the engine cannot follow) is never the basis of an error, and one that
cannot run (registered after the module call, on a tensor outside the graph) leaves
what it would write alone.
"""

from __future__ import annotations

import textwrap

from graphlife.checker import check_source


def _errors(source: str) -> list[tuple[str, int]]:
    findings = check_source(textwrap.dedent(source)).findings
    return [(f.code, f.span.line) for f in findings if f.severity.value == "error"]


TENSOR_HOOK = """
import sys
import torch

w = torch.randn(3, requires_grad=True)
seen = {"g": w * 3}


def grab(grad):
    seen["g"] = grad


REGISTER
(w * 2).sum().backward()
seen["g"].sum().backward()
"""


def test_a_tensor_hook_that_certainly_runs_hands_over_a_gradient_without_a_graph() -> None:
    assert _errors(TENSOR_HOOK.replace("REGISTER", "w.register_hook(grab)")) == [("GL104", 15)]


def test_a_tensor_hook_registered_on_one_path_may_not_run() -> None:
    source = TENSOR_HOOK.replace("REGISTER", "if len(sys.argv) > 1:\n    w.register_hook(grab)")
    assert _errors(source) == []


def test_a_tensor_hook_removed_on_one_path_may_not_run() -> None:
    source = TENSOR_HOOK.replace("REGISTER", "handle = w.register_hook(grab)\nif len(sys.argv) > 1:\n"
                                             "    handle.remove()")
    assert _errors(source) == []
    removed = TENSOR_HOOK.replace("REGISTER", "handle = w.register_hook(grab)\nhandle.remove()")
    assert _errors(removed) == []


def test_a_tensor_hook_on_a_tensor_outside_the_graph_does_not_run() -> None:
    source = TENSOR_HOOK.replace("REGISTER", "v = torch.randn(3, requires_grad=True)\nv.register_hook(grab)")
    assert _errors(source) == []


def test_a_hook_computes_without_gradients_unless_the_backward_creates_a_graph() -> None:
    times_w = TENSOR_HOOK.replace("REGISTER", "w.register_hook(grab)")
    times_w = times_w.replace('seen["g"] = grad', 'seen["g"] = grad * w')
    assert _errors(times_w) == [("GL104", 15)]
    created = times_w.replace("(w * 2).sum().backward()", "(w * 2).sum().backward(create_graph=True)")
    assert _errors(created) == []


def test_under_create_graph_the_hooked_gradient_has_a_graph() -> None:
    source = TENSOR_HOOK.replace("REGISTER", "w.register_hook(grab)").replace(
        "(w * 2).sum().backward()", "(w * w).sum().backward(create_graph=True)")
    assert _errors(source) == []


MODULE_HOOK = """
import torch
import torch.nn as nn

layer = nn.Linear(3, 3)
x = torch.randn(2, 3, requires_grad=True)
seen = {"g": x * 3}


def grab(module, grad_input, grad_output):
    seen["g"] = grad_output[0]


BEFORE
out = layer(x)
AFTER
out.sum().backward()
seen["g"].sum().backward()
"""


def test_a_full_backward_hook_gets_the_gradient_of_the_hooked_call() -> None:
    source = MODULE_HOOK.replace("BEFORE", "layer.register_full_backward_hook(grab)").replace("AFTER", "")
    assert _errors(source) == [("GL104", 18)]


def test_a_partial_of_a_function_is_a_hook_the_engine_follows() -> None:
    source = MODULE_HOOK.replace("BEFORE", "layer.register_full_backward_hook(functools.partial(grab, 'g'))")
    source = source.replace("AFTER", "").replace("import torch\n", "import functools\nimport torch\n", 1)
    source = source.replace("def grab(module, grad_input, grad_output):\n    seen[\"g\"]",
                            "def grab(key, module, grad_input, grad_output):\n    seen[key]")
    assert _errors(source) == [("GL104", 19)]


def test_a_full_backward_hook_registered_after_the_call_does_not_run_for_it() -> None:
    source = MODULE_HOOK.replace("BEFORE", "").replace("AFTER", "layer.register_full_backward_hook(grab)")
    assert _errors(source) == []


def test_a_full_backward_hook_removed_after_the_call_still_runs_for_it() -> None:
    source = MODULE_HOOK.replace("BEFORE", "handle = layer.register_full_backward_hook(grab)").replace(
        "AFTER", "handle.remove()")
    assert _errors(source) == [("GL104", 18)]


def test_a_backward_pre_hook_gets_the_gradient_of_the_outputs() -> None:
    source = MODULE_HOOK.replace("BEFORE", "layer.register_full_backward_pre_hook(pre)").replace("AFTER", "")
    source = source.replace("def grab(module, grad_input, grad_output):",
                            "def pre(module, grad_output):")
    assert _errors(source) == [("GL104", 18)]


UNSEEN_BACKWARD = """
import torch
import torch.nn as nn
import trainerlib

layer = nn.Linear(3, 3)
w = torch.randn(3, 3, requires_grad=True)
seen = {"g": torch.zeros(3)}


def grab(module, grad_input, grad_output):
    seen["g"] = grad_output[0] @ w


layer.register_full_backward_hook(grab)
RUN
seen["g"].sum().backward()
"""


def test_code_the_engine_cannot_follow_may_run_the_followed_hooks() -> None:
    # a `fit` that runs `layer(x).sum().backward(create_graph=True)`: the hook keeps a graph, torch runs fine
    assert _errors(UNSEEN_BACKWARD.replace("RUN", "trainerlib.fit(layer)")) == []
    # nothing runs the hook: the dictionary still holds the zeros, and torch raises
    assert _errors(UNSEEN_BACKWARD.replace("RUN", "")) == [("GL104", 17)]


NUMPY_IN_HOOK = """
import torch

w = torch.randn(3, 3, requires_grad=True)
x = torch.randn(2, 3, requires_grad=True)
seen = []


def keep(grad):
    seen.append(grad.numpy())


x.register_hook(keep)
(OPERAND).sum().backward(create_graph=True)
"""


def test_under_create_graph_a_gradient_through_a_weight_has_a_graph() -> None:
    # the gradient toward `x` of `x @ w` is `g @ w.T`: it requires grad, and `.numpy()` raises
    assert _errors(NUMPY_IN_HOOK.replace("OPERAND", "x @ w")) == [("GL109", 10)]


def test_under_create_graph_a_constant_gradient_has_no_graph() -> None:
    # the gradient toward `x` of `x * 2` is a constant: torch hands over a tensor without a graph
    assert _errors(NUMPY_IN_HOOK.replace("OPERAND", "x * 2")) == []


HOOK_RUNS_A_BACKWARD = """
import torch

w = torch.randn(3, requires_grad=True)
penalties = []


def penalize(grad):
    penalty = (w * grad).pow(2).sum()
    penalty.backward(retain_graph=True)
    penalties.append(penalty.item())


w.register_hook(penalize)
(w * 2).sum().backward()
"""


def test_a_hook_runs_with_gradients_off_so_its_own_backward_raises() -> None:
    findings = check_source(textwrap.dedent(HOOK_RUNS_A_BACKWARD)).findings
    errors = [f for f in findings if f.severity.value == "error"]
    assert [(f.code, f.span.line) for f in errors] == [("GL104", 10)]
    assert "inside a backward hook" in errors[0].message


def test_a_hook_the_engine_saw_registered_may_still_run_after_unseen_code_had_the_module() -> None:
    # `trainerlib.prepare(layer)` may have changed the layer's hooks; the hook may still run at
    # the backward through the next call and replace the detached tensor with one that has a
    # graph (torch, with a `prepare` that leaves the hooks: it does, and the last backward runs).
    source = MODULE_HOOK.replace("BEFORE", "layer.register_full_backward_hook(grab)\ntrainerlib.prepare(layer)\n"
                                           'seen["g"] = x.detach()')
    source = source.replace("AFTER", "").replace("import torch\n", "import torch\nimport trainerlib\n", 1)
    source = source.replace('seen["g"] = grad_output[0]', 'seen["g"] = torch.ones(3, requires_grad=True)')
    assert _errors(source) == []
