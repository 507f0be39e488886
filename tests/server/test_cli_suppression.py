"""Comments that silence findings: graphlife's own, ruff's and flake8's `# noqa`, and file-level ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import DOUBLE_BACKWARD, run

SECOND = "loss.backward()\nloss.backward()"


def status_with(tmp_path: Path, source: str) -> int:
    path = tmp_path / "train.py"
    path.write_text(source)
    proc = run("check", "--no-cache", str(path))
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode


@pytest.mark.parametrize(("comment", "silenced"), [
    ("# noqa: GL101", True),
    ("# noqa:GL101,E501", True),
    ("# noqa: GL1", True),           # a prefix, as graphlife: ignore[GL1]
    ("# noqa", True),                # bare: everything on the line, as in ruff
    ("# noqa: E501", False),         # another tool's code
    ("# graphlife: ignore[GL101]", True),
    ("# graphlife: ignore[GL2]", False),
    ("# type: ignore  # noqa: GL101", True),
    ("# noqa_later", False),
])
def test_line_comments(tmp_path: Path, comment: str, silenced: bool) -> None:
    source = DOUBLE_BACKWARD.replace(SECOND, f"{SECOND}  {comment}")
    assert status_with(tmp_path, source) == (0 if silenced else 1)


def test_noqa_inside_a_string_is_not_a_comment(tmp_path: Path) -> None:
    source = DOUBLE_BACKWARD.replace(SECOND, "loss.backward()\nloss.backward(); note = '# noqa'")
    assert status_with(tmp_path, source) == 1


@pytest.mark.parametrize(("comment", "silenced"), [
    ("# graphlife: noqa", True),
    ("# graphlife: noqa: GL101", True),
    ("# graphlife: noqa: GL2", False),
    ("# graphlife: ignore-file", True),
    ("# graphlife: ignore-file[GL1]", True),
    ("# graphlife: ignore-file[GL3]", False),
])
def test_file_level_comments(tmp_path: Path, comment: str, silenced: bool) -> None:
    assert status_with(tmp_path, f"{comment}\n{DOUBLE_BACKWARD}") == (0 if silenced else 1)


def test_a_file_level_comment_must_stand_on_its_own_line(tmp_path: Path) -> None:
    source = DOUBLE_BACKWARD.replace("import torch", "import torch  # graphlife: noqa")
    assert status_with(tmp_path, source) == 1
