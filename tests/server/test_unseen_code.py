"""Code that runs without being called by name: what the engine concludes around it.

Each case pairs a program where code the engine does not run by name (a hook, a
callback, a library, another method) may change a value, with its twin where
nothing can: the first must get no error about that value, the second keeps the
error torch raises. A fact that unseen code may have changed is never the basis of
an error; one that nothing could change still is.
"""

from __future__ import annotations

import textwrap

import pytest

from graphlife.checker import check_source


def _errors(source: str) -> list[tuple[str, int]]:
    findings = check_source(textwrap.dedent(source)).findings
    return [(f.code, f.span.line) for f in findings if f.severity.value == "error"]


def _codes(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.span.line) for f in check_source(textwrap.dedent(source)).findings]


TENSOR_HOOK = """
import torch

w = torch.randn(3, requires_grad=True)
seen = {"g": torch.zeros(3)}


def grab(grad):
    seen["g"] = grad * w


w.register_hook(grab)
(w * 2).sum().backward(create_graph=True)
seen["g"].sum().backward()
"""


def test_a_tensor_hook_may_write_what_it_reaches_at_the_backward() -> None:
    assert _errors(TENSOR_HOOK) == []
    # without the hook the dictionary still holds the zeros: torch raises there
    assert _errors(TENSOR_HOOK.replace("w.register_hook(grab)\n", "")) == [("GL104", 13)]


LIBRARY_FILLS = """
import torch
import resultlib

store = {"loss": torch.zeros(())}
resultlib.fill(store)
store["loss"].backward()
"""


def test_a_library_call_may_write_the_container_it_is_given() -> None:
    assert _errors(LIBRARY_FILLS) == []
    assert _errors(LIBRARY_FILLS.replace("resultlib.fill(store)", "resultlib.fill()")) == [("GL104", 7)]


INHERITED_METHOD = """
import torch
from somelib import Base


class Task(Base):
    def __init__(self):
        self.out = torch.zeros(2)

    def run(self):
        self.populate()
        self.out.sum().backward()


Task().run()
"""


def test_a_method_the_engine_cannot_find_may_write_its_object() -> None:
    assert _errors(INHERITED_METHOD) == []
    assert _errors(INHERITED_METHOD.replace("        self.populate()\n", "")) == [("GL104", 11)]


REMOVED_HOOK = """
import torch
import torch.nn as nn

net = nn.Linear(4, 2)
feature = {"out": torch.zeros(2)}


def keep(module, inputs, output):
    feature["out"] = output


handle = net.register_forward_hook(keep)
handle.remove()
net(torch.randn(3, 4))
feature["out"].sum().backward()
"""


def test_a_removed_hook_does_not_run() -> None:
    assert _errors(REMOVED_HOOK) == [("GL104", 16)]
    assert _errors(REMOVED_HOOK.replace("handle.remove()\n", "")) == []


PRE_HOOK = """
import torch
import torch.nn as nn

net = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
for p in net.parameters():
    p.requires_grad_(False)
x = torch.randn(3, 4, requires_grad=True)
net.register_forward_pre_hook(lambda module, args: (args[0].detach(),))
net(x).sum().backward()
"""


def test_a_forward_pre_hook_gives_the_forward_its_arguments() -> None:
    assert _errors(PRE_HOOK) == [("GL104", 10)]
    assert _errors(PRE_HOOK.replace("(args[0].detach(),)", "None")) == []


CALLABLE_OBJECT = """
import torch
import torch.nn as nn


class WeightedMSE:
    def __init__(self, weight):
        self.weight = weight

    def __call__(self, pred, target):
        return (self.weight * (pred - target) ** 2).mean()


model = nn.Linear(3, 1)
criterion = WeightedMSE(2.0)
x, y = torch.randn(5, 3), torch.randn(5, 1)
loss = criterion(model(x), y)
loss.backward()
loss.backward()
"""


def test_an_instance_with_call_runs_its_call() -> None:
    assert ("GL101", 19) in _errors(CALLABLE_OBJECT)


ESCAPED_HOOK = """
import torch
import torch.nn as nn

net = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
feats = {"x": torch.zeros(1)}


def hook(module, inputs, output):
    feats["x"] = output


getattr(net, LAYER).register_forward_hook(hook)
feats["x"] = torch.zeros(1)
net(torch.randn(2, 4))
feats["x"].sum().backward()
"""


@pytest.mark.parametrize("layer", ["'0'", "'1'"])
def test_a_hook_registered_where_the_engine_cannot_see_may_run_at_any_module_call(layer: str) -> None:
    source = ESCAPED_HOOK.replace("LAYER", layer)
    assert _errors(source) == []
    # the same program without the registration: the zeros reach the backward
    assert _errors(source.replace("getattr(net, " + layer + ").register_forward_hook(hook)\n", "")) == [
        ("GL104", 15)
    ]


OTHER_METHOD = """
import torch


class Runner:
    def __init__(self):
        self.out = torch.zeros(2)
        self.w = torch.ones(2, requires_grad=True)

    def set(self, x):
        self.out = x * self.w

    def run(self):
        self.out.sum().backward()
"""


def test_a_method_analyzed_alone_knows_other_methods_may_have_assigned_an_attribute() -> None:
    assert _errors(OTHER_METHOD) == []
    # nothing but __init__ assigns it: every call of run() raises
    assert _errors(OTHER_METHOD.replace("        self.out = x * self.w\n", "        return x * self.w\n")) == [
        ("GL104", 14)
    ]


HOOK_APPENDS = """
import torch
import torch.nn as nn

STEPS = 3
activations = []
net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
net[1].register_forward_hook(lambda module, inputs, output: activations.append(OUT))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(STEPS):
    loss = net(torch.randn(2, 4)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_lambda_hook_that_keeps_live_activations_is_a_leak() -> None:
    assert ("GL201", 8) in _codes(HOOK_APPENDS.replace("OUT", "output"))
    assert [c for c in _codes(HOOK_APPENDS.replace("OUT", "output.detach()")) if c[0] == "GL201"] == []


PARTIAL = """
import functools
import torch
import torch.nn as nn


def step(model, opt, x, y, loss_fn):
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    loss.backward()
    opt.step()


model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_step = functools.partial(step, model, opt, loss_fn=nn.functional.mse_loss)
train_step(torch.randn(4, 3), torch.randn(4, 1))
"""


def test_a_partial_call_runs_its_function_with_its_arguments() -> None:
    assert ("GL101", 11) in _errors(PARTIAL)


GETATTR = """
import torch
import torch.nn as nn



class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)


net = Net()
name = "fc"
out = getattr(net, NAME)(torch.randn(2, 3)).sum()
out.backward()
out.backward()
"""


def test_getattr_with_a_known_name_reads_that_attribute() -> None:
    assert _errors(GETATTR.replace("NAME", "name")) == [("GL101", 17)]
    assert _errors(GETATTR.replace("NAME", "input()")) == []  # a name known only at run time


GLOBAL_FLAG = """
import torch
import torch.nn as nn

USE_GRAD = False
model = nn.Linear(3, 1)


def enable_training():
    global USE_GRAD
    USE_GRAD = True


def run(x):
    with torch.set_grad_enabled(USE_GRAD):
        loss = model(x).sum()
    loss.backward()
"""
NO_REBINDING = GLOBAL_FLAG.replace("    global USE_GRAD\n    USE_GRAD = True\n", "    return 1\n")


def test_a_module_name_a_function_rebinds_is_not_known_to_functions_analyzed_alone() -> None:
    assert _errors(GLOBAL_FLAG) == []
    assert _errors(NO_REBINDING) == [("GL104", 16)]  # nothing can turn gradients on: run() always raises


GLOBAL_REBOUND_BY_A_CALL = """
import torch

w = torch.randn(3, requires_grad=True)
loss = None


def compute():
    if w is not None:
        global loss
        loss = (w * 2).sum()


compute()
loss.backward()
loss.backward()
"""


def test_a_module_name_an_inlined_call_rebinds_is_what_it_assigned() -> None:
    """After ``compute()`` the module's ``loss`` is the graph it made (its ``global`` statement
    stands in a branch): the second backward through it raises."""
    assert _errors(GLOBAL_REBOUND_BY_A_CALL) == [("GL101", 16)]
    assert _errors(GLOBAL_REBOUND_BY_A_CALL.replace("        global loss\n", "")) == []


OUTSIDE_WRITE = OTHER_METHOD + """

def outside(runner, x):
    runner.out = x
"""


@pytest.mark.parametrize("versions", [
    [GLOBAL_FLAG, NO_REBINDING, GLOBAL_FLAG, NO_REBINDING],
    [OUTSIDE_WRITE,
     OUTSIDE_WRITE.replace("        self.out = x * self.w\n", "        return x * self.w\n"),
     OUTSIDE_WRITE.replace("        self.out = x * self.w\n", "        return x * self.w\n")
     .replace("    runner.out = x\n", "    return x\n"),
     OUTSIDE_WRITE],
], ids=["global", "attribute"])
def test_the_language_server_sees_a_write_added_or_removed_anywhere(versions: list[str]) -> None:
    """What a function analyzed alone starts from depends on writes anywhere in the file: the
    incremental checker must run it again when one appears or goes."""
    from graphlife.incremental import IncrementalChecker

    checker = IncrementalChecker()
    for source in versions:
        text = textwrap.dedent(source)
        incremental = [(f.code, f.span.line) for f in checker.check(text).findings]
        assert incremental == [(f.code, f.span.line) for f in check_source(text).findings]


ESCAPED_HOOK_AGAIN = """
import torch
import somelib


class Holder:
    pass


h = Holder()


def hook(*args):
    h.x = torch.randn(2, requires_grad=True) * 2


somelib.register(hook)
h.x = torch.zeros(2)
somelib.step()
somelib.step()
h.x = torch.zeros(2)
{between}
h.x.sum().backward()
"""


@pytest.mark.parametrize(("between", "errors"), [("somelib.step()", []), ("pass", [("GL104", 23)])])
def test_an_escaped_hook_may_run_again_after_its_place_is_assigned_again(between: str, errors: list) -> None:
    """The unseen calls before changed nothing the second time (the engine skips such repeats):
    the assignment after them is a change, and the hook may overwrite it at the next one."""
    assert _errors(ESCAPED_HOOK_AGAIN.format(between=between)) == errors


def test_unseen_calls_that_change_nothing_do_not_run_the_escaped_hooks_again(monkeypatch) -> None:
    """Fifty library calls with a hook that writes a module name: its place is weakened once,
    not at every call (the cost of a training loop full of library calls)."""
    from graphlife.analysis.engine.callbacks import CallbackParts

    runs = 0
    original = CallbackParts.weaken_effects

    def counting(self, func, state, reads=None):
        nonlocal runs
        runs += 1
        return original(self, func, state, reads)

    monkeypatch.setattr(CallbackParts, "weaken_effects", counting)
    calls = "\n".join("somelib.step()" for _ in range(50))
    source = ESCAPED_HOOK_AGAIN.format(between=calls)
    assert _errors(source) == []
    assert runs <= 6, runs
