"""No fix the editor or ``graphlife fix`` offers makes the engine report a new error, on any fixture.

For every fixture (bad and good) of every rule, every fix offered for every finding is
applied alone and the fixed text checked again: for no rule may the number of errors
grow, and the finding the fix was for must be gone from its line. This is what a user
sees after picking any light-bulb item: never a new red squiggle.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from graphlife.checker import check
from graphlife.fixes import compute_fixes
from graphlife.fixes.apply import apply_edits

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CODES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name.startswith("GL"))


def _errors(findings) -> Counter:
    return Counter(f.code for f in findings if f.severity.value == "error")


def test_every_rule_has_fixtures():
    assert len(CODES) >= 20


@pytest.mark.parametrize("code", CODES)
def test_no_offered_fix_adds_an_error(code: str) -> None:
    offered = 0
    for path in sorted((FIXTURES / code).glob("*.py")):
        source = path.read_text(encoding="utf-8")
        before = check(source, str(path))
        for finding in before:
            for fix in compute_fixes(finding, source, path=str(path)):
                offered += 1
                fixed = apply_edits(source, fix.edits)
                after = check(fixed, str(path))
                grown = {c: n for c, n in _errors(after).items() if n > _errors(before)[c]}
                assert not grown, f"{path.name}: `{fix.title}` adds errors {grown}\n{fixed}"
                shift = sum(e.new_text.count("\n") - (e.span.end_line - e.span.line)
                            for e in fix.edits if e.span.end_line < finding.span.line
                            or (e.span.end_line == finding.span.line and e.span.end_column == 1))
                left = [f for f in after if f.code == finding.code and f.span.line == finding.span.line + shift]
                assert not left, f"{path.name}: `{fix.title}` leaves {finding.code}: {left[0].message}"
    if code in ("GL101", "GL102", "GL103", "GL104", "GL201", "GL204"):
        assert offered, f"no fix offered on any {code} fixture"
