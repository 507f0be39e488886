"""The probe on real torch objects: states, predictions checked against torch itself, read-only-ness, bounds."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

PROBE_PATH = Path(__file__).resolve().parents[2] / "server" / "graphlife" / "debug" / "probe.py"
PROBE = runpy.run_path(str(PROBE_PATH))
snapshot = PROBE["snapshot"]


def by_name(snap: dict, name: str) -> dict:
    return next(t for t in snap["tensors"] if t["name"] == name)


def first_sentence(message: str) -> str:
    return message.split(" Hint:")[0].split(". Saved intermediate")[0]


def real_outcome(tensor: torch.Tensor) -> str | None:
    """What torch says when backward really runs (None: it ran)."""
    try:
        tensor.backward()
    except RuntimeError as exc:
        return str(exc)
    return None


def assert_predicted(snap: dict, name: str, tensor: torch.Tensor) -> dict:
    pred = by_name(snap, name)["backward_prediction"]
    real = real_outcome(tensor)
    if real is None:
        assert pred["ok"], pred
    else:
        assert not pred["ok"], (pred, real)
        assert first_sentence(pred["message"]) == first_sentence(real)
    return pred


def test_inplace_after_sigmoid_is_modified_and_blames_the_tensor():
    x = torch.randn(4, 3, requires_grad=True)
    y = torch.sigmoid(x)
    y.relu_()
    loss = y.pow(2).sum()
    snap = snapshot({"x": x, "y": y, "loss": loss})
    graph = by_name(snap, "loss")["graph"]
    modified = [s for s in graph["saved"] if s["state"] == "modified"]
    assert [(s["node"], s["owner"], s["saved_version"], s["version"]) for s in modified] == [
        ("SigmoidBackward0", "y", 0, 1)
    ]
    pred = assert_predicted(snap, "loss", loss)
    assert (pred["code"], pred["reason"], pred["blame"], pred["node"]) == ("GL102", "modified", "y", "SigmoidBackward0")
    assert snap["tensors"][0]["severity"] == "error"


def test_clean_graph_predicts_success_and_backward_still_gives_same_grads():
    torch.manual_seed(0)
    lin = nn.Linear(5, 2)
    x = torch.randn(3, 5)
    loss = torch.tanh(lin(x)).sum()
    expected = torch.autograd.grad(loss, lin.weight, retain_graph=True)[0]
    snap = snapshot({"lin": lin, "x": x, "loss": loss})
    entry = by_name(snap, "loss")
    assert entry["graph"]["states"]["modified"] == entry["graph"]["states"]["freed"] == 0
    assert entry["graph"]["states"]["ok"] >= 2
    assert entry["graph"]["activation_bytes"] > 0
    assert_predicted(snap, "loss", loss)
    assert torch.equal(lin.weight.grad, expected)


def test_same_loss_twice_is_freed_and_consumed():
    w = torch.randn(3, requires_grad=True)
    loss = (w.exp() * w).sum()
    loss.backward()
    snap = snapshot({"w": w, "loss": loss})
    entry = by_name(snap, "loss")
    assert entry["graph"]["states"]["freed"] >= 2 and entry["graph"]["states"]["ok"] == 0
    pred = assert_predicted(snap, "loss", loss)
    assert (pred["code"], pred["reason"], pred["blame"]) == ("GL101", "consumed", "loss")


@pytest.mark.parametrize(
    "build, saved, runs",
    [
        (lambda w: (w + 1).sum(), 0, True),  # additions save nothing: a second backward runs
        (lambda w: (w - w.detach()).sum(), 0, True),
        # torch 2.13 saves the wrapped number of `w * 2` (MulBackward0._saved_other), so this fails
        (lambda w: (w * 2 + 1).sum(), 1, False),
    ],
)
def test_second_backward_depends_on_what_the_graph_saved(build, saved, runs):
    w = torch.randn(3, requires_grad=True)
    loss = build(w)
    loss.backward()
    snap = snapshot({"w": w, "loss": loss})
    assert by_name(snap, "loss")["graph"]["saved_count"] == saved
    assert assert_predicted(snap, "loss", loss)["ok"] is runs


def test_shared_encoder_blames_the_shared_features():
    torch.manual_seed(0)
    enc, a, b = nn.Linear(4, 6), nn.Linear(6, 1), nn.Linear(6, 1)
    feats = torch.tanh(enc(torch.randn(3, 4)))
    loss_a, loss_b = a(feats).sum(), b(feats).pow(2).sum()
    loss_a.backward()
    snap = snapshot({"enc": enc, "feats": feats, "loss_a": loss_a, "loss_b": loss_b})
    pred = assert_predicted(snap, "loss_b", loss_b)
    assert (pred["code"], pred["reason"], pred["blame"]) == ("GL101", "shared", "feats")


def test_carried_lstm_state_is_blamed():
    torch.manual_seed(0)
    lstm, head = nn.LSTM(3, 4), nn.Linear(4, 1)
    hidden = (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))
    for step in range(2):
        out, hidden = lstm(torch.randn(5, 2, 3), hidden)
        loss = head(out).pow(2).mean()
        if step == 0:
            loss.backward()
    snap = snapshot({"lstm": lstm, "head": head, "hidden": hidden, "out": out, "loss": loss})
    pred = assert_predicted(snap, "loss", loss)
    assert (pred["code"], pred["reason"], pred["blame"]) == ("GL101", "carried", "hidden[0]")
    assert "hidden[1]" in pred["blame_all"]


def test_retained_lstm_graph_after_optimizer_step_is_modified_weight():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4)
    opt = torch.optim.SGD(lstm.parameters(), lr=0.1)
    hidden = (torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))
    for step in range(2):
        out, hidden = lstm(torch.randn(2, 1, 3), hidden)
        loss = out.pow(2).mean()
        if step == 0:
            loss.backward(retain_graph=True)
            opt.step()
    snap = snapshot({"lstm": lstm, "opt": opt, "hidden": hidden, "loss": loss})
    pred = assert_predicted(snap, "loss", loss)
    assert pred["code"] == "GL102"
    assert pred["blame"].startswith("lstm.weight_")


def test_no_grad_scalar_predicts_gl104():
    w = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        loss = (w * w).sum()
    snap = snapshot({"w": w, "loss": loss})
    pred = assert_predicted(snap, "loss", loss)
    assert (pred["code"], pred["reason"]) == ("GL104", "no_grad")


def test_custom_function_saved_tensors_freed():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    w = torch.randn(3, requires_grad=True)
    loss = Square.apply(w).sum()
    before = snapshot({"w": w, "loss": loss})
    assert by_name(before, "loss")["graph"]["states"]["ok"] == 1
    loss.backward()
    snap = snapshot({"w": w, "loss": loss})
    assert by_name(snap, "loss")["graph"]["states"]["freed"] == 1
    assert assert_predicted(snap, "loss", loss)["code"] == "GL101"


def test_saved_tensor_hooks_are_never_called():
    calls = {"unpack": 0}

    def pack(t):
        return t

    def unpack(t):
        calls["unpack"] += 1
        return t

    w = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss = torch.sigmoid(w * w).sum()
    snap = snapshot({"w": w, "loss": loss})
    graph = by_name(snap, "loss")["graph"]
    assert graph["states"]["hooked"] >= 2 and graph["states"]["ok"] == 0
    assert by_name(snap, "loss")["backward_prediction"]["reason"] == "hooked"
    assert calls["unpack"] == 0
    loss.backward()
    assert calls["unpack"] > 0


def test_probe_only_reads():
    """No version bump, no new .grad, no warning (not even the non-leaf .grad one), graph intact."""
    torch.manual_seed(0)
    lin = nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    h = torch.sigmoid(lin(x))
    h.retain_grad()
    mid = h * 3
    loss = mid.sum()
    loss.backward(retain_graph=True)
    tensors = {"lin.weight": lin.weight, "x": x, "h": h, "mid": mid, "loss": loss}
    versions = {k: t._version for k, t in tensors.items()}
    grads = {k: (None if not (t.is_leaf or t.retains_grad) else t.grad.clone()) for k, t in tensors.items()}
    ns = {"lin": lin, "x": x, "h": h, "mid": mid, "loss": loss, "items": [h, {"m": mid}]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        snap = snapshot(ns)
    assert caught == []
    assert {k: t._version for k, t in tensors.items()} == versions
    assert mid.grad_fn is not None and lin.weight.grad is not None
    for k, g in grads.items():
        if g is not None:
            assert torch.equal(tensors[k].grad, g)
    assert by_name(snap, "h")["grad"]["norm"] == pytest.approx(float(h.grad.norm()), rel=1e-6)
    assert by_name(snap, "mid")["grad"] is None
    assert sorted(ns) == ["h", "items", "lin", "loss", "mid", "x"]
    loss.backward()  # still works: nothing was freed by the probe


def test_names_inside_containers_and_objects():
    class Trainer:
        def __init__(self):
            self.state = {"h": torch.randn(2, requires_grad=True) * 2}
            self.history = [torch.ones(1, requires_grad=True).sum() * 3 for _ in range(2)]

    snap = snapshot({"self": Trainer()})
    names = {t["name"] for t in snap["tensors"]}
    assert {"self.state['h']", "self.history[0]", "self.history[1]"} <= names
    leak = next(c for c in snap["containers"] if c["name"] == "self.history")
    assert leak["leak"] and leak["graphs"] == 2 and leak["kind"] == "list"


def _leaky_list(n):
    lin = nn.Linear(16, 16)
    return lin, [torch.sigmoid(lin(torch.randn(8, 16))).sum() for _ in range(n)]


def test_container_bytes_grow_with_kept_graphs():
    torch.manual_seed(0)
    lin, small = _leaky_list(3)
    _, big = _leaky_list(6)
    a = next(c for c in snapshot({"lin": lin, "losses": small})["containers"] if c["name"] == "losses")
    b = next(c for c in snapshot({"losses": big})["containers"] if c["name"] == "losses")
    assert a["graphs"] == 3 and b["graphs"] == 6
    assert a["severity"] == "warning" and a["activation_bytes"] > 0
    assert b["activation_bytes"] == 2 * a["activation_bytes"]
    for loss in small:
        loss.backward()
    after = next(c for c in snapshot({"lin": lin, "losses": small})["containers"] if c["name"] == "losses")
    assert after["activation_bytes"] == 0 and after["severity"] == "information" and after["leak"]


class Hostile:
    """Everything a debugger meets: properties that raise, __getattr__, self-reference."""

    def __init__(self):
        self.me = self
        self.t = torch.randn(2, requires_grad=True) * 1

    @property
    def boom(self):
        raise RuntimeError("property ran")

    def __getattr__(self, name):
        raise RuntimeError("__getattr__ ran")


class Disguised:
    """Claims to be a tensor through a __class__ property (mocks do this): user code."""

    calls = 0

    @property
    def __class__(self):
        Disguised.calls += 1
        return torch.Tensor


class Sneaky(list):
    """A list subclass whose item access is user code (it must not run)."""

    def __getitem__(self, index):
        raise AssertionError("__getitem__ ran")

    def __iter__(self):
        raise AssertionError("__iter__ ran")


class SneakyDict(dict):
    def items(self):
        raise AssertionError("items ran")


def test_fails_soft_on_odd_objects():
    cyc = []
    cyc.append(cyc)
    with torch.inference_mode():
        inf = torch.ones(3)
    odd = {
        "hostile": Hostile(),
        "cyc": cyc,
        "sparse": torch.eye(3).to_sparse().requires_grad_(),
        "meta": torch.empty(3, device="meta", requires_grad=True),
        "inf": inf,
        "param": nn.Parameter(torch.ones(2)),
        "deep": [[[[[[torch.ones(1) * 1]]]]]],
        "big": [0] * 100_000,
        "disguised": [Disguised()],
        "mapping": {Disguised(): torch.ones(1) * 2},
        "sneaky": Sneaky([torch.ones(1) * 3]),
        "sneaky_dict": SneakyDict(k=torch.ones(1) * 4),
    }
    text = PROBE["snapshot_json"](odd)
    snap = json.loads(text)
    names = {t["name"] for t in snap["tensors"]}
    assert {"hostile.t", "sparse", "meta", "inf", "param"} <= names
    assert by_name(snap, "inf")["is_inference"] and by_name(snap, "inf")["version"] is None
    assert by_name(snap, "param")["is_parameter"]
    assert not any(n.startswith("deep[0][0][0][0][0]") for n in names)  # depth bound
    assert "mapping[<Disguised>]" in names
    assert {"sneaky[0]", "sneaky_dict['k']"} <= names
    assert Disguised.calls == 0


def test_time_budget_is_honoured():
    lin = nn.Linear(4, 4)
    x = torch.randn(1, 4)
    for _ in range(300):
        x = torch.tanh(lin(x))
    snap = snapshot({"x": x, "xs": [x * i for i in range(50)]}, time_budget=0.0)
    assert snap["truncated"] and "time" in snap["limits_hit"]
    assert snap["elapsed_ms"] < 1000


def test_program_without_torch_gets_no_torch():
    code = (
        "import runpy, sys, json\n"
        f"p = runpy.run_path({str(PROBE_PATH)!r})\n"
        "s = json.loads(p['snapshot_json']({'a': [1, 2]}))\n"
        "print(s['torch'], s['tensors'], 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "[]", "False"]


def test_graph_for_drawing_marks_states():
    w = torch.randn(3, requires_grad=True)
    y = torch.sigmoid(w)
    y.mul_(2)
    loss = y.sum()
    g = PROBE["graph"]({"w": w, "y": y, "loss": loss}, "loss")
    names = [n["name"] for n in g["nodes"]]
    assert names[0] == "SumBackward0"
    sig = next(n for n in g["nodes"] if n["name"] == "SigmoidBackward0")
    assert sig["state"] == "modified" and sig["saved"][0]["owner"] == "y"
    assert any(n["name"] == "AccumulateGrad (w)" for n in g["nodes"])
    assert all(0 <= a < len(names) and 0 <= b < len(names) for a, b in g["edges"])
    assert len(g["edges"]) == len(g["nodes"]) - 1  # a chain
    assert PROBE["graph"]({"w": w}, "nope")["nodes"] == []


def test_exception_record_names_rule_and_blame():
    x = torch.randn(3, requires_grad=True)
    y = torch.sigmoid(x)
    y.add_(1)
    loss = y.sum()
    try:
        loss.backward()
    except RuntimeError as exc:
        message = str(exc)
    snap = snapshot({"x": x, "y": y, "loss": loss}, exception=message)
    exc = snap["exception"]
    assert (exc["code"], exc["name"], exc["blame"]) == ("GL102", "inplace-modifies-saved-tensor", "y")
    assert snapshot({}, exception="ValueError: nope")["exception"]["code"] is None


def test_two_losses_sharing_an_encoder_blame_the_loss_backpropagated_first():
    torch.manual_seed(0)
    enc, cls_head, reg_head = nn.Linear(4, 6), nn.Linear(6, 3), nn.Linear(6, 1)
    z = torch.relu(enc(torch.randn(5, 4)))
    losses = {"cls": cls_head(z).logsumexp(1).mean(), "reg": reg_head(z).pow(2).mean()}
    del z  # the shared encoder output is not in the frame: only the losses are
    losses["cls"].backward()
    snap = snapshot({"losses": losses})
    pred = assert_predicted(snap, "losses['reg']", losses["reg"])
    assert (pred["code"], pred["reason"], pred["blame"]) == ("GL101", "shared", "losses['cls']")


def test_running_average_with_its_graph_is_the_carried_state():
    torch.manual_seed(0)
    enc = nn.Linear(6, 3)
    center = torch.zeros(3)
    for step in range(2):
        feats = torch.sigmoid(enc(torch.randn(4, 6)))
        center = 0.9 * center + 0.1 * feats.mean(0)
        loss = (feats - center).pow(2).mean()
        if step == 0:
            loss.backward()
    snap = snapshot({"enc": enc, "feats": feats, "center": center, "loss": loss})
    pred = assert_predicted(snap, "loss", loss)
    assert (pred["code"], pred["reason"], pred["blame"]) == ("GL101", "carried", "center")


def test_probe_runs_from_source_alone():
    """The client's fallback for a remote debuggee: exec of the source in a fresh dict, no file."""
    source = PROBE_PATH.read_text()
    x = torch.randn(3, requires_grad=True)
    loss = (x.exp() * x).sum()
    loss.backward()
    frame = {"x": x, "loss": loss}
    expression = (f"(lambda g: (exec(compile({source!r}, {str(PROBE_PATH)!r}, 'exec'), g), g)[1])"
                  "({'__name__': '<graphlife-probe>'})['snapshot_json']({**globals(), **locals()})")
    snap = json.loads(eval(expression, {}, frame))  # noqa: S307 - what debugpy does in the frame
    assert by_name(snap, "loss")["backward_prediction"]["code"] == "GL101"
    assert sorted(frame) == ["loss", "x"]
