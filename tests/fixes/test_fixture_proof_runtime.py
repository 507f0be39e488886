"""The proof for the memory, silent-gradient and custom-autograd rules (GL2xx-GL4xx).

For every bad fixture whose finding carries a fix that ``compute_fixes`` offers, the
preferred fixes are applied with ``fix_source`` (what ``graphlife fix`` does) and:
1. the fixed source parses, and fixing it again changes nothing;
2. the analyzer no longer reports the fixture's code;
3. torch now judges the fixed script as it judges a *good* fixture of that code: the
   oracle's own good-side check (no leak growth, the reference gradients, no warning,
   no exception), run exactly as for the hand-written good fixtures.
A fixture with a finding but no offered fix is fine (the recipe refused the shape).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fixturelib import KNOWN_MISSES, load_fixture
from graphlife.checker import check
from graphlife.fixes import compute_fixes, fix_source
from oracle.expectations import load_all

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CODES = tuple(f"GL{n}" for n in (201, 202, 203, 204, 205, 301, 302, 303, 304, 305, 401, 402, 403, 404, 405, 406))


def _cases() -> list[Path]:
    out = []
    for code in CODES:
        for path in sorted((FIXTURES / code).glob("bad_*.py")):
            if f"{code}/{path.name}" in KNOWN_MISSES:
                continue
            source = path.read_text(encoding="utf-8")
            if any(compute_fixes(f, source) for f in check(source, str(path)) if f.code == code):
                out.append(path)
    return out


CASES = _cases()


def test_there_are_fixes_to_prove():
    assert len(CASES) >= 50


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_turns_a_bad_fixture_into_a_good_one(path: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    code = path.parent.name
    source = path.read_text(encoding="utf-8")
    fixed = fix_source(source, str(path))
    assert fixed != source, "an offered fix changed nothing"
    ast.parse(fixed)
    assert fix_source(fixed, str(path)) == fixed, "fixing twice is not idempotent"
    still = [f for f in check(fixed, str(path)) if f.code == code]
    assert not still, f"still flagged after the fix: {[(f.line, f.message) for f in still]}"

    # Judge the fixed script with the oracle's good-side check for its code.
    target = tmp_path / code / ("good_fixed_" + path.name[len("bad_"):])
    target.parent.mkdir()
    target.write_text(fixed.replace("# expect:", "# was expected:"), encoding="utf-8")
    fixture = load_fixture(target)
    expectation = load_all()[code]
    problems = expectation.check(fixture, expectation.run(fixture))
    assert not problems, "torch does not judge the fixed script good:\n" + "\n".join(problems) + "\n--- fixed:\n" + fixed
