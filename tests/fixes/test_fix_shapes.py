"""Fixes chosen by the shape of the graph, each judged by the engine and by torch.

Each case is a small training script as a user writes it. ``graphlife fix`` (safe fixes)
must turn it into the expected code, the engine must report nothing of the code any
more, fixing again must change nothing, and the fixed script must run under torch.
"""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from graphlife.checker import check
from graphlife.fixes import compute_fixes, fix_source

ROOT = Path(__file__).resolve().parents[2]


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _runs(source: str, tmp_path: Path) -> BaseException | None:
    pytest.importorskip("torch")
    script = tmp_path / "script.py"
    script.write_text(source, encoding="utf-8")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(str(script), run_name="__main__")
    except Exception as exc:  # noqa: BLE001 - the exception is the observation
        return exc
    return None


def _fixed(source: str, code: str, tmp_path: Path) -> str:
    """The safe fix of ``source``: the finding is gone, fixing again changes nothing, torch
    raised before and runs it to the end after."""
    assert [f for f in check(source) if f.code == code], f"{code} is not reported before the fix"
    fixed = fix_source(source)
    assert fixed != source
    assert fix_source(fixed) == fixed, "fixing twice is not idempotent"
    assert not [f for f in check(fixed) if f.code == code], [f.message for f in check(fixed)]
    assert _runs(source, tmp_path) is not None, "the original should fail under torch"
    error = _runs(fixed, tmp_path)
    assert error is None, f"{type(error).__name__}: {error}\n{fixed}"
    return fixed


GAN_HEAD = _src('''
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    D = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    g_opt = torch.optim.Adam(G.parameters(), lr=1e-3)
    d_opt = torch.optim.Adam(D.parameters(), lr=1e-3)
    criterion = nn.BCEWithLogitsLoss()
    for step in range(2):
        real = torch.randn(8, 2)
        fake = G(torch.randn(8, 4))
        d_real = D(real)
        d_fake = D(fake)
        d_loss = criterion(d_real, torch.ones(8, 1)) + criterion(d_fake, torch.zeros(8, 1))
        d_opt.zero_grad()
        d_loss.backward()
        d_opt.step()
''')


@pytest.mark.parametrize("generator_step, expected", [
    # the generator's loss in a statement of its own
    ("    g_loss = criterion(d_fake, torch.ones(8, 1))\n    g_opt.zero_grad()\n    g_loss.backward()\n",
     "    g_loss = criterion(D(fake), torch.ones(8, 1))\n"),
    # the generator's loss in the statement of its backward
    ("    g_opt.zero_grad()\n    criterion(d_fake, torch.ones(8, 1)).backward()\n",
     "    criterion(D(fake), torch.ones(8, 1)).backward()\n"),
], ids=["loss-in-another-statement", "loss-in-the-same-statement"])
def test_gan_generator_reusing_the_discriminator_output(generator_step, expected, tmp_path):
    """``d_fake = D(fake)`` serves both losses: the discriminator gets ``fake.detach()`` and the
    generator a fresh ``D(fake)``, never ``d_fake.detach()`` (the discriminator would stop
    learning from fakes) nor ``retain_graph=True`` (``d_opt.step()`` changes the saved weights)."""
    source = GAN_HEAD + generator_step + "    g_opt.step()\n"
    fixed = _fixed(source, "GL101", tmp_path)
    assert "    d_fake = D(fake.detach())\n" in fixed
    assert expected in fixed
    assert "d_fake.detach()" not in fixed and "retain_graph" not in fixed
    assert not [f for f in check(fixed) if f.severity.value == "error"]


def test_gan_discriminator_calling_d_inside_its_loss_statement(tmp_path):
    """``D(fake)`` inside the discriminator's loss and a fresh ``D(fake)`` for the generator: only the
    discriminator's input is detached."""
    source = GAN_HEAD.replace("    d_fake = D(fake)\n", "").replace("criterion(d_fake,", "criterion(D(fake),")
    source += "    g_loss = criterion(D(fake), torch.ones(8, 1))\n    g_opt.zero_grad()\n    g_loss.backward()\n"
    source += "    g_opt.step()\n"
    fixed = _fixed(source, "GL101", tmp_path)
    assert "criterion(D(fake.detach()), torch.zeros(8, 1))" in fixed
    assert "    g_loss = criterion(D(fake), torch.ones(8, 1))\n" in fixed


LSTM = _src('''
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    cell = nn.LSTMCell(4, 8)
    opt = torch.optim.SGD(cell.parameters(), lr=0.1)
    h = torch.zeros(2, 8)
    c = torch.zeros(2, 8)
    for step in range(3):
    {top}    x = torch.randn(2, 4)
        h, c = cell(x, (h, c))
        loss = h.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
''')


def test_two_carried_names_are_both_detached_once(tmp_path):
    fixed = _fixed(LSTM.format(top=""), "GL101", tmp_path)
    assert "for step in range(3):\n    c = c.detach()\n    h = h.detach()\n    x = torch.randn(2, 4)\n" in fixed


def test_a_name_detached_at_the_top_is_not_reported_and_not_detached_again(tmp_path):
    source = LSTM.format(top="    h = h.detach()\n")
    (finding,) = [f for f in check(source) if f.code == "GL101"]
    assert "by `c`;" in finding.message and "`h`" not in finding.message
    fixed = _fixed(source, "GL101", tmp_path)
    assert "for step in range(3):\n    h = h.detach()\n    c = c.detach()\n    x = torch.randn(2, 4)\n" in fixed
    assert fixed.count("h.detach()") == 1


def test_three_carried_names_a_gru_state_and_its_running_averages(tmp_path):
    source = _src('''
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        cell = nn.GRUCell(4, 8)
        opt = torch.optim.SGD(cell.parameters(), lr=0.1)
        h = torch.zeros(2, 8)
        avg = torch.zeros(2, 8)
        total = torch.zeros(2, 8)
        for step in range(3):
            x = torch.randn(2, 4)  # the batch
            h = cell(x, h)
            avg = 0.9 * avg + 0.1 * h
            total = total + avg
            loss = total.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        ''')
    fixed = _fixed(source, "GL101", tmp_path)
    top = ("    avg = avg.detach()\n    h = h.detach()\n    total = total.detach()\n"
           "    x = torch.randn(2, 4)  # the batch\n")
    assert top in fixed
    assert fixed.count(".detach()") == 3


def test_no_grad_moves_from_a_shared_helper_to_its_evaluation_call(tmp_path):
    source = _src('''
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        torch.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


        @torch.no_grad()
        def predict(net, x):
            return net(x)


        for step in range(2):
            x, y = torch.randn(4, 3), torch.randn(4, 1)
            out = predict(model, x)
            loss = F.mse_loss(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()

        val = predict(model, torch.randn(4, 3))
        assert not val.requires_grad
        ''')
    fixed = _fixed(source, "GL104", tmp_path)
    assert "@torch.no_grad()" not in fixed
    assert "with torch.no_grad():\n    val = predict(model, torch.randn(4, 3))\n" in fixed
    assert "    out = predict(model, x)\n" in fixed


def test_item_values_are_stacked_instead(tmp_path):
    source = _src('''
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        policy = nn.Linear(3, 1)
        opt = torch.optim.SGD(policy.parameters(), lr=0.1)
        states = [torch.randn(3) for _ in range(4)]
        values = torch.tensor([policy(s).item() for s in states])
        loss = values.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        ''')
    fixed = _fixed(source, "GL104", tmp_path)
    assert "values = torch.stack([policy(s).reshape(()) for s in states])\n" in fixed


def test_retain_graph_is_offered_as_unsafe_and_applied_only_when_asked(tmp_path):
    source = _src('''
        import torch

        w = torch.randn(3, requires_grad=True)
        loss = (w * w).sum()
        loss.backward()
        print(w.grad)
        loss.backward()
        ''')
    (finding,) = check(source)
    (fix,) = compute_fixes(finding, source)
    assert (fix.kind, fix.safe, fix.preferred) == ("retain_graph", False, False)
    assert fix_source(source) == source
    unsafe = fix_source(source, unsafe=True)
    assert "loss.backward(retain_graph=True)\nprint(w.grad)" in unsafe
    assert _runs(unsafe, tmp_path) is None


def _notebook(cells: list[str]) -> str:
    return json.dumps({
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]}] + [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": text.splitlines(keepends=True)} for text in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }, indent=1) + "\n"


NOTEBOOK_CELLS = [
    "import torch\nimport torch.nn as nn\n\ntorch.manual_seed(0)\ncell = nn.LSTMCell(4, 8)\n"
    "opt = torch.optim.SGD(cell.parameters(), lr=0.1)\nh = torch.zeros(2, 8)\nc = torch.zeros(2, 8)",
    "%matplotlib inline\nfor step in range(3):\n    x = torch.randn(2, 4)\n    h, c = cell(x, (h, c))\n"
    "    loss = h.pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()",
]


def _graphlife(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphlife", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def test_notebook_diff_and_fix_write_into_the_cell(tmp_path):
    path = tmp_path / "train.ipynb"
    original = _notebook(NOTEBOOK_CELLS)
    path.write_text(original, encoding="utf-8")

    diff = _graphlife("fix", "--diff", str(path))
    assert '+    "    c = c.detach()\\n",\n+    "    h = h.detach()\\n",\n' in diff.stdout, diff.stdout + diff.stderr
    assert path.read_text(encoding="utf-8") == original, "--diff must not write"

    _graphlife("fix", str(path))
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code[0] == NOTEBOOK_CELLS[0]
    assert code[1] == NOTEBOOK_CELLS[1].replace(
        "range(3):\n", "range(3):\n    c = c.detach()\n    h = h.detach()\n")
    assert notebook["cells"][0]["source"] == ["# Training\n"]
    again = _graphlife("check", str(path))
    assert "GL101" not in again.stdout, again.stdout
    pytest.importorskip("torch")
    script = "\n".join(text.replace("%matplotlib inline\n", "") for text in code) + "\n"
    assert _runs(script, tmp_path) is None


def test_the_command_line_applies_unsafe_fixes_only_when_asked(tmp_path):
    path = tmp_path / "twice.py"
    source = "import torch\n\nw = torch.randn(3, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\n" \
             "print(w.grad)\nloss.backward()\n"
    path.write_text(source, encoding="utf-8")
    assert _graphlife("fix", "--diff", str(path)).stdout == ""
    diff = _graphlife("fix", "--diff", "--unsafe-fixes", str(path)).stdout
    assert "+loss.backward(retain_graph=True)\n" in diff
    checked = _graphlife("check", "--format", "json", str(path)).stdout
    (finding,) = json.loads(checked)["findings"]
    assert finding["fixes"] == [{"kind": "retain_graph", "applicability": "unsafe",
                                 "title": "Keep the graph with `retain_graph=True` (keeps its memory alive)"}]
    _graphlife("check", "--fix", "--unsafe-fixes", str(path))
    assert "loss.backward(retain_graph=True)\nprint(w.grad)" in path.read_text(encoding="utf-8")


def _join(texts: list[str]) -> tuple[str, list[int]]:
    """The editor's and the command line's join of a notebook's code cells."""
    from graphlife.lsp.notebooks import CellText, join_cells

    source, cells = join_cells([CellText(uri=str(n), version=None, number=n, text=t) for n, t in enumerate(texts, 1)])
    return source, [cell.line_offset for cell in cells]


def test_notebook_cells_keep_their_own_text_and_ending():
    from graphlife.fixes.notebooks import fix_cells

    cells = ["import torch\nw = torch.randn(3, requires_grad=True)\nh = w * 2",
             "h.sum().backward()\nprint(h.grad.sum())"]
    fixed = fix_cells(cells, _join)
    assert fixed[0] == cells[0], "a cell without a final newline keeps it that way"
    assert fixed[1] == "h.retain_grad()\n" + cells[1]
    # a line the join blanks (an IPython magic) is not the cell's code: nothing is fixed there
    magic = ["import torch\nw = torch.randn(3, requires_grad=True)\nh = w * 2", "%time h.sum().backward()\nh.grad"]
    assert fix_cells(magic, _join) == magic


def test_detaching_another_input_at_the_top_is_not_detaching_the_state(tmp_path):
    """``h = cell(x.detach(), h)`` still carries ``h``'s graph: it is reported and detached."""
    source = _src('''
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        cell = nn.GRUCell(4, 8)
        opt = torch.optim.SGD(cell.parameters(), lr=0.1)
        h = torch.zeros(2, 8)
        x = torch.randn(2, 4)
        for step in range(3):
            h = cell(x.detach(), h)
            loss = h.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        ''')
    fixed = _fixed(source, "GL101", tmp_path)
    assert "for step in range(3):\n    h = h.detach()\n    h = cell(x.detach(), h)\n" in fixed
