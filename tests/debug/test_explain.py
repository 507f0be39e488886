"""`explain()` in a terminal/pdb/Jupyter: the same facts as the view, as text."""

from __future__ import annotations

import torch

from graphlife.debug import explain
from graphlife.debug.render import render_text


def test_explain_a_tensor_uses_the_callers_names(capsys):
    x = torch.randn(3, requires_grad=True)
    probs = torch.sigmoid(x)
    probs.clamp_(min=0.1)
    loss = probs.log().sum()
    other = torch.ones(2)  # not asked about: not shown
    explain(loss)
    out = capsys.readouterr().out
    assert "✖ loss: float32[] cpu  SumBackward0" in out
    assert "modified SigmoidBackward0.result [3] = probs (saved at v0, now v1)" in out
    assert "backward() would raise GL102 at SigmoidBackward0" in out
    assert "probs" in out and "other" not in out
    assert other is not None


def test_explain_without_arguments_reports_the_frame_and_containers(capsys):
    lin = torch.nn.Linear(4, 1)
    losses = [lin(torch.randn(2, 4)).pow(2).mean() for _ in range(3)]
    explain()
    out = capsys.readouterr().out
    assert "⚠ losses (list): 3 tensors, 3 graphs" in out
    assert "`losses` keeps 3 graphs alive" in out
    assert len(losses) == 3


def test_render_edge_cases():
    assert "has not imported torch" in render_text({"torch": None})
    assert "probe failed: boom" in render_text({"error": "boom"})
    text = render_text({"torch": "2.13.0", "tensors": [], "containers": [], "truncated": True,
                        "limits_hit": ["time"],
                        "exception": {"message": "x", "code": None, "name": None, "why": None, "fix": None,
                                      "blame": None}})
    assert "not an autograd error graphlife knows" in text and "(stopped early: time limit)" in text


def test_explain_in_torchs_frame_after_a_crash_explains_the_users_frame():
    """pdb after a crash in backward stops in torch's `_engine_run_backward`, whose locals are
    torch's (`args[0][0]` is a gradient of ones, not a tensor of the user's): explain() moves to
    the user's frame that called into torch and says so."""
    import io
    import pdb

    def train():
        weights = torch.randn(3, requires_grad=True)
        loss = (weights * 2).sum()
        loss.backward()
        loss.backward()

    try:
        train()
    except RuntimeError as exc:
        tb = exc.__traceback__
    commands = io.StringIO("from graphlife.debug import explain\nexplain()\nq\n")
    shown = io.StringIO()  # pdb prints what the commands print to its own stdout
    debugger = pdb.Pdb(stdin=commands, stdout=shown)
    debugger.use_rawinput = False
    debugger.reset()
    debugger.interaction(None, tb)
    out = shown.getvalue()
    last = tb
    while last.tb_next is not None:
        last = last.tb_next
    assert last.tb_frame.f_globals["__name__"].startswith("torch.")  # where pdb stopped
    assert "(explaining train at " in out and "the frame that called into torch" in out
    assert "✖ loss: float32[] cpu  SumBackward0" in out
    assert "args[0]" not in out and "t_outputs" not in out
