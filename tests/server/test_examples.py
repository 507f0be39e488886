"""The README's examples: torch's truth for each, and the checker flags exactly the buggy ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUGGY = {
    "gan_without_detach.py": ("GL101", "Trying to backward through the graph a second time"),
    "lstm_hidden_carried.py": ("GL101", "Trying to backward through the graph a second time"),
    "inplace_after_sigmoid.py": ("GL102", "modified by an inplace operation"),
    "backward_under_no_grad.py": ("GL104", "element 0 of tensors does not require grad"),
}
FIXED = ["gan_fixed.py", "lstm_fixed.py", "inplace_fixed.py", "backward_fixed.py"]


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_buggy_example_raises_under_torch(name):
    pytest.importorskip("torch")
    from oracle.runner import run_fixture  # torch imported once per worker, not per example

    outcome = run_fixture(EXAMPLES / name)
    assert outcome.raised, outcome.describe()
    assert BUGGY[name][1] in outcome.exc_message


@pytest.mark.parametrize("name", FIXED)
def test_fixed_example_runs_clean(name):
    pytest.importorskip("torch")
    from oracle.runner import run_fixture

    outcome = run_fixture(EXAMPLES / name)
    assert not outcome.raised, outcome.describe()


def test_checker_flags_exactly_the_buggy_examples():
    proc = subprocess.run(
        [sys.executable, "-m", "graphlife", "check", "--format", "json", str(EXAMPLES)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    flagged = {(Path(f["path"]).name, f["code"]) for f in findings}
    assert flagged == {(name, code) for name, (code, _) in BUGGY.items()}
    assert all(f["severity"] == "error" for f in findings)
