"""The server's handle on a big document's checker process, without the protocol around it.

What the language server relies on (``graphlife/lsp/checker_process.py``): the
answers are a full check's, the process keeps its caches between versions, and
however the process ends (killed mid-analysis, a cancelled request, a checker
that raises) the next request is answered.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from graphlife.checker import check_source
from graphlife.config import Config
from graphlife.lsp.checker_process import CheckerProcess, CheckerProcessDied
from graphlife.lsp.isolated import TEST_DELAY_VARIABLE

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from generate import generate  # the benchmark's generated training scripts

pytestmark = pytest.mark.asyncio


def _outcome(result) -> tuple:
    return [(f.code, f.span, f.message, f.related) for f in result.findings], result.syntax_errors, result.notes


class _Started:
    """Records the process starts; lets a test wait for the next one."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.event = asyncio.Event()

    def __call__(self, pid: int) -> None:
        self.pids.append(pid)
        self.event.set()


async def test_answers_are_a_full_checks_and_the_process_keeps_its_caches():
    double_backward = "w = torch.randn(3, requires_grad=True)\nl = (w * w).sum()\nl.backward()\nl.backward()\n"
    source = generate(300) + "\n\n" + double_backward
    edited = source.replace("            logits = model(x)\n", "            logits = model(x) + 0\n", 1)
    started = _Started()
    process = CheckerProcess(started)
    try:
        first = await process.check(source, Config(), 10.0)
        assert _outcome(first.result) == _outcome(check_source(source))
        assert [f.code for f in first.result.findings] == ["GL101"]
        second = await process.check(edited, Config(), 10.0)
        assert _outcome(second.result) == _outcome(check_source(edited))
        reused = second.units["replayed"] + second.units["calls_replayed"]
        assert reused > 0, "the second version reuses the first's work"
        assert len(started.pids) == 1
    finally:
        await process.close()


async def test_a_process_killed_mid_analysis_fails_that_check_and_the_next_one_is_answered(monkeypatch):
    monkeypatch.setenv(TEST_DELAY_VARIABLE, "60000")  # the first check would take a minute
    started = _Started()
    process = CheckerProcess(started)
    try:
        running = asyncio.ensure_future(process.check("x = 1\n", Config(), 10.0))
        await started.event.wait()
        process.kill()
        with pytest.raises(CheckerProcessDied) as died:
            await asyncio.wait_for(running, 10)
        assert "SIGKILL" in died.value.describe()
        monkeypatch.setenv(TEST_DELAY_VARIABLE, "0")
        answer = await process.check("x = 1\n", Config(), 10.0)
        assert answer.result.findings == []
        assert len(started.pids) == 2
    finally:
        await process.close()


async def test_a_cancelled_check_kills_the_process_so_no_late_answer_is_misread(monkeypatch):
    monkeypatch.setenv(TEST_DELAY_VARIABLE, "60000")
    started = _Started()
    process = CheckerProcess(started)
    try:
        running = asyncio.ensure_future(process.check("x = 1\n", Config(), 10.0))
        await started.event.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        monkeypatch.setenv(TEST_DELAY_VARIABLE, "0")
        source = "import torch\nw = torch.randn(3, requires_grad=True)\nl = (w * w).sum()\nl.backward()\nl.backward()\n"
        answer = await process.check(source, Config(), 10.0)
        assert [f.code for f in answer.result.findings] == ["GL101"]
        assert len(started.pids) == 2
    finally:
        await process.close()


async def test_a_checker_that_raises_is_reported_and_the_process_keeps_serving():
    started = _Started()
    process = CheckerProcess(started)
    try:
        with pytest.raises(RuntimeError, match="AttributeError"):
            await process.check("x = 1\n", "not a config", 10.0)  # type: ignore[arg-type]
        answer = await process.check("x = 1\n", Config(), 10.0)
        assert answer.result.findings == []
        assert len(started.pids) == 1
    finally:
        await process.close()


async def test_the_process_follows_imports_with_the_open_buffers_winning(tmp_path: Path):
    """A big document's check reads the project too: the disk, and the open buffers the server
    sends; it answers with the files it read and the lines of the other files its findings name."""
    (tmp_path / "layers.py").write_text(
        "import torch\n\n\ndef act(h):\n    y = torch.sigmoid(h)\n    y = y * 2\n    return y\n"
    )
    train = tmp_path / "train.py"
    source = (
        "import torch\n\nfrom layers import act\n\n"
        "w = torch.randn(3, requires_grad=True)\nloss = act(w).sum()\nloss.backward()\n"
    )
    train.write_text(source)
    buggy = (tmp_path / "layers.py").read_text().replace("    y = y * 2\n", "    y.mul_(2)\n")
    process = CheckerProcess()
    try:
        on_disk = await process.check(source, Config(), 10.0, path=str(train))
        assert on_disk.result.findings == []
        assert set(on_disk.dependencies) == {str(tmp_path / "layers.py")}
        edited = await process.check(source, Config(), 10.0, path=str(train),
                                     buffers={str(tmp_path / "layers.py"): buggy})
        assert [(f.code, f.span.path, f.span.line) for f in edited.result.findings] == [
            ("GL102", str(tmp_path / "layers.py"), 6)
        ]
        assert edited.other_lines[str(tmp_path / "layers.py")][5] == "    y.mul_(2)"
    finally:
        await process.close()
