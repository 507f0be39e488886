"""The pre-commit hook of `.pre-commit-hooks.yaml`, run by pre-commit itself on a scratch
repository, from a clean clone of this one.

pre-commit builds the hook's environment as it does for any user: a virtualenv with the
repository installed from its root by pip, so this test needs a package index (PyPI, or
the mirror pip is configured with) for setuptools and pathspec. The environment lives in
the test's own PRE_COMMIT_HOME and is built once per test (about half a minute; the fix hook's
environment also installs libcst).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from clean_clone import clean_clone, git

DOUBLE_BACKWARD = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()
    """)
CLEAN = "import torch\n\nw = torch.randn(3, requires_grad=True)\n(w * w).sum().backward()\n"


def test_the_hook_runs_from_a_clean_clone_and_reports_only_checked_files(tmp_path: Path) -> None:
    hooks = clean_clone(tmp_path / "graphlife")
    project = tmp_path / "project"
    (project / "generated").mkdir(parents=True)
    (project / "train.py").write_text(DOUBLE_BACKWARD)
    (project / "clean.py").write_text(CLEAN)
    (project / "generated" / "model_pb2.py").write_text(DOUBLE_BACKWARD)  # excluded by the settings
    (project / "pyproject.toml").write_text('[tool.graphlife]\nextend-exclude = ["generated/"]\n')
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {git(hooks, 'rev-parse', 'HEAD')}\n    hooks:\n      - id: graphlife\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")

    def pre_commit(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pre_commit", "run", *args], cwd=project, capture_output=True,
                              text=True, timeout=900, env=env, check=False)

    everything = pre_commit("--all-files")
    assert everything.returncode == 1, everything.stdout + everything.stderr
    assert "train.py:6:1: GL101 error" in everything.stdout
    assert "model_pb2.py" not in everything.stdout  # --force-exclude keeps `extend-exclude` in force
    clean = pre_commit("--files", "clean.py")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "graphlife" in clean.stdout and "Passed" in clean.stdout


def test_the_fix_hook_rewrites_the_file_and_fails_the_commit_once(tmp_path: Path) -> None:
    """`graphlife-fix` (its environment adds libcst) applies the preferred fix: pre-commit
    fails the run because the file changed, and the next run passes."""
    hooks = clean_clone(tmp_path / "graphlife")
    project = tmp_path / "project"
    project.mkdir()
    manual_sgd = "import torch\n\nw = torch.randn(3, requires_grad=True)\n(w * w).sum().backward()\nw -= 0.1 * w.grad\n"
    (project / "sgd.py").write_text(manual_sgd)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {git(hooks, 'rev-parse', 'HEAD')}\n    hooks:\n"
        "      - id: graphlife-fix\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    command = [sys.executable, "-m", "pre_commit", "run", "--all-files"]
    first = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=900, env=env, check=False)
    assert first.returncode == 1 and "files were modified by this hook" in first.stdout, first.stdout + first.stderr
    assert "with torch.no_grad():\n    w -= 0.1 * w.grad" in (project / "sgd.py").read_text()
    second = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=900, env=env, check=False)
    assert second.returncode == 0, second.stdout + second.stderr
