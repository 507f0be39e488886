"""No fix the editor or ``graphlife fix`` offers makes the engine report a new error, on any fixture.

Single files, the multi-file projects (each fix judged with the file's imports followed)
and every bad fixture as a notebook (fix-all cell by cell).

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


def _errors_anywhere(findings) -> Counter:
    """Errors per (file, code): a fix must not add one in the checked file nor in another of the project."""
    return Counter((f.span.path, f.code) for f in findings if f.severity.value == "error")


PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())


@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
def test_no_offered_fix_adds_an_error_in_a_project(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same on the multi-file projects, each file checked as `graphlife check` checks it
    (its imports of the project's other modules followed), each fix judged in the project."""
    from graphlife.checker import check_source, project_modules
    from graphlife.config import Config

    monkeypatch.chdir(project)
    config = Config()
    for path in sorted(p.relative_to(project).as_posix() for p in project.rglob("*.py")):
        source = (project / path).read_text(encoding="utf-8")

        def modules(path: str = path):  # a fresh view of the project per analysis
            return project_modules(path, config)

        before = check_source(source, path, config, modules=modules()).findings
        for finding in before:
            if finding.span.path is not None:
                continue
            for fix in compute_fixes(finding, source, path=path, config=config, modules=modules):
                fixed = apply_edits(source, fix.edits)
                after = check_source(fixed, path, config, modules=modules()).findings
                grown = {k: n for k, n in _errors_anywhere(after).items() if n > _errors_anywhere(before)[k]}
                assert not grown, f"{project.name}/{path}: `{fix.title}` adds errors {grown}\n{fixed}"


def _as_cells(source: str) -> list[str]:
    """A fixture as a notebook: one cell per top-level statement (with the comments and blank
    lines before it), so that a fix may have to edit several cells."""
    import ast

    from graphlife.text_lines import source_lines_keepends

    lines = source_lines_keepends(source)
    starts = sorted({min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))]) - 1
                     for stmt in ast.parse(source).body} | {0})
    return ["".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True) if lines[a:b]]


def _join(texts: list[str]) -> tuple[str, list[int]]:
    from graphlife.lsp.notebooks import CellText, join_cells

    joined, cells = join_cells([CellText(uri=str(n), version=None, number=n, text=t) for n, t in enumerate(texts, 1)])
    return joined, [cell.line_offset for cell in cells]


@pytest.mark.parametrize("code", CODES)
def test_notebook_fix_all_adds_no_error(code: str) -> None:
    """Every bad fixture as a notebook, one cell per statement: fix-all, unsafe fixes included
    (`graphlife check --fix --unsafe-fixes`, the editor's notebook fix-all being the safe part),
    fixes the cells and the joined cells then have no error the notebook did not have."""
    from graphlife.fixes.notebooks import fix_cells

    changed = 0
    for path in sorted((FIXTURES / code).glob("bad_*.py")):
        cells = _as_cells(path.read_text(encoding="utf-8"))
        joined = _join(cells)[0]
        before = check(joined, str(path))
        if not any(f.fixes for f in before):
            continue
        fixed = fix_cells(cells, _join, str(path), unsafe=True)
        changed += fixed != cells
        after = check(_join(fixed)[0], str(path))
        grown = {c: n for c, n in _errors(after).items() if n > _errors(before)[c]}
        assert not grown, f"{path.name} as a notebook: fix-all adds errors {grown}"
    if code in ("GL101", "GL102", "GL103", "GL104", "GL201", "GL204"):
        assert changed, f"fix-all changed no {code} fixture as a notebook"
