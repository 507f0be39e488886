"""`graphlife check` on a project of several modules, as a user runs it: where findings
land, one finding per statement however many files reach it, and the cache on disk."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

LAYERS = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = torch.sigmoid(self.fc(x))
            h.mul_(2)
            return h.sum()
    """)
TRAIN = textwrap.dedent("""\
    import torch
    from layers import Block

    model = Block()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(2, 4))
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphlife", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "layers.py").write_text(LAYERS)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "evaluate.py").write_text(TRAIN.replace("for step in range(3)", "for step in range(2)"))
    return tmp_path


def findings(result: subprocess.CompletedProcess) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["code"]) for f in json.loads(result.stdout)["findings"]]


def test_a_folder_reports_the_bug_once_in_the_file_where_it_is(tmp_path: Path) -> None:
    result = run("check", "--format", "json", ".", cwd=project(tmp_path))
    assert result.returncode == 1
    assert findings(result) == [("layers.py", 12, "GL102")]  # reached from train.py and evaluate.py


def test_checking_the_entry_alone_reports_the_bug_it_reaches_elsewhere(tmp_path: Path) -> None:
    result = run("check", "train.py", cwd=project(tmp_path))
    assert result.returncode == 1
    assert result.stdout.startswith("layers.py:12:9: GL102 error:")
    assert "train.py:9: this backward needs the saved value" in result.stdout
    assert "in 1 file." in result.stdout  # one file was checked


def test_the_cache_is_reused_until_an_imported_module_changes(tmp_path: Path) -> None:
    root = project(tmp_path)
    first = run("check", "--format", "json", ".", cwd=root)
    cache = root / ".graphlife_cache"
    assert (cache / ".gitignore").read_text().strip().endswith("*")
    assert (cache / "CACHEDIR.TAG").exists()
    assert findings(run("check", "--format", "json", ".", cwd=root)) == findings(first)
    # The bug is fixed in the imported module only: no file that imports it may answer from the cache.
    (root / "layers.py").write_text(LAYERS.replace("h.mul_(2)", "h = h * 2"))
    fixed = run("check", "--format", "json", "train.py", cwd=root)
    assert fixed.returncode == 0, fixed.stdout
    assert findings(fixed) == []


def test_no_cache_writes_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    result = run("check", "--no-cache", ".", cwd=root)
    assert result.returncode == 1
    assert not (root / ".graphlife_cache").exists()
