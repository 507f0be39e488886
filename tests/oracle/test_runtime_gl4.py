"""GL401-GL407 fixtures under torch (the truths live in ``oracle.expect_gl4``).

The fixture tests run here only while ``oracle.expectations.load_all`` does not
import ``oracle.expect_gl4`` itself; when it does, the generic
``test_runtime_truth.py`` runs them and this file keeps the checks the generic
test does not make (the opposite kind's check must object to a fixture's run)
plus the probes' self-tests.
"""

from __future__ import annotations

import sys

import pytest

from fixturelib import fixture_paths, load_fixture
from oracle.expectations import load_all

CODES = {f"GL40{i}" for i in range(1, 8)}
load_all()  # what the generic test_runtime_truth.py runs
_LOADED_BY_HARNESS = "oracle.expect_gl4" in sys.modules
_PATHS = fixture_paths(codes=CODES)


@pytest.mark.parametrize("path", _PATHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_gl4_fixture_runtime_truth(path) -> None:
    from oracle import expect_gl4  # noqa: F401 - registers GL401-GL407
    from oracle.expectations import EXPECTATIONS

    fixture = load_fixture(path)
    expectation = EXPECTATIONS[fixture.code]
    outcome = expectation.run(fixture)
    problems = [] if _LOADED_BY_HARNESS else expectation.check(fixture, outcome)  # else: the generic test reports them
    if problems:
        lines = [f"{fixture.id} ({fixture.kind}; bad {fixture.code} fixtures must: {expectation.summary})"]
        lines += [f"  - {problem}" for problem in problems]
        if outcome.traceback:
            lines.append("torch's traceback:\n" + outcome.traceback[-3000:])
        pytest.fail("\n".join(lines), pytrace=False)
    # the truth discriminates: the opposite kind's check must object to this run
    if _LOADED_BY_HARNESS and expectation.check(fixture, outcome):
        pytest.skip("the generic test_runtime_truth.py reports this fixture's problems")
    opposite = (expectation.good if fixture.is_bad else expectation.bad)(fixture, outcome)
    assert opposite, f"{fixture.id}: the {'good' if fixture.is_bad else 'bad'} check accepts it too"


def test_every_gl4_directory_has_five_bad_and_five_good() -> None:
    for code in sorted(CODES):
        paths = fixture_paths(codes={code})
        bad = [p for p in paths if p.name.startswith("bad_")]
        good = [p for p in paths if p.name.startswith("good_")]
        assert len(bad) >= 5 and len(good) >= 5, (code, len(bad), len(good))
        for p in bad:
            assert load_fixture(p).lines_marked(code), f"{p}: no `# expect: {code}` marker"
        for p in good:
            assert not load_fixture(p).markers, f"{p}: a good fixture carries a marker"


# --------------------------------------------------------------------------- the probes can fail


def test_watch_apply_sees_every_call_and_restores_apply() -> None:
    import torch
    from torch.autograd.function import Function

    from oracle.expect_gl4 import CtxProbe, watch_apply

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * ctx.x

    original = Function.__dict__["apply"]
    probe = CtxProbe()
    x = torch.ones(2, requires_grad=True)
    with watch_apply(probe.observe):
        Keep.apply(x)
    assert Function.__dict__["apply"] is original
    assert [(f.attr, f.role, f.index) for f in probe.found] == [("x", "input", 0)]


def test_replay_objects_when_backward_ignores_the_ctx_tensor() -> None:
    import torch
    from torch.autograd.function import Function

    from oracle.expect_gl4 import CtxTensor, demonstrate_ctx_tensor

    class Uses(Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.w = w
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g * ctx.w, None

    class Ignores(Uses):
        @staticmethod
        def backward(ctx, g):
            return g * 2, None

    args = (torch.ones(3, requires_grad=True), torch.full((3,), 2.0))
    assert demonstrate_ctx_tensor(CtxTensor(Uses, args, {}, "w", "input", 1)) == []
    assert demonstrate_ctx_tensor(CtxTensor(Ignores, args, {}, "w", "input", 1))
