"""`graphlife fix` never damages a user's file, and odd files never stop a run.

A fix keeps the file's encoding, BOM and newlines, and changes only the lines it fixes; a
failed write leaves the file as it was; a read-only file is reported and skipped; a pipe
named `*.py` and a notebook nested too deeply are reported, and the other files are checked.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphlife import source_files

MANUAL_SGD = textwrap.dedent("""\
    # -*- coding: latin-1 -*-
    # Poids appris à la main : é, ü, ß
    import torch

    w = torch.randn(3, requires_grad=True)
    (w * w).sum().backward()
    w -= 0.1 * w.grad
    print("fini")
    """)
DOUBLE_BACKWARD = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()
    """)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphlife", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def _changed_lines(before: bytes, after: bytes) -> list[int]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return [index for index, (a, b) in enumerate(zip(old, new)) if a != b]


@pytest.mark.parametrize(("encoding", "newline", "bom"), [
    ("latin-1", "\n", b""),
    ("utf-8", "\r\n", b""),
    ("utf-8", "\n", b"\xef\xbb\xbf"),
])
def test_a_fix_keeps_encoding_bom_and_newlines_and_changes_only_its_lines(tmp_path, encoding, newline, bom):
    text = MANUAL_SGD if encoding == "latin-1" else MANUAL_SGD.replace("latin-1", "utf-8")
    original = bom + text.replace("\n", newline).encode(encoding)
    path = tmp_path / "train.py"
    path.write_bytes(original)
    result = run("fix", "--no-cache", "train.py", cwd=tmp_path)
    assert "fixed train.py" in result.stderr, result.stderr
    fixed = path.read_bytes()
    assert fixed.startswith(bom) and fixed != original
    decoded = fixed[len(bom):].decode(encoding)
    assert "Poids appris à la main : é, ü, ß" in decoded  # not mojibake
    assert decoded.count("\n") == decoded.count(newline)  # every newline as it was
    # Only the lines around the in-place update changed; the header and the end are byte-identical.
    old_lines = original.splitlines(keepends=True)
    assert fixed.splitlines(keepends=True)[:6] == old_lines[:6]
    assert fixed.splitlines(keepends=True)[-1] == old_lines[-1]


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "train.py"
    path.write_text(MANUAL_SGD.replace("latin-1", "utf-8"), encoding="utf-8")
    before = path.read_bytes()

    def full_disk(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(source_files.os, "replace", full_disk)
    with pytest.raises(OSError):
        source_files.write_fixed_source(str(path), "import torch\n", "utf-8")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temporary file left behind


def test_a_read_only_file_is_reported_and_the_others_are_fixed(tmp_path):
    locked, open_ = tmp_path / "a_locked.py", tmp_path / "b_open.py"
    locked.write_text(MANUAL_SGD.replace("latin-1", "utf-8"), encoding="utf-8")
    open_.write_text(MANUAL_SGD.replace("latin-1", "utf-8"), encoding="utf-8")
    before = locked.read_bytes()
    locked.chmod(0o444)
    try:
        result = run("fix", "--no-cache", ".", cwd=tmp_path)
    finally:
        locked.chmod(0o644)
    assert "a_locked.py: cannot write the fix: the file is read-only; not fixed" in result.stderr
    assert "Traceback" not in result.stderr
    assert "fixed b_open.py" in result.stderr
    assert locked.read_bytes() == before
    assert result.returncode == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_named_py_is_reported_not_waited_for(tmp_path):
    os.mkfifo(tmp_path / "stream.py")
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD, encoding="utf-8")
    result = run("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert "stream.py: cannot read: not a regular file" in result.stderr
    assert [f["path"] for f in json.loads(result.stdout)["findings"]] == ["train.py"]


def test_a_notebook_nested_too_deeply_does_not_end_the_run(tmp_path):
    depth = 200_000
    (tmp_path / "deep.ipynb").write_text("[" * depth + "]" * depth, encoding="utf-8")
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD, encoding="utf-8")
    result = run("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert "deep.ipynb: cannot read: not a readable notebook" in result.stderr
    assert [f["path"] for f in json.loads(result.stdout)["findings"]] == ["train.py"]
