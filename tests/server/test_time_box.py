"""The time box stops a check cleanly: the user is told the rest of the file was not analyzed,
never that the engine failed, wherever the box runs out (here inside the calls that the module
body runs apart, as `main()`-style scripts do)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from graphlife.checker import check_source

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from generate import generate


@pytest.mark.parametrize("budget", [0.0, 0.05, 0.2])
def test_time_box_is_a_note_not_an_engine_error(budget: float) -> None:
    result = check_source(generate(5000), "train.py", time_budget=budget)
    assert not any("internal error" in note for note in result.notes), result.notes
    assert any("time box" in note for note in result.notes), result.notes
