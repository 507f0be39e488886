"""`%graphlife --language zh-CN` in a real IPython shell: the report in Chinese, lines named by cell."""

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


def test_the_magic_reports_in_chinese(shell) -> None:
    run(shell, "import torch\nw = torch.randn(3, requires_grad=True)")
    run(shell, "loss = (w * w).sum()\nloss.backward()")
    out = run(shell, "%graphlife --language zh-CN")
    assert "graphlife：2 个单元格中没有发现计算图生命周期问题。" in out, out
    run(shell, "loss.backward()")  # In [4] (the magic was In [3]): torch raises, the checker agrees
    out = run(shell, "%graphlife --language zh-CN")
    assert "In [4] 第 1 行: GL101 error: `loss` 要反向传播经过在第 2 个单元格第 1 行（`w * w`）构建的计算图" in out, out
    assert "graphlife：3 个单元格中发现 1 个问题。" in out


def test_an_unknown_language_is_said_and_nothing_else(shell) -> None:
    out = run(shell, "%graphlife --language fr")
    assert "graphlife: unknown language 'fr'; use one of auto, en, zh-CN" in out
