"""`graphlife check|fix|rules` as a user runs it: formats, exit codes, settings, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DOUBLE_BACKWARD = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()
    """)
MANUAL_SGD = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    (w * w).sum().backward()
    w -= 0.1 * w.grad
    """)
CLEAN = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    (w * w).sum().backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    """)


def run(*args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphlife", *args], capture_output=True, text=True,
                          cwd=cwd, input=stdin, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "double.py").write_text(DOUBLE_BACKWARD)
    (tmp_path / "sgd.py").write_text(MANUAL_SGD)
    (tmp_path / "clean.py").write_text(CLEAN)
    venv = tmp_path / ".venv" / "lib"
    venv.mkdir(parents=True)
    (venv / "vendored.py").write_text(DOUBLE_BACKWARD)  # must be skipped
    return tmp_path


def test_text_output_names_file_line_code_and_marks_the_span(project: Path) -> None:
    proc = run("check", str(project / "double.py"))
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"{project / 'double.py'}:6:1: GL101 error: ")
    assert "already freed" in first
    assert "    6 | loss.backward()" in proc.stdout
    assert "^^^^^^^^^^^^^^^" in proc.stdout
    assert "\x1b[" not in proc.stdout  # no colours when not on a terminal
    assert "Found 1 problem (1 error) in 1 file." in proc.stdout


def test_json_output_has_the_documented_shape(project: Path) -> None:
    proc = run("check", "--format", "json", str(project))
    assert proc.returncode == 1
    payload = json.loads(proc.stdout)
    assert payload["version"]
    by_file = {(Path(f["path"]).name, f["code"]) for f in payload["findings"]}
    assert by_file == {("double.py", "GL101"), ("sgd.py", "GL103")}
    finding = next(f for f in payload["findings"] if f["code"] == "GL103")
    assert finding["line"] == 5 and finding["column"] == 1 and finding["end_line"] == 5
    assert finding["severity"] == "error" and finding["name"] == "inplace-on-leaf-requiring-grad"
    assert finding["related"] and {"line", "column", "message"} <= set(finding["related"][0])


def test_clean_file_exits_zero(project: Path) -> None:
    proc = run("check", str(project / "clean.py"))
    assert proc.returncode == 0, proc.stdout
    assert "All checks passed" in proc.stdout


def test_select_and_ignore(project: Path) -> None:
    only_101 = json.loads(run("check", "--format", "json", "--select", "GL101", str(project)).stdout)
    assert {f["code"] for f in only_101["findings"]} == {"GL101"}
    no_1xx = run("check", "--ignore", "GL1", str(project))
    assert no_1xx.returncode == 0


def test_pyproject_settings_apply(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphlife]\nignore = ["GL103"]\nseverity = {GL101 = "warning"}\n')
    payload = json.loads(run("check", "--format", "json", str(project)).stdout)
    assert [(f["code"], f["severity"]) for f in payload["findings"]] == [("GL101", "warning")]


def test_ignore_comment_silences_a_line(project: Path) -> None:
    path = project / "double.py"
    twice = "loss.backward()\nloss.backward()"
    path.write_text(DOUBLE_BACKWARD.replace(twice, twice + "  # graphlife: ignore[GL101]"))
    assert run("check", str(path)).returncode == 0
    path.write_text(DOUBLE_BACKWARD.replace(twice, twice + "  # graphlife: ignore[GL2]"))
    assert run("check", str(path)).returncode == 1  # another family's ignore does not hide GL101


def test_missing_path_is_a_usage_error_but_others_are_checked(project: Path) -> None:
    proc = run("check", str(project / "nope.py"), str(project / "double.py"))
    assert proc.returncode == 2
    assert "no such file" in proc.stderr
    assert "GL101" in proc.stdout


def test_binary_and_undecodable_files_get_a_message(project: Path) -> None:
    (project / "blob.py").write_bytes(b"\x00\x01\x02binary")
    (project / "latin.py").write_bytes(b"x = '\xe9'\n")
    proc = run("check", str(project / "blob.py"), str(project / "latin.py"), str(project / "double.py"))
    assert proc.returncode == 2
    assert "blob.py: cannot read: binary file" in proc.stderr
    assert "latin.py: cannot read" in proc.stderr
    assert "GL101" in proc.stdout


def test_syntax_error_in_one_block_keeps_the_others(project: Path) -> None:
    source = DOUBLE_BACKWARD + "\n\ndef broken(:\n    pass\n"
    path = project / "partly_broken.py"
    path.write_text(source)
    proc = run("check", str(path))
    assert proc.returncode == 1
    assert "syntax error" in proc.stdout
    assert "GL101" in proc.stdout


def test_a_file_with_only_a_syntax_error_is_not_all_clear(project: Path) -> None:
    path = project / "py2.py"
    path.write_text("import torch\nprint 'hello'\n")
    text = run("check", str(path))
    assert text.returncode == 1
    assert "All checks passed" not in text.stdout
    assert "Found 1 problem (1 syntax error)" in text.stdout
    machine = run("check", "--format", "json", str(path))
    assert machine.returncode == 1
    payload = json.loads(machine.stdout)
    assert payload["findings"] == []
    assert [(e["line"], e["path"]) for e in payload["syntax_errors"]] == [(2, str(path))]


def _notebook(cells: list[str | tuple[str, str]]) -> str:
    """The JSON of a notebook with these cells: the text of a code cell, or (cell type, text)."""
    out = []
    for cell in cells:
        kind, text = cell if isinstance(cell, tuple) else ("code", cell)
        entry: dict = {"cell_type": kind, "source": text, "metadata": {}}
        if kind == "code":
            entry.update(outputs=[], execution_count=None)
        out.append(entry)
    return json.dumps({"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_notebook_shell_escapes_inside_blocks_keep_the_cell(tmp_path: Path) -> None:
    """An indented `!pip`, a `files = !ls` or a `model?` is IPython, not Python: it must not
    cost the rest of its cell (the cell would be left out as a syntax error)."""
    cells = [
        "import torch\nif True:\n    !pip install tqdm\nfiles = !ls\ntorch.nn?\n"
        "w = torch.randn(3, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()\n",
    ]
    path = tmp_path / "magics.ipynb"
    path.write_text(_notebook(cells))
    payload = json.loads(run("check", "--format", "json", str(path)).stdout)
    assert payload["syntax_errors"] == []
    assert [(f["code"], f["cell"], f["cell_line"]) for f in payload["findings"]] == [("GL101", 1, 9)]


def test_notebook_lines_continuing_a_statement_are_python_even_when_they_start_with_percent(tmp_path: Path) -> None:
    """`%` at the start of a line inside an open bracket (old-style formatting split over two
    lines), or inside a triple-quoted string, continues the statement: it is not a magic. A
    public notebook collection lost the training loop of 60 notebooks to this."""
    cells = [
        "import torch\nw = torch.randn(3, requires_grad=True)\n%matplotlib inline\n",
        "for epoch in range(2):\n    loss = (w * w).sum()\n    print('Epoch: %03d | Cost: %.4f'\n"
        "          %(epoch + 1, loss.item()))\n    note = \"\"\"\n%d items\n\"\"\"\n"
        "    loss.backward()\n    loss.backward()\n",
    ]
    path = tmp_path / "formatting.ipynb"
    path.write_text(_notebook(cells))
    payload = json.loads(run("check", "--format", "json", str(path)).stdout)
    assert payload["syntax_errors"] == []
    assert [(f["code"], f["cell"], f["cell_line"]) for f in payload["findings"]] == [("GL101", 2, 9)]


def test_notebook_syntax_errors_name_their_cell(tmp_path: Path) -> None:
    cells = ["import torch\n", "lr = \nprint(lr)\n"]  # an exercise placeholder
    path = tmp_path / "exercise.ipynb"
    path.write_text(_notebook(cells))
    assert f"{path}:cell 2:1:" in run("check", str(path)).stdout
    payload = json.loads(run("check", "--format", "json", str(path)).stdout)
    assert [(e["cell"], e["cell_line"]) for e in payload["syntax_errors"]] == [(2, 1)]


def test_usage_error_exits_two() -> None:
    proc = run("check")
    assert proc.returncode == 2


def test_rules_lists_and_explains() -> None:
    listing = run("rules")
    assert listing.returncode == 0
    assert "GL101  backward-through-freed-graph" in listing.stdout
    explained = run("rules", "GL102")
    assert "## What torch says" in explained.stdout and "modified by an inplace operation" in explained.stdout


def test_virtualenv_folders_are_skipped(project: Path) -> None:
    payload = json.loads(run("check", "--format", "json", str(project)).stdout)
    assert not any(".venv" in f["path"] for f in payload["findings"])


def test_many_files_are_checked_in_parallel(project: Path) -> None:
    for index in range(12):
        (project / f"copy_{index}.py").write_text(DOUBLE_BACKWARD)
    payload = json.loads(run("check", "--format", "json", str(project)).stdout)
    assert sum(1 for f in payload["findings"] if f["code"] == "GL101") == 13


def test_notebook_findings_name_cells_as_the_editor_counts_them(tmp_path: Path) -> None:
    """Markdown cells count (the editor numbers every cell), and the lines a message names are
    lines of their cells, not of the joined source the engine analyzed."""
    cells = [
        ("markdown", "# Training\n"),
        ("code", "import torch\nw = torch.randn(3, requires_grad=True)\n"),
        ("markdown", "Now the loss:\n"),
        ("code", "loss = (w * w).sum()\nloss.backward()\n"),
        ("code", "loss.backward()\n"),
    ]
    path = tmp_path / "train.ipynb"
    path.write_text(_notebook(cells))
    proc = run("check", str(path))
    assert f"{path}:cell 5:1:1: GL101 error" in proc.stdout
    assert "line 2 (cell 4)" in proc.stdout  # the backward that freed the graph
    payload = json.loads(run("check", "--format", "json", str(path)).stdout)
    [finding] = payload["findings"]
    assert (finding["cell"], finding["cell_line"]) == (5, 1)
    assert "line 2 (cell 4)" in finding["message"] and "line 4 " not in finding["message"]


def test_notebook_cells_are_checked_together(tmp_path: Path) -> None:
    cells = [
        "import torch\nw = torch.randn(3, requires_grad=True)\n",
        "%matplotlib inline\nloss = (w * w).sum()\nloss.backward()\n",
        "loss.backward()\n",
    ]
    path = tmp_path / "train.ipynb"
    path.write_text(_notebook(cells))
    proc = run("check", str(tmp_path))
    assert proc.returncode == 1
    assert f"{path}:cell 3:1:1: GL101 error" in proc.stdout
    payload = json.loads(run("check", "--format", "json", str(path)).stdout)
    assert [(f["cell"], f["cell_line"], f["code"]) for f in payload["findings"]] == [(3, 1, "GL101")]
