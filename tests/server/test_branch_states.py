"""An ``if`` the engine cannot decide: each branch starts from the state before it, and
what follows sees both.

The engine runs the ``then`` branch on a copy and the ``else`` branch on the state itself
(one copy fewer per undecided ``if``). That is right only while nothing the ``then``
branch does shows in the ``else`` branch, and the join after them keeps what each did.
This program is judged by torch on both paths.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graphlife.checker import check_source

PROGRAM = """\
import sys

import torch
import torch.nn as nn


class Box:
    pass


model = nn.Linear(4, 1)
box = Box()
box.loss = model(torch.randn(8, 4)).sum()
loss = box.loss
if len(sys.argv) > 1:
    loss.backward()
    box.loss = loss.detach()
else:
    box.loss.backward()
loss.backward()
"""
BOTH_PATHS_RAISE_AT = 20


def test_the_else_branch_does_not_see_the_then_branch_and_the_join_sees_both() -> None:
    """Had the ``then`` branch's backward or its ``box.loss = loss.detach()`` leaked into the
    ``else`` branch, line 19 would be reported (a second backward, or one of a tensor without
    a graph); had the join lost either branch's backward, line 20 would not be an error."""
    findings = check_source(PROGRAM).findings
    assert [(f.code, f.span.line, f.severity.value) for f in findings] == [("GL101", BOTH_PATHS_RAISE_AT, "error")]


@pytest.mark.parametrize("arguments", [[], ["then"]])
def test_torch_raises_at_the_same_line_on_both_paths(tmp_path: Path, arguments: list[str]) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    run = subprocess.run([sys.executable, str(script), *arguments], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode != 0
    assert f'program.py", line {BOTH_PATHS_RAISE_AT}' in run.stderr
    assert "backward through the graph a second time" in run.stderr
