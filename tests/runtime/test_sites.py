"""The site recorder: graph nodes carry the user's line that made them, in-place changes the line
that made them, nothing made before it started is stamped, and it never pops a mode not its own."""

from __future__ import annotations

import inspect

import torch
from torch.overrides import TorchFunctionMode

from graphlife.runtime.sites import SiteRecorder, node_site


def _line_of(function: object, marker: str) -> int:
    """The line of ``function``'s source that carries the comment ``marker``."""
    source, start = inspect.getsourcelines(function)  # type: ignore[arg-type]
    return start + next(i for i, text in enumerate(source) if marker in text)


def test_nodes_and_inplace_changes_carry_the_users_line() -> None:
    x = torch.randn(3, requires_grad=True)
    before = torch.tanh(x)  # made before the recorder started: never stamped
    recorder = SiteRecorder(torch)
    recorder.start()
    try:
        y = torch.sigmoid(x) * 2  # built here
        z = torch.randn(3)
        z.add_(1)  # changed here
    finally:
        assert recorder.stop()
    this = test_nodes_and_inplace_changes_carry_the_users_line
    built = _line_of(this, "# built here")
    assert node_site(y.grad_fn).line == built  # MulBackward0
    assert node_site(y.grad_fn.next_functions[0][0]).line == built  # SigmoidBackward0, made by the same line
    assert node_site(y.grad_fn).path == __file__ and node_site(y.grad_fn).function.startswith("test_nodes")
    assert node_site(before.grad_fn) is None
    assert recorder.inplace_site(z).line == _line_of(this, "# changed here")
    z.mul_(3)  # changed again with the recorder off: the recorded change is no longer the last one
    assert recorder.inplace_site(z) is None


def test_a_mode_the_program_entered_above_the_recorder_is_never_popped() -> None:
    recorder = SiteRecorder(torch)
    recorder.start()
    with TorchFunctionMode():
        assert recorder.stop() is False  # popping now would pop the program's mode
        assert recorder.on
    assert recorder.stop() is True
    assert torch._C._len_torch_function_stack() == 0
