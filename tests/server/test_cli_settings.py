"""Settings as ruff users expect them: flags over pyproject, layered rule selection, exclusions,
per-file ignores, .gitignore, nested projects, --config, one warning per run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import DOUBLE_BACKWARD, EVAL_WITHOUT_NO_GRAD, run


def codes(*args: str, cwd: Path) -> list[tuple[str, str]]:
    """(file, code) of each finding of `graphlife check --output-format json ARGS`, sorted."""
    proc = run("check", "--no-cache", "--output-format", "json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((Path(f["path"]).as_posix(), f["code"]) for f in json.loads(proc.stdout)["findings"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "double.py").write_text(DOUBLE_BACKWARD)
    (tmp_path / "evaluate.py").write_text(EVAL_WITHOUT_NO_GRAD)
    return tmp_path


def test_flags_win_over_pyproject(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphlife]\nselect = ["GL2"]\n')
    assert codes(".", cwd=project) == [("evaluate.py", "GL205")]
    assert codes("--select", "GL101", ".", cwd=project) == [("double.py", "GL101")]


def test_extend_select_adds_to_the_selection_of_pyproject(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphlife]\nselect = ["GL2"]\n')
    assert codes("--extend-select", "GL101", ".", cwd=project) == [("double.py", "GL101"), ("evaluate.py", "GL205")]
    (project / "pyproject.toml").write_text('[tool.graphlife]\nextend-select = ["GL101"]\n')
    # without a select, extend-select adds to every rule: it does not narrow the run to GL101
    assert codes(".", cwd=project) == [("double.py", "GL101"), ("evaluate.py", "GL205")]


def test_a_repeated_select_adds_up_as_in_ruff(project: Path) -> None:
    assert codes("--select", "GL101", "--select", "GL205", ".", cwd=project) == [
        ("double.py", "GL101"), ("evaluate.py", "GL205")]
    # inside one layer the more specific code wins: GL205 is ignored, GL1 stays selected
    assert codes("--select", "GL1,GL2", "--ignore", "GL205", ".", cwd=project) == [("double.py", "GL101")]
    assert codes("--select", "GL101,GL205", "--ignore", "GL2", ".", cwd=project) == [
        ("double.py", "GL101"), ("evaluate.py", "GL205")]


def test_a_nested_pyproject_without_a_section_keeps_the_root_settings(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphlife]\nignore = ["GL101"]\n')
    package = project / "packages" / "model"
    package.mkdir(parents=True)
    (package / "pyproject.toml").write_text('[project]\nname = "model"\nversion = "0.1"\n')
    (package / "train.py").write_text(DOUBLE_BACKWARD)
    assert codes("packages", cwd=project) == []
    (package / "pyproject.toml").write_text('[project]\nname = "model"\n\n[tool.graphlife]\nselect = ["GL1"]\n')
    assert codes("packages", cwd=project) == [("packages/model/train.py", "GL101")]  # its own section wins


def test_exclude_extend_exclude_and_force_exclude(project: Path) -> None:
    (project / "generated").mkdir()
    (project / "generated" / "model_pb2.py").write_text(DOUBLE_BACKWARD)
    (project / ".venv").mkdir()
    (project / ".venv" / "vendored.py").write_text(DOUBLE_BACKWARD)
    (project / "pyproject.toml").write_text('[tool.graphlife]\nextend-exclude = ["generated/"]\n')
    assert codes(".", cwd=project) == [("double.py", "GL101"), ("evaluate.py", "GL205")]  # .venv: a default
    # a file named on the command line is checked, unless --force-exclude (what pre-commit passes)
    assert codes("generated/model_pb2.py", cwd=project) == [("generated/model_pb2.py", "GL101")]
    assert codes("--force-exclude", "generated/model_pb2.py", cwd=project) == []
    # `exclude` replaces the defaults (.venv is walked); pyproject's extend-exclude still applies
    assert codes("--exclude", "evaluate.py", ".", cwd=project) == [(".venv/vendored.py", "GL101"),
                                                                    ("double.py", "GL101")]


def test_per_file_ignores(project: Path) -> None:
    (project / "tests").mkdir()
    (project / "tests" / "test_double.py").write_text(DOUBLE_BACKWARD)
    (project / "pyproject.toml").write_text('[tool.graphlife.per-file-ignores]\n"tests/*" = ["GL1"]\n'
                                            '"evaluate.py" = ["GL205"]\n')
    assert codes(".", cwd=project) == [("double.py", "GL101")]


def test_gitignore_is_respected_in_a_git_repository(project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    for rel in ("outputs/run1/train.py", "wandb/latest/code.py", "proto/model_pb2.py", "proto/keep_pb2.py"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(DOUBLE_BACKWARD)
    (project / ".gitignore").write_text("# experiment output\noutputs/\nwandb\n")
    (project / "proto" / ".gitignore").write_text("*_pb2.py\n!keep_pb2.py\n")
    found = codes(".", cwd=project)
    assert [path for path, _ in found] == ["double.py", "evaluate.py", "proto/keep_pb2.py"]
    everything = codes("--no-respect-gitignore", ".", cwd=project)
    assert {path for path, _ in everything} >= {"outputs/run1/train.py", "wandb/latest/code.py", "proto/model_pb2.py"}


def test_config_file_and_inline_settings(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphlife]\nignore = ["GL205"]\n')
    (project / "ci.toml").write_text('[tool.graphlife]\nignore = ["GL101"]\n')
    assert codes("--config", "ci.toml", ".", cwd=project) == [("evaluate.py", "GL205")]
    assert codes("--config", "ignore = ['GL101']", ".", cwd=project) == []  # a layer over pyproject's
    assert codes("--isolated", ".", cwd=project) == [("double.py", "GL101"), ("evaluate.py", "GL205")]
    missing = run("check", "--config", "nope.toml", ".", cwd=project)
    assert missing.returncode == 2 and "--config nope.toml: no such settings file" in missing.stderr


def test_an_unknown_setting_is_reported_once_per_run(project: Path) -> None:
    for index in range(5):
        (project / f"copy_{index}.py").write_text(DOUBLE_BACKWARD)
    (project / "pyproject.toml").write_text('[tool.graphlife]\nselct = ["GL1"]\n')
    proc = run("check", "--no-cache", ".", cwd=project)
    assert proc.stderr.count("unknown setting `selct`") == 1, proc.stderr
    payload = json.loads(run("check", "--no-cache", "--output-format", "json", ".", cwd=project).stdout)
    assert [note["message"] for note in payload["notes"] if "selct" in note["message"]] == [
        f"{project / 'pyproject.toml'}: unknown setting `selct`; ignored"]


def test_a_run_that_finds_no_file_says_so(project: Path) -> None:
    (project / "outputs").mkdir()
    proc = run("check", "--no-cache", "--extend-exclude", "outputs", "outputs", cwd=project)
    assert proc.returncode == 0
    assert "All checks passed (0 files)." in proc.stdout
    assert "no Python files or notebooks found" in proc.stderr
