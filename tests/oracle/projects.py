"""What torch says about a fixture project, run as its user runs it, and whether that is what the project claims.

Two views of each project, both in child processes (a project's ``models.py``
must not meet another project's in one ``sys.modules``):

* :func:`run_as_user`: literally ``python train.py`` or ``python -m pkg.train``
  with cwd = the project folder and PYTHONPATH = its ``pythonpath`` folders and
  nothing else: the exit status and the text the user reads;
* :func:`run_observed`: ``oracle/project_child.py`` runs the same entry the same
  way, reports an exception with its frames in the project's files and, on
  request, measures leaks and optimizer steps with ``oracle.leaks.Meter``.

:func:`check_bad` and :func:`check_good` turn the two into problems (an empty
list: torch agrees with the project's ``fixture.toml``). The verdicts:

raises      both views raise ``exception`` with ``error`` in its message; with
            ``raises_on_marker`` (the default) the innermost frame in the
            project's files is a marked line (GL101/GL103/GL104 raise on the
            wrong statement itself; for GL102 torch raises at the backward).
leaks       STEPS = 3 vs 6: the peak of live graph nodes grows by at least one
            per extra iteration (as GL201's and GL203's single-file truths).
wrong_grad  some ``optimizer.step()`` applies something other than the fresh
            gradient of the backward calls since that parameter's last step
            (zeros: GL301; stale gradients on top: GL302), at most uniformly
            scaled down (clipping is fine).
good        exit 0, no traceback, peaks of graph nodes and saved tensors flat
            from STEPS = 3 to 6, at least one optimizer step and every step
            applying its fresh gradient.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixturelib import Project
from oracle.project_child import N_LARGE, N_SMALL, RESULT_PREFIX

CHILD = Path(__file__).resolve().parent / "project_child.py"
#: A project runs in well under 2 s after torch's import; this only stops a runaway one on a loaded machine.
TIMEOUT = 120.0


@dataclass(frozen=True)
class UserRun:
    command: str  # as the user types it, e.g. "python -m tinyvae.train"
    returncode: int | None  # None: timed out
    stdout: str
    stderr: str
    duration: float

    def describe(self) -> str:
        if self.returncode is None:
            return f"`{self.command}` did not finish within {TIMEOUT:.0f}s"
        tail = "\n".join(self.stderr.strip().splitlines()[-3:])
        return f"`{self.command}` exited {self.returncode} after {self.duration:.1f}s" + (
            f"; stderr ends:\n{tail}" if tail else ""
        )


def user_env(project: Project) -> dict[str, str]:
    """The environment of a user's shell in the project folder: PYTHONPATH only as the project says."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ folders inside tests/fixtures
    if project.settings.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(project.dir / extra) for extra in project.settings.pythonpath)
    return env


def _run(argv: list[str], project: Project) -> tuple[int | None, str, str, float]:
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=project.dir, env=user_env(project), capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return None, out, err, time.perf_counter() - start
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - start


def run_as_user(project: Project) -> list[UserRun]:
    """Each of the project's commands, exactly as a user runs it."""
    runs = []
    for args in project.commands():
        code, out, err, duration = _run([sys.executable, *args], project)
        runs.append(UserRun("python " + " ".join(args), code, out, err, duration))
    return runs


def run_observed(project: Project, *, measure: bool) -> dict[str, Any]:
    """The child's structured report (see ``project_child.py``) for the project's first entry."""
    if project.settings.module is not None:
        entry = ["--module", project.settings.module, "--entry", str(project.entry_files()[0])]
    else:
        entry = ["--script", project.settings.run[0]]
    argv = [sys.executable, str(CHILD), str(project.dir), *entry, *(["--measure"] if measure else [])]
    code, out, err, _ = _run(argv, project)
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    raise AssertionError(f"the observing child gave no result (exit {code}):\n{err[-3000:]}")


# --------------------------------------------------------------------------- the checks


def _marked_lines(project: Project) -> set[tuple[str, int]]:
    return {(rel, line) for rel, lines in project.markers.items() for line in lines}


def _user_ran_clean(runs: list[UserRun]) -> list[str]:
    return [f"expected a clean run, but {run.describe()}" for run in runs
            if run.returncode != 0 or "Traceback (most recent call last)" in run.stderr]


def _raises(project: Project, runs: list[UserRun], observed: dict[str, Any]) -> list[str]:
    settings = project.settings
    wanted = f"{settings.exception}: "
    problems = [
        f"expected {settings.exception} with {settings.error!r}, but {run.describe()}"
        for run in runs
        if run.returncode in (0, None) or wanted not in run.stderr or str(settings.error) not in run.stderr
    ]
    plain = observed["plain"]
    if plain["exc_type"] != settings.exception or str(settings.error) not in plain["exc_message"]:
        problems.append(f"the observed run raised {plain['exc_type']}: {plain['exc_message'][:300]!r}")
    elif settings.raises_on_marker:
        innermost = tuple(plain["frames"][-1]) if plain["frames"] else None
        if innermost not in _marked_lines(project):
            problems.append(
                f"torch raised at {innermost} (innermost frame in the project), not on a marked line "
                f"{sorted(_marked_lines(project))}; set `raises_on_marker = false` if the wrong statement is "
                f"elsewhere (GL102)\n{plain['traceback']}"
            )
    return problems


def _measured(observed: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    measures = observed["measures"]
    if not measures:
        return measures, [f"nothing was measured: the plain run raised {observed['plain']['exc_type']}"]
    problems = [f"the measured run '{name}' raised: {m['raised']}" for name, m in measures.items() if m["raised"]]
    small, large = measures["small"], measures["large"]
    if large["torch_calls"] <= small["torch_calls"]:
        problems.append(
            "the entry module must let STEPS drive its loops (`STEPS = globals().get(\"STEPS\", 4)`): with "
            f"STEPS={N_SMALL} and {N_LARGE} it made {small['torch_calls']} and {large['torch_calls']} torch calls"
        )
    return measures, problems


def _pair(measures: dict[str, Any]) -> str:
    return f"\n    {measures['small']['summary']}\n    {measures['large']['summary']}"


def _steps_table(measures: dict[str, Any]) -> str:
    rows = [
        f"step {s['index']} ({s['optimizer']}): |applied| {s['applied_norm']:.3g}, |fresh| {s['fresh_norm']:.3g}, "
        f"scale {s['scale']:.3g}, residual {s['residual']:.3g}"
        for s in measures["steps"]["steps"][:10]
    ]
    return "\n    " + "\n    ".join(rows) if rows else " (no optimizer step)"


def _leaks(project: Project, runs: list[UserRun], observed: dict[str, Any]) -> list[str]:
    problems = _user_ran_clean(runs)
    measures, measure_problems = _measured(observed)
    problems += measure_problems
    if measures and measures["large"]["peak_nodes"] - measures["small"]["peak_nodes"] < N_LARGE - N_SMALL:
        problems.append(f"expected the peak of live graph nodes to grow with STEPS, but:{_pair(measures)}")
    return problems


def _wrong_grad(project: Project, runs: list[UserRun], observed: dict[str, Any]) -> list[str]:
    problems = _user_ran_clean(runs)
    measures, measure_problems = _measured(observed)
    problems += measure_problems
    if measures and not any(not s["applies_fresh_gradient"] for s in measures["steps"]["steps"]):
        problems.append(f"expected a step that applies other than its fresh gradient:{_steps_table(measures)}")
    return problems


_BAD_CHECKS = {"raises": _raises, "leaks": _leaks, "wrong_grad": _wrong_grad}


def check_bad(project: Project, runs: list[UserRun], observed: dict[str, Any], oracle: str) -> list[str]:
    """Problems with the claim that torch shows ``oracle`` for this run (the bad project's or its twin's)."""
    return _BAD_CHECKS[oracle](project, runs, observed)


def check_good(project: Project, runs: list[UserRun], observed: dict[str, Any]) -> list[str]:
    """Problems with the claim that this run is clean: no exception, no leak, right gradients."""
    problems = _user_ran_clean(runs)
    measures, measure_problems = _measured(observed)
    problems += measure_problems
    if not measures:
        return problems
    small, large = measures["small"], measures["large"]
    if large["peak_nodes"] > small["peak_nodes"] or large["peak_saved"] > small["peak_saved"]:
        problems.append(f"expected live graph nodes and saved tensors to stay flat, but they grew:{_pair(measures)}")
    steps = measures["steps"]["steps"]
    if not steps:
        problems.append("a good project trains: expected optimizer steps, but there were none")
    wrong = [s["index"] for s in steps if not s["applies_fresh_gradient"]]
    if wrong:
        problems.append(f"steps {wrong} did not apply the gradient their backward produced:{_steps_table(measures)}")
    return problems
