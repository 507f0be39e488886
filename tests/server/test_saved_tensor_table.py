"""The saved-tensor table: fresh for the installed torch, right about torch, and loadable without it.

Why three layers: the staleness check proves the shipped JSON is what the
generator produces today; the runtime oracle proves the generator's reading of
``grad_fn._saved_*`` means what the engine thinks it means (mutating a saved
tensor really makes backward raise, mutating an unsaved one really does not);
the RULES.md truths pin the facts the rules are built on.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from graphlife.analysis import optable

REPO = Path(__file__).resolve().parents[2]
GEN_PATH = REPO / "tools" / "gen_saved_tensors.py"


@pytest.fixture(scope="module")
def gen():
    if "gen_saved_tensors" in sys.modules:
        return sys.modules["gen_saved_tensors"]
    spec = importlib.util.spec_from_file_location("gen_saved_tensors", GEN_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_saved_tensors"] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- #
# Fresh
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def fresh(gen):
    return gen.render(gen.generate())


def test_shipped_table_matches_installed_torch(gen, fresh):
    problem = gen.stale_message(fresh, gen.TABLE_PATH)
    assert problem is None, problem


def test_generation_is_byte_identical(gen, fresh):
    import json

    # Sorted keys, no ids or addresses: a re-render is identical.  (Two separate runs
    # agreeing is what test_shipped_table_matches_installed_torch checks.)
    assert gen.render(json.loads(fresh)) == fresh
    assert "0x" not in fresh


def test_check_names_what_went_stale(gen, fresh, tmp_path):
    import json

    table = json.loads(fresh)
    table["ops"]["torch.sigmoid"]["cases"]["1"]["result"] = False
    stale = tmp_path / "saved_tensors.json"
    stale.write_text(gen.render(table), encoding="utf-8")
    problem = gen.stale_message(fresh, stale)
    assert problem and "stale" in problem and "torch.sigmoid" in problem


def test_table_records_installed_torch_version():
    import torch

    assert optable.torch_version() == torch.__version__


def test_loader_does_not_import_torch():
    code = (
        "import sys\n"
        "from graphlife.analysis import optable\n"
        "assert optable.lookup('torch.sigmoid') is not None\n"
        "assert optable.lookup('nn.LSTM').saved_for('111') is not None\n"
        "assert 'torch' not in sys.modules, 'optable imported torch'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --------------------------------------------------------------------------- #
# Known truths (RULES.md) through the loader
# --------------------------------------------------------------------------- #


def case(key: str, pattern: str) -> optable.SavedCase:
    info = optable.lookup(key)
    assert info is not None, key
    found = info.saved_for(pattern)
    assert found is not None, (key, pattern)
    return found


def test_sigmoid_saves_its_result():
    assert case("torch.sigmoid", "1").result
    assert case("torch.sigmoid", "1").saved == ()
    assert case("Tensor.sigmoid", "1").result


def test_mul_by_python_number_saves_nothing_of_the_user():
    c = case("Tensor.__mul__", "1s")
    assert c.saved == () and not c.result and c.requires_grad
    assert case("Tensor.__mul__", "11").saved == (0, 1)
    assert case("torch.mul", "10").saved == (1,)  # grad of input needs other
    assert case("Tensor.__rmul__", "1s").saved == ()


def test_linear_and_addmm_do_not_save_their_output():
    lin = case("nn.Linear", "1")
    assert not lin.result and lin.saved == (0,) and lin.params
    assert case("nn.Linear", "0").params is False  # weight grad needs the input only
    assert not case("F.linear", "111").result
    info = optable.lookup("torch.addmm")
    assert info.patterns() and not any(info.saved_for(p).result for p in info.patterns())


def test_inplace_methods_and_operators():
    relu_ = optable.lookup("Tensor.relu_")
    assert relu_.inplace and not relu_.view
    assert relu_.saved_for("1").result  # y.relu_() then another in-place on y fails
    for key in ("Tensor.__iadd__", "Tensor.__imul__", "Tensor.__setitem__", "Tensor.add_",
                "Tensor.zero_", "Tensor.copy_", "Tensor.masked_fill_", "torch.relu_"):
        assert optable.lookup(key).inplace, key
    for key in ("Tensor.__add__", "Tensor.relu", "torch.relu", "Tensor.clone", "Tensor.requires_grad_"):
        assert not optable.lookup(key).inplace, key
    assert case("Tensor.__iadd__", "1s").saved == ()  # `y = x * 2; y += 1` runs


def test_views():
    for key in ("Tensor.view", "Tensor.reshape", "Tensor.transpose", "Tensor.t", "Tensor.permute",
                "Tensor.unsqueeze", "Tensor.squeeze", "Tensor.expand", "Tensor.narrow",
                "Tensor.select", "Tensor.__getitem__", "Tensor.detach", "Tensor.T",
                "Tensor.chunk", "Tensor.split", "Tensor.unbind"):
        info = optable.lookup(key)
        assert info.view and info.shares_version, key
    assert not optable.lookup("Tensor.__getitem__").variant("advanced").view
    assert not optable.lookup("Tensor.clone").view
    data = optable.lookup("Tensor.data")
    assert data.view and data.shares_version is False  # why .data hides in-place changes
    assert optable.lookup("Tensor.contiguous").identity


def test_inplace_keywords():
    relu = optable.lookup("F.relu")
    assert relu.inplace_keyword == "inplace" and not relu.inplace
    assert relu.inplace_saved_for("1").result
    assert optable.lookup("nn.ReLU").inplace_position == 0
    leaky = optable.lookup("nn.LeakyReLU")
    assert (leaky.inplace_keyword, leaky.inplace_position) == ("inplace", 1)
    for key in ("nn.ELU", "nn.Dropout", "nn.Hardtanh", "nn.ReLU6", "nn.SiLU", "nn.Hardswish",
                "nn.Mish", "nn.SELU", "nn.CELU", "nn.Threshold", "F.dropout", "F.leaky_relu"):
        assert optable.lookup(key).inplace_keyword == "inplace", key
    assert optable.lookup("nn.GELU").inplace_keyword is None


def test_differentiable():
    for key in ("torch.argmax", "Tensor.argmax", "torch.eq", "Tensor.__lt__", "Tensor.detach",
                "Tensor.item", "torch.isnan", "F.one_hot"):
        assert not optable.lookup(key).differentiable, key
    for key in ("torch.sigmoid", "Tensor.round", "Tensor.sign", "nn.Embedding", "Tensor.to"):
        assert optable.lookup(key).differentiable, key


def test_conversions_and_factories():
    to = optable.lookup("Tensor.to")
    assert to.converts["converting"] == {"leaf": False, "requires_grad": True, "returns_input": False}
    assert to.converts["noop"]["returns_input"]
    assert optable.lookup("Tensor.double").converts["converting"]["leaf"] is False
    assert optable.lookup("Tensor.cuda").proxy
    for key in ("torch.randn", "torch.zeros", "torch.ones", "torch.tensor", "torch.full"):
        info = optable.lookup(key)
        assert info.kind == "factory" and info.requires_grad_kwarg, key
    assert optable.lookup("torch.randint").requires_grad_kwarg is False
    assert not case("torch.zeros_like", "1").requires_grad


def test_composites_and_recurrent_modules():
    lstm = case("nn.LSTM", "111")
    assert lstm.params and lstm.result and 0 in lstm.saved
    assert optable.lookup("nn.LSTM").outputs == 3
    ce = optable.lookup("F.cross_entropy")
    assert ce.nondiff_inputs == (1,)
    assert ce.saved_for("11") == ce.saved_for("10")  # integer target never requires grad
    assert case("nn.BatchNorm1d", "1").buffers
    assert case("nn.MultiheadAttention", "111").params


def test_distributions_save_what_torch_saves():
    # Normal.log_prob keeps the scale for backward, not the mean: (value - loc) ** 2 saves the
    # difference, log(scale) and scale ** 2 save the scale.
    log_prob = case("Distribution.Normal(loc,scale).log_prob", "110")
    assert log_prob.saved == (1,) and log_prob.requires_grad
    # Categorical(logits=...) normalizes in its constructor; log_prob keeps what log_softmax made.
    assert case("Distribution.Categorical(logits).log_prob", "10").saves_anything
    # sample() runs without a graph, for every distribution.
    assert not case("Distribution.Normal(loc,scale).sample", "11").requires_grad
    assert optable.lookup("Distribution.Normal(loc,scale).log_prob").parameters == ("loc", "scale")


def test_same_memory_without_version_check_is_kept_apart():
    # torch.kron saves _unsafe_view's of its inputs: alive, but in-place changes go unnoticed.
    kron = case("torch.kron", "11")
    assert kron.saved == () and kron.saved_unchecked == (0, 1) and kron.saves_anything


def test_unknown_is_none_never_a_guess():
    assert optable.lookup("torch.no_such_op") is None
    assert optable.lookup("torch.sigmoid").saved_for("11") is None
    assert optable.lookup("torch.sigmoid").saved_for("s") is None
    assert optable.lookup("torch.sigmoid").variant("nope") is None
    maybe = optable.lookup("torch.mul").saved_for_all("1?")
    assert [c.pattern for c in maybe] == ["11", "10"]


def test_long_spellings():
    assert optable.lookup("torch.nn.functional.relu").key == "F.relu"
    assert optable.lookup("torch.nn.Linear").key == "nn.Linear"
    assert optable.lookup("torch.Tensor.add").key == "Tensor.add"


def test_coverage():
    keys = optable.keys()
    assert len(keys) >= 300
    kinds = {optable.lookup(k).kind for k in keys}
    assert kinds >= {"function", "method", "functional", "module", "factory"}
    wanted = """torch.sum torch.mean torch.max torch.min torch.norm torch.std torch.var
    torch.logsumexp torch.softmax torch.log_softmax torch.matmul torch.mm torch.bmm torch.addmm
    torch.einsum F.linear torch.gather torch.scatter torch.index_select torch.masked_fill
    torch.where torch.cat torch.stack F.mse_loss F.cross_entropy F.nll_loss
    F.binary_cross_entropy F.binary_cross_entropy_with_logits F.l1_loss F.smooth_l1_loss
    F.kl_div F.layer_norm F.batch_norm F.group_norm F.conv1d F.conv2d F.max_pool2d
    F.dropout F.embedding nn.Linear nn.Conv1d nn.Conv2d nn.BatchNorm1d nn.BatchNorm2d
    nn.LayerNorm nn.Embedding nn.LSTM nn.GRU nn.RNN nn.LSTMCell nn.GRUCell
    nn.MultiheadAttention nn.Dropout Tensor.__radd__ Tensor.__sub__ Tensor.__rsub__
    Tensor.__truediv__ Tensor.__rtruediv__ Tensor.__matmul__ Tensor.__pow__ Tensor.__neg__
    Tensor.to Tensor.cpu Tensor.float Tensor.half Tensor.type torch.rand torch.empty
    torch.arange torch.linspace torch.eye torch.randperm torch.as_tensor torch.ones_like""".split()
    missing = [k for k in wanted if optable.lookup(k) is None]
    assert not missing


# --------------------------------------------------------------------------- #
# Runtime oracle: what the table says is saved is what backward checks
# --------------------------------------------------------------------------- #


def _backward_after_bump(gen, spec, pattern, target):
    """Run ``spec`` with ``pattern``, bump one tensor's version, run backward.

    ``target`` is ``("input", i)``, ``("output", k)``, ``("params",)`` or ``("buffers",)``.
    Returns True if backward complained about an in-place modification, False if it ran,
    None if the experiment does not apply (the op failed, nothing to bump, no graph).
    """
    import torch
    from torch.autograd.graph import increment_version

    _ins, vals, call, args, kwargs, module = gen._build_call(spec, pattern)
    tensors = [v if isinstance(v, torch.Tensor) else None for v in vals]
    before = [v._version if v is not None else None for v in tensors]
    try:
        result = call(*args, **kwargs)
    except Exception:  # noqa: BLE001 - an op torch rejects for this pattern has nothing to compare
        return None
    outputs = gen._flatten(result)
    if tensors and tensors[0] is not None and tensors[0]._version != before[0]:
        outputs = outputs or [tensors[0]]  # in-place: the mutated input is the result
    roots = [o for o in outputs if o.requires_grad]
    if target[0] == "input":
        victims = [tensors[target[1]]] if tensors[target[1]] is not None else []
    elif target[0] == "output":
        victims = outputs[target[1]:target[1] + 1]
    else:
        owner = {"params": "parameters", "buffers": "buffers"}[target[0]]
        victims = list(getattr(module, owner)()) if module is not None else []
    if not roots or not victims:
        return None
    for v in victims:
        increment_version(v)  # same values, new version: only the version check can tell
    try:
        torch.autograd.backward(roots, [torch.ones_like(r) for r in roots])
    except RuntimeError as exc:
        return True if "modified by an inplace operation" in str(exc) else None
    return False


def _expected(info, case, target) -> bool:
    """What the table claims: does bumping ``target`` make backward raise?"""
    if case.backward_fails:
        return True  # torch's own graph already fails its version check
    aliased = info.inplace or info.view or info.identity  # input 0 and the result are one memory
    if target[0] == "input":
        if target[1] == 0 and aliased:
            return 0 in case.saved or case.result
        return target[1] in case.saved
    if target[0] == "output":
        if aliased and info.outputs == 1:
            return 0 in case.saved or case.result
        return target[1] in case.saved_outputs if info.outputs > 1 else case.result
    return bool(getattr(case, target[0]))


ORACLE_GROUPS = {"functions": ("function",), "methods": ("method", "property"),
                 "functional": ("functional",), "modules": ("module",), "distributions": ("distribution_method",)}
ORACLE_MINIMUM = {"functions": 1000, "methods": 1000, "functional": 300, "modules": 150, "distributions": 150}


@pytest.mark.parametrize("group", sorted(ORACLE_GROUPS))
def test_table_agrees_with_backward_version_checks(gen, group):
    """Every measured case, every saved-or-not claim, against torch's own version check."""
    checked = 0
    disagreements = []
    for spec in gen.SPECS:
        if spec.kind not in ORACLE_GROUPS[group] or spec.proxy:
            continue
        info = optable.lookup(spec.key)
        if info is not None and spec.variant:
            info = info.variant(spec.variant)
        if info is None or info.call != gen._describe_call(spec):
            continue  # a duplicate spec the table did not keep
        for pattern in info.patterns():
            if len(pattern) > 3 and pattern.count("1") not in (1, len(pattern)):
                continue  # wide ops (attention): one-hot and all-grad patterns suffice
            case = info.saved_for(pattern)
            if not case.requires_grad:
                continue
            targets = [("input", i) for i, c in enumerate(pattern) if c != "s"]
            targets += [("output", k) for k in range(info.outputs)]
            if spec.kind == "module":
                targets += [("params",), ("buffers",)]
            for target in targets:
                observed = _backward_after_bump(gen, spec, pattern, target)
                if observed is None:
                    continue
                checked += 1
                if observed != _expected(info, case, target):
                    disagreements.append((spec.key, spec.variant, pattern, target, observed))
    assert checked > ORACLE_MINIMUM[group]
    assert not disagreements, "\n".join(map(str, disagreements))
