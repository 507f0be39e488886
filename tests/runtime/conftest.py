"""`graphlife run` in this process, as the fixture tests run it."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable

import pytest


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
