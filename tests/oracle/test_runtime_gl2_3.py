"""GL2xx/GL3xx fixtures under torch, and the meters themselves on throwaway fixtures.

The fixture tests run here only while ``oracle.expectations.load_all`` does not
import ``oracle.expect_gl2_3`` itself (today it loads ``expectations_*`` modules);
the import happens inside the test so that the generic ``test_runtime_truth.py``
does not pick the codes up a second time.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from fixturelib import fixture_paths, load_fixture
from oracle.expectations import load_all

CODES = {f"GL20{i}" for i in range(1, 6)} | {f"GL30{i}" for i in range(1, 6)}
load_all()  # what the generic test_runtime_truth.py runs
_LOADED_BY_HARNESS = "oracle.expect_gl2_3" in sys.modules
_PATHS = [] if _LOADED_BY_HARNESS else fixture_paths(codes=CODES)


@pytest.mark.parametrize(
    "path", _PATHS or ["(none)"], ids=lambda p: p if isinstance(p, str) else f"{p.parent.name}/{p.name}"
)
def test_gl2_gl3_fixture_runtime_truth(path) -> None:
    if path == "(none)":
        pytest.skip("the generic harness runs these fixtures")
    from oracle import expect_gl2_3  # noqa: F401 - registers GL2xx/GL3xx
    from oracle.expectations import EXPECTATIONS

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


def test_every_gl2_gl3_directory_has_five_bad_and_five_good() -> None:
    for code in sorted(CODES):
        paths = fixture_paths(codes={code})
        bad = [p for p in paths if p.name.startswith("bad_")]
        good = [p for p in paths if p.name.startswith("good_")]
        assert len(bad) >= 5 and len(good) >= 5, (code, len(bad), len(good))
        for p in bad:
            assert load_fixture(p).lines_marked(code), f"{p}: no `# expect: {code}` marker"
        for p in good:
            assert not load_fixture(p).markers, f"{p}: a good fixture carries a marker"


# --------------------------------------------------------------------------- the meters can fail


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "probe.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


_LOOP = """\
    import torch
    torch.manual_seed(0)
    STEPS = globals().get("STEPS", 4)
    w = torch.randn(4, 4, requires_grad=True)
    kept = []
    for _ in range(STEPS):
        loss = torch.tanh(torch.randn(2, 4) @ w).sum()
        {body}
    """


@pytest.mark.parametrize(
    ("body", "nodes_grow", "saved_grow"),
    [
        ("kept.append(loss)", True, True),
        ("loss.backward(); kept.append(loss)", True, False),
        ("loss.backward(); kept.append(loss.item())", False, False),
        ("kept.append(loss.detach())", False, False),
    ],
)
def test_leak_meter_counts_nodes_and_saved_tensors(
    tmp_path: Path, body: str, nodes_grow: bool, saved_grow: bool
) -> None:
    from oracle.leaks import run_measured

    path = _write(tmp_path, _LOOP.format(body=body))
    small, large = (run_measured(path, globals_in={"STEPS": n}) for n in (3, 6))
    assert not small.outcome.raised, small.outcome.describe()
    assert (large.peak_nodes > small.peak_nodes) is nodes_grow, (small.summary(), large.summary())
    assert (large.peak_saved > small.peak_saved) is saved_grow, (small.summary(), large.summary())


def test_retain_meter_tells_needed_from_unneeded(tmp_path: Path) -> None:
    from oracle.leaks import run_measured

    needed = _write(tmp_path, """\
        import torch
        w = torch.randn(3, requires_grad=True)
        h = torch.sigmoid(w * w)
        h.sum().backward(retain_graph=True)
        (h * 2).sum().backward()
        """)
    m = run_measured(needed)
    assert m.backwards[0].retained > 0 and m.unneeded_retains == [] and m.backwards[1].retained == 0
    unneeded = _write(tmp_path, """\
        import torch
        w = torch.randn(3, requires_grad=True)
        for _ in range(2):
            torch.sigmoid(w * w).sum().backward(retain_graph=True)
        """)
    m = run_measured(unneeded)
    assert m.unneeded_retains == [0, 1]


def test_step_meter_sees_zeroed_stale_and_clipped_gradients(tmp_path: Path) -> None:
    from oracle.leaks import run_measured

    template = """\
        import torch
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        for _ in range(3):
            {zero_first}
            lin(torch.randn(4, 3)).pow(2).mean().backward()
            {between}
            opt.step()
        """
    cases = {
        "ok": ("opt.zero_grad()", "pass"),
        "clipped": ("opt.zero_grad()", "torch.nn.utils.clip_grad_norm_(lin.parameters(), 1e-3)"),
        "zeroed": ("pass", "opt.zero_grad()"),
        "stale": ("pass", "pass"),
    }
    result = {}
    for name, (zero_first, between) in cases.items():
        path = _write(tmp_path, template.format(zero_first=zero_first, between=between))
        steps = run_measured(path, saved=None, nodes=False, optim=True).steps
        assert len(steps) == 3
        result[name] = ([s.applies_fresh_gradient() for s in steps], [s.applies_nothing() for s in steps])
    assert result["ok"] == ([True] * 3, [False] * 3)
    assert result["clipped"] == ([True] * 3, [False] * 3)
    assert result["zeroed"] == ([False] * 3, [True] * 3)
    assert result["stale"][0] == [True, False, False]


def test_snapshot_reference_sees_data_changes_of_saved_tensors_only(tmp_path: Path) -> None:
    from oracle.leaks import max_rel_diff, run_measured

    template = """\
        import torch
        torch.manual_seed(0)
        w1 = torch.randn(3, 4, requires_grad=True)
        w2 = torch.randn(4, 1, requires_grad=True)
        loss = torch.tanh(torch.randn(5, 3) @ w1).matmul(w2).sum()
        {change}
        loss.backward()
        """
    diffs = {}
    for name, change in {"saved": "w2.data.mul_(3)", "unsaved": "w1.data.mul_(3)", "none": "pass"}.items():
        path = _write(tmp_path, template.format(change=change))
        observed = run_measured(path, saved=None, nodes=False)
        reference = run_measured(path, saved="snapshot", nodes=False)
        pairs = zip(observed.backwards[0].leaf_grads, reference.backwards[0].leaf_grads)
        diffs[name] = max(max_rel_diff(a, b) for a, b in pairs)
    # w2 is saved (its input needs grad); w1 is not (x @ w1 with x constant saves x only)
    assert diffs["saved"] > 0.1 and diffs["unsaved"] == 0.0 and diffs["none"] == 0.0, diffs


def test_wasted_nodes_and_leaked_nodes(tmp_path: Path) -> None:
    from oracle.leaks import run_measured

    wasted = _write(tmp_path, _LOOP.format(body="kept.append(loss.item())"))
    assert run_measured(wasted, globals_in={"STEPS": 3}).wasted_nodes >= 3
    used = _write(tmp_path, _LOOP.format(body="loss.backward()"))
    assert run_measured(used, globals_in={"STEPS": 3}).wasted_nodes == 0
    cycle = _write(tmp_path, _LOOP.format(body="loss.backward(create_graph=True)"))
    m = run_measured(cycle, globals_in={"STEPS": 3}, saved=None)
    assert m.live_nodes_end > 0 and m.live_leaves_end == 1, m.summary()
    assert m.warned("create_graph=True will create a reference cycle")
