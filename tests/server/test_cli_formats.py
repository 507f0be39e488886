"""`graphlife check --output-format ...`, the exit status and the output flags, as CI runs them.

The SARIF schema in ``data/sarif-schema-2.1.0.json`` is the published OASIS SARIF 2.1.0
schema (errata 01), vendored unchanged from the oasis-tcs/sarif-spec repository
(``sarif-2.1/schema/sarif-schema-2.1.0.json``): GitHub code scanning reads that format.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import jsonschema
import pytest
from cli_helpers import CLEAN, DOUBLE_BACKWARD, EVAL_WITHOUT_NO_GRAD, run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from generate import generate

SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "double.py").write_text(DOUBLE_BACKWARD)
    (tmp_path / "evaluate.py").write_text(EVAL_WITHOUT_NO_GRAD)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "broken.py").write_text(DOUBLE_BACKWARD + "\ndef broken(:\n    pass\n")
    return tmp_path


def test_output_format_and_its_old_spelling_format_agree(project: Path) -> None:
    new = run("check", "--no-cache", "--output-format", "json", "double.py", cwd=project)
    old = run("check", "--no-cache", "--format", "json", "double.py", cwd=project)
    assert new.returncode == old.returncode == 1
    assert json.loads(new.stdout) == json.loads(old.stdout)


def test_information_does_not_fail_the_run_unless_asked(project: Path) -> None:
    default = run("check", "--no-cache", "evaluate.py", cwd=project)
    assert default.returncode == 0, default.stdout
    assert "GL205 information" in default.stdout  # still shown
    assert run("check", "--no-cache", "--fail-on", "information", "evaluate.py", cwd=project).returncode == 1
    assert run("check", "--no-cache", "--fail-on", "error", "double.py", cwd=project).returncode == 1


def test_exit_zero_passes_with_errors_but_not_with_a_usage_error(project: Path) -> None:
    assert run("check", "--no-cache", "--exit-zero", "double.py", cwd=project).returncode == 0
    assert run("check", "--no-cache", "--exit-zero", "missing.py", cwd=project).returncode == 2


def test_concise_prints_one_line_per_finding(project: Path) -> None:
    proc = run("check", "--no-cache", "--output-format", "concise", "double.py", cwd=project)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("double.py:6:1: GL101 error: ")
    assert " | " not in proc.stdout  # no source excerpt
    assert lines[-1] == "Found 1 problem (1 error) in 1 file."


def test_quiet_prints_the_findings_only_and_silent_nothing(project: Path) -> None:
    quiet = run("check", "--no-cache", "-q", "--output-format", "concise", "double.py", "clean.py", cwd=project)
    assert quiet.returncode == 1
    assert quiet.stdout.splitlines() == [line for line in quiet.stdout.splitlines() if line.startswith("double.py:6")]
    silent = run("check", "--no-cache", "--silent", "double.py", cwd=project)
    assert (silent.returncode, silent.stdout, silent.stderr) == (1, "", "")


def test_json_lines_is_one_object_per_finding_and_syntax_error(project: Path) -> None:
    proc = run("check", "--no-cache", "--output-format", "json-lines", "broken.py", cwd=project)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(row["code"], row["line"]) for row in rows] == [("GL101", 6), (None, 8)]
    assert rows[1]["name"] == "syntax-error"


def test_statistics_counts_each_rule(project: Path) -> None:
    (project / "double_again.py").write_text(DOUBLE_BACKWARD)
    proc = run("check", "--no-cache", "--statistics", "double.py", "double_again.py", "evaluate.py", cwd=project)
    assert proc.stdout.split() == ["2", "GL101", "backward-through-freed-graph", "1", "GL205", "eval-without-no-grad"]
    as_json = run("check", "--no-cache", "--statistics", "--output-format", "json", "double.py", cwd=project)
    assert json.loads(as_json.stdout) == [{"code": "GL101", "name": "backward-through-freed-graph", "count": 1}]


def test_output_file_gets_the_report(project: Path) -> None:
    proc = run("check", "--no-cache", "--output-format", "json", "-o", "report.json", "double.py", cwd=project)
    assert proc.returncode == 1 and proc.stdout == ""
    assert [f["code"] for f in json.loads((project / "report.json").read_text())["findings"]] == ["GL101"]


def test_github_annotations(project: Path) -> None:
    proc = run("check", "--no-cache", "--output-format", "github", "double.py", "evaluate.py", cwd=project)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("::error title=graphlife GL101 (backward-through-freed-graph),file=double.py,line=6,"
                               "col=1,endLine=6,endColumn=16::`loss` backpropagates")
    assert lines[1].startswith("::notice title=graphlife GL205")  # information is a notice, not an error


def test_junit_has_a_failing_case_per_finding_and_a_passing_case_per_clean_file(project: Path) -> None:
    proc = run("check", "--no-cache", "--output-format", "junit", "double.py", "clean.py", cwd=project)
    root = ElementTree.fromstring(proc.stdout)
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert set(suites) == {"double.py", "clean.py"}
    [failure] = suites["double.py"].iter("failure")
    assert failure.get("type") == "GL101 error"
    assert [case.get("name") for case in suites["clean.py"].iter("testcase")] == ["no problems"]
    assert (root.get("tests"), root.get("failures")) == ("2", "1")


def test_sarif_is_valid_against_the_published_schema(project: Path) -> None:
    (project / "sub dir").mkdir()
    (project / "sub dir" / "double.py").write_text(DOUBLE_BACKWARD)
    proc = run("check", "--no-cache", "--output-format", "sarif", ".", cwd=project)
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    [sarif_run] = log["runs"]
    results = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in
               sarif_run["results"]}
    assert results >= {("GL101", "double.py"), ("GL101", "sub%20dir/double.py"), ("GL205", "evaluate.py"),
                       ("syntax-error", "broken.py")}
    rules = sarif_run["tool"]["driver"]["rules"]
    gl205 = next(r for r in sarif_run["results"] if r["ruleId"] == "GL205")
    assert gl205["level"] == "note" and rules[gl205["ruleIndex"]]["id"] == "GL205"
    assert "What torch says" in rules[0]["help"]["markdown"]


def _time_boxed(project: Path, fmt: str) -> subprocess.CompletedProcess:
    """A check whose time box is over as soon as the analysis starts (the budget patched to 0)."""
    code = ("import sys, graphlife.checker as c; c.check_source.__kwdefaults__['time_budget'] = 0.0\n"
            "import graphlife.cli as cli; sys.exit(cli.main(sys.argv[1:]))")
    (project / "big.py").write_text(generate(300))
    return subprocess.run([sys.executable, "-c", code, "check", "--no-cache", "--output-format", fmt, "big.py"],
                          capture_output=True, text=True, cwd=project, timeout=180, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_a_file_analyzed_in_part_says_so_in_json_and_sarif(project: Path) -> None:
    as_json = json.loads(_time_boxed(project, "json").stdout)
    assert any(note["path"] == "big.py" and "time box" in note["message"] for note in as_json["notes"])
    log = json.loads(_time_boxed(project, "sarif").stdout)
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    notes = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert any("time box" in note["message"]["text"] for note in notes)


def test_unknown_codes_are_a_usage_error(project: Path) -> None:
    proc = run("check", "--no-cache", "--select", "GL999", "double.py", cwd=project)
    assert proc.returncode == 2
    assert "--select GL999: no rule has this code or prefix" in proc.stderr
    (project / "pyproject.toml").write_text('[tool.graphlife]\nignore = ["GL1O1"]\n')  # a letter O, not a zero
    typo = run("check", "--no-cache", "double.py", cwd=project)
    assert typo.returncode == 2
    assert f"{project / 'pyproject.toml'}: `GL1O1` is not a graphlife rule code" in typo.stderr


def test_output_into_a_closed_pipe_ends_quietly(project: Path) -> None:
    for index in range(40):
        (project / f"copy_{index}.py").write_text(DOUBLE_BACKWARD)
    command = f"{sys.executable} -m graphlife check --no-cache . | head -n 1"
    proc = subprocess.run(command, shell=True, capture_output=True, text=True, cwd=project, timeout=180, check=False)
    assert proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr


def test_version_names_the_torch_of_the_op_table() -> None:
    for flag in ("--version", "-V"):
        proc = run(flag)
        assert proc.returncode == 0
        assert proc.stdout.startswith("graphlife ") and "op table measured with torch 2." in proc.stdout
