"""The analyzer on every fixture: bad ones flagged on exactly the marked lines, good ones left alone.

For a bad fixture ``tests/fixtures/<CODE>/bad_*.py``:
- every ``# expect: X`` line gets a finding of code X on that line;
- no finding of the directory's code on a line not marked with it;
- no error-severity finding on a line not marked with that finding's code
  (errors mean "torch raises here on every path": the fixture must say so).
For a good fixture: no finding of the directory's code and no error at all.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fixturelib import (
    KNOWN_MISSES,
    MarkerError,
    discover_fixtures,
    fixture_paths,
    load_fixture,
    parse_expect_markers,
    parse_oracle_options,
)
from graphlife.checker import check
from graphlife.findings import Severity

_PATHS = fixture_paths()


def _fixture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _severity(finding) -> str:
    severity = finding.severity
    return severity.value if isinstance(severity, Severity) else str(severity)


def _listing(findings, fixture) -> str:
    if not findings:
        return "  (no findings)"
    rows = []
    for f in findings:
        rows.append(
            f"  line {f.span.line}:{f.span.column} {f.code} [{_severity(f)}] {f.message}\n"
            f"      | {fixture.line_text(f.span.line)}"
        )
    return "\n".join(rows)


def _implemented(code: str) -> bool:
    from graphlife.rules import rule_by_code

    return rule_by_code(code) is not None


@pytest.mark.parametrize("path", _PATHS, ids=_fixture_id)
def test_fixture_findings(path: Path, request) -> None:
    fixture = load_fixture(path)
    if not _implemented(fixture.code):
        pytest.skip(f"rule {fixture.code} is not implemented yet")
    if fixture.id in KNOWN_MISSES:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_MISSES[fixture.id], strict=True))
    findings = check(fixture.source, str(path))
    code = fixture.code
    problems: list[str] = []

    if fixture.is_bad:
        if not fixture.lines_marked(code):
            problems.append(f"a bad fixture must mark at least one line with `# expect: {code}`")
        for line, codes in sorted(fixture.markers.items()):
            for wanted in codes:
                if not _implemented(wanted):
                    continue  # a second code whose rule does not exist yet
                if not any(f.code == wanted and f.span.line == line for f in findings):
                    problems.append(f"missing {wanted} on line {line}: {fixture.line_text(line)}")
        for f in findings:
            marked = fixture.markers.get(f.span.line, ())
            if f.code == code and code not in marked:
                problems.append(
                    f"unexpected {f.code} on line {f.span.line} (not marked): {fixture.line_text(f.span.line)}"
                )
            elif f.code != code and _severity(f) == Severity.ERROR.value and f.code not in marked:
                problems.append(
                    f"unexpected error {f.code} on line {f.span.line} (not marked): {fixture.line_text(f.span.line)}"
                )
    else:
        if fixture.markers:
            problems.append(f"a good fixture has no `# expect:` markers (found on lines {sorted(fixture.markers)})")
        for f in findings:
            if f.code == code:
                problems.append(
                    f"a good {code} fixture got {f.code} on line {f.span.line}: {fixture.line_text(f.span.line)}"
                )
            elif _severity(f) == Severity.ERROR.value:
                problems.append(
                    f"a good fixture got error {f.code} on line {f.span.line}: {fixture.line_text(f.span.line)}"
                )

    if problems:
        message = [f"{fixture.id} ({fixture.kind}):"] + [f"  - {p}" for p in problems]
        message += ["findings:", _listing(findings, fixture)]
        pytest.fail("\n".join(message), pytrace=False)


# --------------------------------------------------------------------------- the marker parser


def test_markers_single_and_multiple_codes() -> None:
    source = textwrap.dedent("""\
        import torch
        loss.backward()  # expect: GL101
        h += x  #expect:GL102 ,  GL203
        y = 1
        """)
    assert parse_expect_markers(source) == {2: ("GL101",), 3: ("GL102", "GL203")}


def test_markers_inside_strings_are_not_markers() -> None:
    source = textwrap.dedent('''\
        doc = "# expect: GL101"
        text = """
        w -= 1  # expect: GL103
        """
        ''')
    assert parse_expect_markers(source) == {}


def test_marker_on_the_first_line_of_a_multiline_statement() -> None:
    source = textwrap.dedent("""\
        opt = torch.optim.SGD(  # expect: GL105
            [w],
            lr=0.1,
        )
        """)
    assert parse_expect_markers(source) == {1: ("GL105",)}


@pytest.mark.parametrize(
    "line",
    [
        "x = 1  # expect:",
        "x = 1  # expect: GL10",
        "x = 1  # expect: GL101 GL102",
        "x = 1  # expect: gl101",
        "x = 1  # expect: GL101, GL101",
        "# expect: GL101",
    ],
)
def test_malformed_markers_are_errors(line: str) -> None:
    with pytest.raises(MarkerError):
        parse_expect_markers(line + "\n")


def test_oracle_options() -> None:
    assert parse_oracle_options("# oracle: subprocess\nimport torch\n") == {"subprocess"}
    assert parse_oracle_options("import torch\n") == frozenset()
    with pytest.raises(MarkerError):
        parse_oracle_options("# oracle: sandbox\n")


def test_discovery_kinds_codes_and_order(tmp_path: Path) -> None:
    for code in ("GL102", "GL101"):
        (tmp_path / code).mkdir()
        (tmp_path / code / "good_a.py").write_text("x = 1\n")
        (tmp_path / code / "bad_b.py").write_text("x = 1  # expect: " + code + "\n")
        (tmp_path / code / "helper.py").write_text("x = 1\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "bad_x.py").write_text("x = 1\n")
    fixtures = discover_fixtures(tmp_path)
    assert [f.id for f in fixtures] == ["GL101/bad_b.py", "GL101/good_a.py", "GL102/bad_b.py", "GL102/good_a.py"]
    assert [f.kind for f in fixtures] == ["bad", "good", "bad", "good"]
    assert fixtures[0].lines_marked("GL101") == [1] and fixtures[0].lines_marked("GL102") == []
    assert [f.id for f in discover_fixtures(tmp_path, codes={"GL102"})] == ["GL102/bad_b.py", "GL102/good_a.py"]


def test_load_fixture_rejects_other_names(tmp_path: Path) -> None:
    path = tmp_path / "GL101" / "sample.py"
    path.parent.mkdir()
    path.write_text("x = 1\n")
    with pytest.raises(ValueError):
        load_fixture(path)
