"""`python -m graphlife` as a user runs it, for the run-time tools' tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"


def graphlife_command(*argv: str, cwd: str | os.PathLike[str] | None = None,
                      timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m graphlife ARGS`` as a user runs it (this tree's graphlife first on the path)."""
    env = dict(os.environ, PYTHONPATH=str(SERVER), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "graphlife", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
