"""Run a fixture project the way a user does, inside one child process, and measure it: the oracle's eyes on projects.

A project's modules (``models``, ``utils``, ``trainer`` ...) would collide in the
test worker's ``sys.modules`` with every other project's, so each project runs
in its own process::

    python project_child.py PROJECT_DIR (--script train.py | --module pkg.train --entry FILE) [--measure]

with cwd = PROJECT_DIR and PYTHONPATH = the project's ``pythonpath`` folders
(the parent, ``oracle.projects``, sets both). The child sets ``sys.path[0]`` as
``python train.py`` (the script's folder) or ``python -m`` (the cwd) would, and
runs the entry with ``runpy``:

* ``plain``: once at the project's default ``STEPS``, torch untouched: the
  exception (class, message, and the traceback's frames inside the project as
  (relative path, line)), or none;
* with ``--measure`` and a clean plain run, under :class:`oracle.leaks.Meter`:
  ``small``/``large`` with ``STEPS`` = 3 and 6 given as initial globals of the
  entry module (graph nodes and saved tensors alive, torch calls), and
  ``steps`` at the default ``STEPS`` (what each ``optimizer.step()`` applies
  against the fresh gradient of the backward calls before it).

Between runs the project's modules are dropped from ``sys.modules``, so every
run imports them anew (module-level models and optimizers included), as a new
process would. The result is one JSON line on stdout after ``RESULT_PREFIX``.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULT_PREFIX = "GRAPHLIFE-PROJECT-RESULT "
N_SMALL, N_LARGE = 3, 6
_TESTS_DIR = Path(__file__).resolve().parent.parent


def _import_meter() -> Any:
    """``oracle.leaks`` from the tests folder, which then leaves ``sys.path`` (the project must not see it)."""
    here = str(Path(__file__).resolve().parent)
    sys.path.insert(0, str(_TESTS_DIR))
    try:
        from oracle import leaks
    finally:
        sys.path[:] = [entry for entry in sys.path if entry not in (str(_TESTS_DIR), here)]
    return leaks


def _under(path: str | None, root: Path) -> bool:
    return bool(path) and Path(path).resolve().is_relative_to(root)


def _forget_project_modules(root: Path) -> None:
    for name, module in list(sys.modules.items()):
        if _under(getattr(module, "__file__", None), root):
            del sys.modules[name]


def _executor(
    root: Path, script: str | None, module: str | None, module_file: Path | None
) -> tuple[Path, Callable[[dict[str, Any]], dict]]:
    """The entry file and how to run it with given initial globals, as ``python`` would."""
    if script is not None:
        entry = (root / script).resolve()
        sys.path.insert(0, str(entry.parent))

        def run(globals_in: dict[str, Any]) -> dict:
            _forget_project_modules(root)
            sys.argv = [str(entry)]
            return runpy.run_path(str(entry), init_globals=globals_in, run_name="__main__")

        return entry, run
    assert module is not None and module_file is not None
    sys.path.insert(0, os.getcwd())
    entry = module_file.resolve()

    def run_module(globals_in: dict[str, Any]) -> dict:
        _forget_project_modules(root)
        return runpy.run_module(module, init_globals=globals_in, run_name="__main__", alter_sys=True)

    return entry, run_module


def _plain(root: Path, run: Callable[[dict[str, Any]], dict]) -> dict[str, Any]:
    """One unmeasured run: what the user sees, in structured form."""
    try:
        run({})
    except Exception as exc:  # noqa: BLE001 - any exception is the verdict the parent judges
        frames = [
            [Path(frame.filename).resolve().relative_to(root).as_posix(), frame.lineno]
            for frame in traceback.extract_tb(exc.__traceback__)
            if _under(frame.filename, root)
        ]
        return {"exc_type": type(exc).__name__, "exc_message": str(exc), "frames": frames,
                "traceback": "".join(traceback.format_exception(exc))[-3000:]}
    return {"exc_type": None, "exc_message": "", "frames": [], "traceback": ""}


def _measure(leaks: Any, entry: Path, run: Callable[[dict[str, Any]], dict], **kwargs: Any) -> dict[str, Any]:
    m = leaks.run_measured(entry, execute=run, **kwargs)
    return {
        "raised": m.outcome.describe() if m.outcome.raised or m.outcome.timed_out else None,
        "summary": m.summary(),
        "peak_nodes": m.peak_nodes,
        "peak_saved": m.peak_saved,
        "torch_calls": m.torch_calls,
        "steps": [
            {"index": s.index, "optimizer": s.optimizer, "fresh_norm": s.fresh_norm,
             "applied_norm": s.applied_norm, "scale": s.scale(), "residual": s.residual(),
             "applies_fresh_gradient": s.applies_fresh_gradient(), "applies_nothing": s.applies_nothing()}
            for s in m.steps
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    entry_kind = parser.add_mutually_exclusive_group(required=True)
    entry_kind.add_argument("--script")
    entry_kind.add_argument("--module")
    parser.add_argument("--entry", type=Path, help="with --module: the module's file (for the outcome's frames)")
    parser.add_argument("--measure", action="store_true")
    args = parser.parse_args(argv)
    root = args.project.resolve()

    leaks = _import_meter()
    import torch

    torch.set_num_threads(1)
    # The first optimizer built in a process imports torch._dynamo (about 1.5 s): not the project's time.
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    if args.module and args.entry is None:
        parser.error("--module needs --entry FILE")
    entry, run = _executor(root, args.script, args.module, args.entry)
    result: dict[str, Any] = {"plain": _plain(root, run), "measures": {}}
    if args.measure and result["plain"]["exc_type"] is None:
        measures = result["measures"]
        measures["small"] = _measure(leaks, entry, run, globals_in={"STEPS": N_SMALL})
        measures["large"] = _measure(leaks, entry, run, globals_in={"STEPS": N_LARGE})
        measures["steps"] = _measure(leaks, entry, run, saved=None, nodes=False, optim=True)
    sys.stdout.write("\n" + RESULT_PREFIX + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
