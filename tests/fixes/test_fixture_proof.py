"""The proof, on every GL101-GL107 and GL109 bad fixture whose finding carries a fix (or is listed as refused).

For each fixture the preferred fixes are applied with ``fix_source`` (what
``graphlife fix`` does) and:
1. the fixed source parses, and fixing it again changes nothing;
2. the analyzer no longer reports the fixture's code on a line marked
   ``# expect: CODE`` (the markers survive the fix: comments are kept);
3. the original script raises under torch and the fixed script runs to the end.

Where a recipe cannot meet all three for a fixture's shape, ``compute_fixes``
refuses it: those fixtures are listed in ``NOT_OFFERED`` with the reason, and the
test asserts that nothing is offered for them (so a wrong edit never ships).
"""

from __future__ import annotations

import ast
import runpy
import warnings
from pathlib import Path

import pytest

from graphlife.checker import check
from graphlife.fixes import compute_fixes, fix_source
from graphlife.fixes.apply import apply_edits

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CODES = ("GL101", "GL102", "GL103", "GL104", "GL105", "GL106", "GL107", "GL109")

#: fixture -> why its recipe is not offered for that shape.
NOT_OFFERED = {
    "GL101/bad_helper_backward_called_twice.py":
        "retain_graph: the earlier backward is in a helper called twice; "
        "retaining there leaves a useless retain (GL202)",
    "GL101/bad_total_loss_accumulated_backward_each_step.py":
        "detach_carried_state targets `loss`, unbound before the loop; retain_graph on a loop-carried graph",
    "GL101/bad_trainer_self_hidden_state.py": "retain_graph on a loop-carried graph fails after optimizer.step()",
    "GL101/bad_reinforce_log_probs_never_cleared.py":
        "retain_graph: the freeing backward is the failing one (a list never cleared carries the old episodes' "
        "log-probs); clearing the list after the step is the fix, and no recipe makes it yet",
    "GL102/bad_attention_dict_masked_fill_inplace.py": "out_of_place: the receiver is a dict item, not rebindable",
    "GL102/bad_out_argument_resamples_saved_noise.py":
        "out_of_place: `torch.rand(..., out=buffer)` has no rebinding form",
    "GL102/bad_dropout_inplace_attr_after_sigmoid.py": "out_of_place: module call with no `construction` span",
    "GL102/bad_view_of_saved_output_zeroed.py": "out_of_place: `zero_()` has no out-of-place twin",
    "GL105/bad_feature_visualization_rescaled_input.py":
        "leaf_after_conversion: no `requires_grad=True` in the expression",
    "GL105/bad_reshaped_kernel.py": "leaf_after_conversion: no `requires_grad=True` in the expression",
}


def _cases() -> list[Path]:
    """Every bad fixture whose finding carries a recipe, and every one listed in NOT_OFFERED
    (a rule may refuse a shape before making a recipe: the test still checks nothing is offered)."""
    out = []
    for code in CODES:
        for path in sorted((FIXTURES / code).glob("bad_*.py")):
            source = path.read_text(encoding="utf-8")
            offered = any(f.code == code and f.fixes for f in check(source, str(path)))
            if f"{code}/{path.name}" in NOT_OFFERED or offered:
                out.append(path)
    return out


CASES = _cases()

#: GL104 findings where the graph was lost under ``no_grad``/``inference_mode`` (the message says so).
NO_GRAD_BREAK = "computed while gradients were disabled"


def _marked(source: str, code: str) -> list[int]:
    return [
        n for n, line in enumerate(source.splitlines(), 1) if "expect:" in line and code in line.split("expect:")[1]
    ]


def _run(source: str, tmp_path: Path, name: str) -> BaseException | None:
    import torch  # noqa: F401 - imported once per process; the fixtures import it again for free

    script = tmp_path / name
    script.write_text(source, encoding="utf-8")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(str(script), run_name="__main__")
    except Exception as exc:  # noqa: BLE001 - the exception is the observation
        return exc
    return None


def test_there_are_fixtures_to_prove():
    assert len(CASES) >= 40
    assert all((FIXTURES / key).is_file() for key in NOT_OFFERED), "NOT_OFFERED names a fixture that does not exist"


def test_every_no_grad_break_is_proven_or_listed():
    """A GL104 bad fixture whose graph was lost in a ``no_grad`` region gets the unwrap / drop-decorator
    fix (proven below) or is listed in NOT_OFFERED with the reason."""
    shapes = []
    for path in sorted((FIXTURES / "GL104").glob("bad_*.py")):
        source = path.read_text(encoding="utf-8")
        findings = [f for f in check(source, str(path)) if f.code == "GL104" and NO_GRAD_BREAK in f.message]
        if not findings:
            continue
        key = f"GL104/{path.name}"
        shapes.append(key)
        kinds = {r.kind for f in findings for r in f.fixes}
        assert key in NOT_OFFERED or kinds & {"unwrap_with", "drop_decorator", "move_no_grad_to_callers"}, \
            f"{key}: no fix and no reason"
        assert path in CASES
    assert len(shapes) >= 3


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_is_proven_or_not_offered(path: Path, tmp_path: Path):
    code = path.parent.name
    key = f"{code}/{path.name}"
    source = path.read_text(encoding="utf-8")
    findings = [f for f in check(source, str(path)) if f.code == code]
    offered = [fix for f in findings for fix in compute_fixes(f, source, path=str(path))]
    if key in NOT_OFFERED:
        assert offered == [], f"a fix is offered for a shape it was not proven on: {NOT_OFFERED[key]}"
        return
    assert offered, "the finding carries a recipe, but no fix was made for this fixture"
    assert _run(source, tmp_path, "original.py") is not None, "the bad fixture should fail under torch"

    # `graphlife fix` (safe fixes only) and `graphlife fix --unsafe-fixes` (the best fix of each finding)
    for unsafe in (False, True):
        fixed = fix_source(source, str(path), unsafe=unsafe)
        if not unsafe and not any(fix.safe for fix in offered):
            assert fixed == source, "`graphlife fix` applied an unsafe fix"
            continue
        assert fixed != source
        # 1. parses; fixing again changes nothing
        ast.parse(fixed)
        assert fix_source(fixed, str(path), unsafe=unsafe) == fixed
        # 2. the finding is gone from the marked statement(s)
        marked = _marked(fixed, code)
        assert marked, "the expect marker comment must survive the fix"
        still = [f for f in check(fixed, str(path)) if f.code == code and f.line in marked]
        assert not still, f"{code} still reported: {[f.message for f in still]}"
        # 3. torch: the fixed script runs to the end
        error = _run(fixed, tmp_path, "fixed.py")
        assert error is None, f"the fixed script ({unsafe=}) raised {type(error).__name__}: {error}\n{fixed}"


def _each_fix() -> list[tuple[Path, int, int]]:
    """(fixture, finding index, fix index) for every fix offered on a fixture with one finding of its code."""
    out = []
    for path in CASES:
        code = path.parent.name
        source = path.read_text(encoding="utf-8")
        findings = [f for f in check(source, str(path)) if f.code == code]
        if len(findings) == 1:
            out.extend((path, 0, index) for index, _ in enumerate(compute_fixes(findings[0], source, path=str(path))))
    return out


EACH_FIX = _each_fix()


def test_there_are_unsafe_and_alternative_fixes_to_run():
    kinds = {compute_fixes([f for f in check(p.read_text(), str(p)) if f.code == p.parent.name][n],
                           p.read_text(), path=str(p))[i].kind for p, n, i in EACH_FIX}
    assert {"retain_graph", "detach_requires_grad", "merge_backwards"} <= kinds


@pytest.mark.parametrize("case", EACH_FIX, ids=lambda c: f"{c[0].parent.name}/{c[0].name}#{c[2]}")
def test_every_offered_fix_alone_makes_the_script_run(case, tmp_path: Path):
    """Each quick fix the editor offers, safe or unsafe, preferred or not, applied alone."""
    path, number, index = case
    code = path.parent.name
    source = path.read_text(encoding="utf-8")
    finding = [f for f in check(source, str(path)) if f.code == code][number]
    fix = compute_fixes(finding, source, path=str(path))[index]
    fixed = apply_edits(source, fix.edits)
    if [f for f in check(fixed, str(path)) if f.code == code]:
        # a step: the engine now sees the next use of the same cause (a clone here, the next
        # read of the inference tensor there); `graphlife fix` takes the next step itself
        fixed = fix_source(fixed, str(path), unsafe=not fix.safe)
    error = _run(fixed, tmp_path, "fixed.py")
    assert error is None, f"{fix.title} ({fix.applicability.value}): {type(error).__name__}: {error}\n{fixed}"
