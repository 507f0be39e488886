"""Running `python -m graphlife` as a user does, and the small training scripts the CLI tests check."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

DOUBLE_BACKWARD = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()
    """)
#: GL205 (information): a model in eval mode run without no_grad records graphs for nothing.
EVAL_WITHOUT_NO_GRAD = textwrap.dedent("""\
    import torch

    model = torch.nn.Linear(3, 1)
    model.eval()
    for step in range(3):
        x = torch.randn(4, 3)
        print(model(x).sum().item())
    """)
CLEAN = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    (w * w).sum().backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    """)


def run(*args: str, cwd: Path | None = None, stdin: str | bytes | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m graphlife ARGS` with this interpreter (and its PYTHONPATH)."""
    return subprocess.run([sys.executable, "-m", "graphlife", *args], capture_output=True,
                          text=not isinstance(stdin, bytes), cwd=cwd, input=stdin, timeout=180, env=env, check=False)
