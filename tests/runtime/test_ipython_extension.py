"""`%load_ext graphlife` in a real IPython shell: autograd errors explained under the cell's
traceback, `%graphlife` checking the cells run so far."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ipython = InteractiveShell.instance()
    ipython.reset(new_session=True)
    ipython.colors = "nocolor"
    ipython.run_line_magic("load_ext", "graphlife")
    yield ipython
    ipython.run_line_magic("unload_ext", "graphlife")
    ipython.reset(new_session=True)


def run(shell: InteractiveShell, cell: str) -> str:
    with capture_output() as captured:
        shell.run_cell(cell, store_history=True)
    return captured.stdout + captured.stderr


def test_an_autograd_error_is_explained_under_its_traceback(shell) -> None:
    run(shell, "import torch\nw = torch.randn(3, requires_grad=True)")
    out = run(shell, "loss = (w * 2).sum()\nloss.backward()\nloss.backward()")
    assert "Traceback (most recent call last)" in out
    explanation = out[out.index("graphlife: GL101 backward-through-freed-graph"):]
    assert "backward was called at " in explanation and ":3 in <module>\n      loss.backward()" in explanation
    assert "✖ loss: float32[] cpu  SumBackward0" in explanation
    assert "args[0]" not in explanation
    # The cells run so far are checked together: `w` comes from the first one.
    assert "static finding at In [2], line 3: GL101 backward-through-freed-graph (the same rule)" in explanation
    assert "graphlife run --sites" not in explanation  # not a hint a notebook can follow


def test_other_errors_are_left_as_ipython_shows_them(shell) -> None:
    out = run(shell, "1 / 0")
    assert "ZeroDivisionError" in out and "graphlife" not in out


def test_the_magic_checks_the_cells_run_so_far(shell) -> None:
    run(shell, "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)")
    run(shell, "history = []\nfor _ in range(3):\n    loss = model(torch.randn(4, 2)).pow(2).mean()\n"
               "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n    history.append(loss)")
    out = run(shell, "%graphlife")
    assert "In [2], line 7: GL201" in out
    assert "history.append(loss)" in out
    assert "graphlife: 1 finding in 2 cells." in out


def test_the_magic_on_clean_cells_and_before_any(shell) -> None:
    assert "graphlife: no cell has run yet." in run(shell, "%graphlife")
    run(shell, "import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 3).sum()\ny.backward()")
    assert "graphlife: no graph-lifetime problem found in 1 cells." in run(shell, "%graphlife")


def test_unloading_removes_the_hook_and_the_magic(shell) -> None:
    shell.run_line_magic("unload_ext", "graphlife")
    run(shell, "import torch\nw = torch.randn(3, requires_grad=True)")
    out = run(shell, "loss = (w * 2).sum()\nloss.backward()\nloss.backward()")
    assert "Trying to backward through the graph a second time" in out and "graphlife:" not in out
    assert "UsageError" in run(shell, "%graphlife")
    shell.run_line_magic("load_ext", "graphlife")  # the fixture unloads it again
