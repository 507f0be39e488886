"""Running `graphlife run` in this process (the fixtures) or as a command (what a user types)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[2] / "server"


@pytest.fixture
def run_in_process() -> Callable[..., tuple[int, str, str]]:
    """``graphlife run ARGS`` in this process: (exit status, stdout, stderr); what the program
    changes in ``sys`` is put back, and torch's global state reset."""
    from graphlife.runtime import launcher
    from oracle.runner import reset_torch_state

    def run(*argv: str) -> tuple[int, str, str]:
        saved_argv, saved_path0, hook, main = sys.argv[:], sys.path[0], sys.excepthook, sys.modules["__main__"]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = launcher.main(list(argv))
                except SystemExit as exc:
                    status = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.argv[:], sys.path[0], sys.excepthook = saved_argv, saved_path0, hook
            sys.modules["__main__"] = main
            reset_torch_state()
        return status, out.getvalue(), err.getvalue()

    return run


def graphlife_command(*argv: str, cwd: str | os.PathLike[str] | None = None,
                      timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m graphlife ARGS`` as a user runs it (this tree's graphlife first on the path)."""
    env = dict(os.environ, PYTHONPATH=str(SERVER), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "graphlife", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
