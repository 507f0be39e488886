"""GL401-GL406 fixtures under torch (the truths live in ``oracle.expect_gl4``).

The fixture tests run here only while ``oracle.expectations.load_all`` does not
import ``oracle.expect_gl4`` itself (it loads ``expectations_*`` modules); the
import happens inside the test so that the generic ``test_runtime_truth.py``
does not pick the codes up a second time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixturelib import fixture_paths, load_fixture

ORACLE_DIR = Path(__file__).resolve().parent
CODES = {f"GL40{i}" for i in range(1, 7)}
_LOADED_BY_HARNESS = any("expect_gl4" in p.read_text(encoding="utf-8") for p in ORACLE_DIR.glob("expectations_*.py"))
_PATHS = [] if _LOADED_BY_HARNESS else fixture_paths(codes=CODES)


@pytest.mark.parametrize("path", _PATHS or ["(none)"], ids=lambda p: p if isinstance(p, str) else f"{p.parent.name}/{p.name}")
def test_gl4_fixture_runtime_truth(path) -> None:
    if path == "(none)":
        pytest.skip("the generic harness runs these fixtures")
    from oracle import expect_gl4  # noqa: F401,PLC0415 - registers GL401-GL406
    from oracle.expectations import EXPECTATIONS  # noqa: PLC0415

    fixture = load_fixture(path)
    expectation = EXPECTATIONS[fixture.code]
    outcome = expectation.run(fixture)
    problems = expectation.check(fixture, outcome)
    if problems:
        lines = [f"{fixture.id} ({fixture.kind}; bad {fixture.code} fixtures must: {expectation.summary})"]
        lines += [f"  - {problem}" for problem in problems]
        if outcome.traceback:
            lines.append("torch's traceback:\n" + outcome.traceback[-3000:])
        pytest.fail("\n".join(lines), pytrace=False)
    # the truth discriminates: the opposite kind's check must object to this run
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
    import torch  # noqa: PLC0415
    from torch.autograd.function import Function  # noqa: PLC0415

    from oracle.expect_gl4 import CtxProbe, watch_apply  # noqa: PLC0415

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
    import torch  # noqa: PLC0415
    from torch.autograd.function import Function  # noqa: PLC0415

    from oracle.expect_gl4 import CtxTensor, demonstrate_ctx_tensor  # noqa: PLC0415

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
