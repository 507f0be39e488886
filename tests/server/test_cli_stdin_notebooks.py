"""`graphlife check -` (editor integrations that pipe the buffer) and which notebooks are checked."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import CLEAN, DOUBLE_BACKWARD, run


def test_stdin_is_checked_under_its_filename_and_settings(tmp_path: Path) -> None:
    plain = run("check", "-", cwd=tmp_path, stdin=DOUBLE_BACKWARD)
    assert plain.returncode == 1
    assert plain.stdout.startswith("-:6:1: GL101 error")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[tool.graphlife]\nignore = ["GL101"]\n')
    named = run("check", "--output-format", "json", "--stdin-filename", "sub/train.py", "-", cwd=tmp_path,
                stdin=DOUBLE_BACKWARD)
    assert named.returncode == 0 and json.loads(named.stdout)["findings"] == []  # sub's settings
    elsewhere = run("check", "--output-format", "json", "--stdin-filename", "train.py", cwd=tmp_path,
                    stdin=DOUBLE_BACKWARD)
    assert [(f["path"], f["code"]) for f in json.loads(elsewhere.stdout)["findings"]] == [("train.py", "GL101")]


def test_stdin_follows_the_imports_of_the_file_it_stands_for(tmp_path: Path) -> None:
    (tmp_path / "layers.py").write_text("import torch\n\ndef step(loss):\n    loss.backward()\n    loss.backward()\n")
    source = "import torch\nfrom layers import step\n\nw = torch.randn(3, requires_grad=True)\nstep((w * w).sum())\n"
    proc = run("check", "--output-format", "json", "--stdin-filename", "train.py", "-", cwd=tmp_path, stdin=source)
    [finding] = json.loads(proc.stdout)["findings"]
    assert finding["code"] == "GL101" and "line 4 of layers.py" in finding["message"]


def test_fix_of_stdin_prints_the_fixed_source(tmp_path: Path) -> None:
    manual_sgd = CLEAN.replace("with torch.no_grad():\n    w -= 0.1 * w.grad", "w -= 0.1 * w.grad")
    proc = run("check", "--fix", "-", cwd=tmp_path, stdin=manual_sgd)
    assert "with torch.no_grad():" in proc.stdout
    assert proc.returncode == 0, proc.stderr


def test_stdin_cannot_be_mixed_with_paths(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(CLEAN)
    proc = run("check", "-", "a.py", cwd=tmp_path, stdin=CLEAN)
    assert proc.returncode == 2 and "standard input" in proc.stderr
    assert run("check", cwd=tmp_path).returncode == 2


def _notebook(nbformat: int, kernel: dict | None, code: str) -> str:
    metadata = {"kernelspec": kernel} if kernel else {}
    if nbformat == 3:
        return json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": metadata,
                           "worksheets": [{"cells": [{"cell_type": "code", "input": code}]}]})
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": metadata,
                       "cells": [{"cell_type": "code", "source": code, "metadata": {}, "outputs": [],
                                  "execution_count": None}]})


def test_only_nbformat_4_notebooks_of_a_python_kernel_are_checked(tmp_path: Path) -> None:
    python = {"name": "python3", "language": "python", "display_name": "Python 3"}
    (tmp_path / "v4.ipynb").write_text(_notebook(4, python, DOUBLE_BACKWARD))
    (tmp_path / "v3.ipynb").write_text(_notebook(3, python, DOUBLE_BACKWARD))
    (tmp_path / "r.ipynb").write_text(_notebook(4, {"name": "ir", "language": "R"}, "x <- c(1, 2)\nprint(x)\n"))
    proc = run("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    payload = json.loads(proc.stdout)
    assert [(f["path"], f["code"]) for f in payload["findings"]] == [("v4.ipynb", "GL101")]
    assert payload["syntax_errors"] == []  # the R notebook is not read as Python
    notes = {note["path"]: note["message"] for note in payload["notes"]}
    assert notes["v3.ipynb"].startswith("not checked: nbformat 3")
    assert notes["r.ipynb"] == "not checked: the notebook's kernel runs r, not Python"
    text = run("check", "--no-cache", "r.ipynb", cwd=tmp_path)
    assert text.returncode == 0 and "r.ipynb: not checked" in text.stderr


def test_a_notebook_on_stdin(tmp_path: Path) -> None:
    notebook = _notebook(4, None, DOUBLE_BACKWARD)
    proc = run("check", "--stdin-filename", "train.ipynb", "-", cwd=tmp_path, stdin=notebook)
    assert proc.returncode == 1 and "train.ipynb:cell 1:6:1: GL101" in proc.stdout
