"""Run a fixture under torch and report what happened: the oracle's eyes.

torch is imported once per (xdist) worker; each fixture runs with
``runpy.run_path(path, run_name="__main__")`` in a fresh namespace after the
global state a fixture could have changed is reset (grad mode, inference mode,
anomaly mode, default dtype and device, the seed, warnings filters). Fixtures
that must be isolated run in a child process (``subprocess=True``; a fixture
asks for it with a ``# oracle: subprocess`` comment) and come back as the same
:class:`Outcome`.

Other checks can wrap the run: ``run_fixture(path, around=factory)`` enters
``factory()`` (a context manager, e.g. a ``saved_tensors_hooks`` counter)
around the fixture, in process only.

After each in-process run the runner collects garbage and then ``gc.freeze()``s
the survivors (a full collection over torch's objects costs ~0.25 s a fixture):
measure leaks *during* the run (``around=``), not on a kept namespace afterwards.

This file is also a script: ``python runner.py FIXTURE`` prints the outcome as
JSON on its last stdout line (that is how the subprocess mode works).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

# Two xdist workers on two cores: one intra-op thread each avoids oversubscription.
torch.set_num_threads(1)
import torch.nn  # noqa: E402 - warm up what nearly every fixture uses
import torch.optim  # noqa: E402

try:  # run by pytest (the package) or as a script (the subprocess mode)
    from oracle import library_stand_ins
except ImportError:  # pragma: no cover - the script's own folder is on sys.path
    import library_stand_ins  # type: ignore[no-redef]

# Fixtures about models from libraries that are not installed here run on stand-ins of the same shape.
library_stand_ins.install()

#: A fixture runs "well under a second"; this only stops a runaway one.
DEFAULT_TIMEOUT = 60.0
_JSON_PREFIX = "GRAPHLIFE-ORACLE-OUTCOME "


class FixtureTimeout(BaseException):
    """Raised inside a fixture that runs past its time limit.

    A BaseException, so that the fixtures' own ``except Exception`` won't eat it.
    """


@dataclass(frozen=True)
class WarningRecord:
    category: str  # e.g. "UserWarning"
    message: str
    filename: str
    lineno: int


@dataclass(frozen=True)
class Frame:
    """A traceback frame inside the fixture file (outermost first)."""

    lineno: int
    end_lineno: int | None
    function: str


@dataclass
class Outcome:
    """What torch did with one fixture."""

    path: str
    exc_type: str | None = None  # "RuntimeError", None when it ran clean
    exc_mro: tuple[str, ...] = ()  # names of the exception's classes, for subclass matching
    exc_message: str = ""
    traceback: str = ""
    frames: tuple[Frame, ...] = ()  # fixture frames of the traceback, outermost first
    warnings: tuple[WarningRecord, ...] = ()
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    timed_out: bool = False
    isolated: bool = False  # ran in a subprocess
    state_leaks: tuple[str, ...] = ()  # global torch state the fixture left changed
    namespace: dict[str, Any] | None = field(default=None, repr=False)  # in process only

    @property
    def raised(self) -> bool:
        return self.exc_type is not None

    def raised_instance_of(self, exc_type: type[BaseException] | str) -> bool:
        name = exc_type if isinstance(exc_type, str) else exc_type.__name__
        return name in self.exc_mro

    @property
    def raise_line(self) -> int | None:
        """The innermost fixture line on the traceback."""
        return self.frames[-1].lineno if self.frames else None

    def describe(self) -> str:
        """One human line: what torch did."""
        if self.timed_out:
            return f"it did not finish within its time limit ({self.duration:.1f}s)"
        if not self.raised:
            text = f"it ran clean in {self.duration:.2f}s"
        else:
            first = self.exc_message.strip().splitlines()[0] if self.exc_message.strip() else ""
            where = f" at line {self.raise_line}" if self.raise_line else " (no fixture frame on the traceback)"
            text = f"it raised {self.exc_type}{where}: {first[:300]}"
        if self.warnings:
            shown = "; ".join(f"{w.category}: {w.message.splitlines()[0][:120]}" for w in self.warnings[:5])
            text += f" [warnings: {shown}]"
        if self.state_leaks:
            text += f" [left global state changed: {', '.join(self.state_leaks)}]"
        return text

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("namespace", None)
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        data = json.loads(text)
        data["exc_mro"] = tuple(data["exc_mro"])
        data["frames"] = tuple(Frame(**f) for f in data["frames"])
        data["warnings"] = tuple(WarningRecord(**w) for w in data["warnings"])
        data["state_leaks"] = tuple(data["state_leaks"])
        return cls(**data)


def reset_torch_state() -> None:
    """Put back what a fixture could leave behind."""
    torch.set_grad_enabled(True)
    torch.set_anomaly_enabled(False)
    torch.set_default_dtype(torch.float32)
    with contextlib.suppress(Exception):
        torch.set_default_device(None)
    if torch.are_deterministic_algorithms_enabled():  # the setter imports torch._inductor (seconds): only when needed
        torch.use_deterministic_algorithms(False)
    torch.manual_seed(0)


def _state_leaks() -> list[str]:
    """Global state a fixture left changed that the next fixture would inherit."""
    leaks = []
    if not torch.is_grad_enabled():
        leaks.append("grad mode disabled")
    if torch.is_inference_mode_enabled():
        leaks.append("inference mode enabled")
    if torch.is_anomaly_enabled():
        leaks.append("anomaly mode enabled")
    if torch.get_default_dtype() != torch.float32:
        leaks.append(f"default dtype {torch.get_default_dtype()}")
    return leaks


@contextlib.contextmanager
def _time_limit(seconds: float):
    """SIGALRM-based limit, only where signals work (the main thread on POSIX)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def on_alarm(signum, frame):
        raise FixtureTimeout(f"fixture ran longer than {seconds}s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _fixture_frames(tb, path: str) -> tuple[Frame, ...]:
    frames = []
    target = os.path.realpath(path)
    for summary in traceback.extract_tb(tb):
        if os.path.realpath(summary.filename) == target:
            frames.append(Frame(summary.lineno or 0, summary.end_lineno, summary.name))
    return tuple(frames)


def run_in_process(
    path: str | os.PathLike[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    around: Callable[[], AbstractContextManager[Any]] | None = None,
    keep_namespace: bool = False,
    init_globals: dict[str, Any] | None = None,
) -> Outcome:
    """Run one fixture here, in a fresh ``__main__`` namespace (seeded with ``init_globals``)."""
    path = os.fspath(Path(path).resolve())
    outcome = Outcome(path=path)
    reset_torch_state()
    out, err = io.StringIO(), io.StringIO()
    saved_argv = sys.argv[:]
    sys.argv = [path]
    namespace: dict[str, Any] | None = None
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    with _time_limit(timeout), (around() if around else contextlib.nullcontext()):
                        namespace = runpy.run_path(path, init_globals=init_globals, run_name="__main__")
                except FixtureTimeout:
                    outcome.timed_out = True
                except BaseException as exc:  # the oracle records everything, SystemExit included
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    outcome.exc_type = type(exc).__name__
                    outcome.exc_mro = tuple(cls.__name__ for cls in type(exc).__mro__)
                    outcome.exc_message = str(exc)
                    outcome.traceback = "".join(traceback.format_exception(exc))
                    outcome.frames = _fixture_frames(exc.__traceback__, path)
                    exc.__traceback__ = None  # don't keep the fixture's tensors alive
                    del exc
        outcome.warnings = tuple(
            WarningRecord(w.category.__name__, str(w.message), w.filename, w.lineno) for w in caught
        )
    finally:
        outcome.duration = time.perf_counter() - start
        sys.argv = saved_argv
        outcome.stdout, outcome.stderr = out.getvalue(), err.getvalue()
        outcome.state_leaks = tuple(_state_leaks())
        reset_torch_state()
    if keep_namespace:
        outcome.namespace = namespace
    del namespace
    # Free the fixture's cycles, then move the survivors (modules torch imported
    # lazily, caches) out of the collector's sight: a full collection over all
    # of torch costs ~0.25 s, over what one fixture leaves behind ~nothing.
    gc.collect()
    gc.freeze()
    return outcome


def run_in_subprocess(
    path: str | os.PathLike[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    init_globals: dict[str, Any] | None = None,
) -> Outcome:
    """Run one fixture in a fresh interpreter (pays torch's import; use only when needed).

    ``init_globals`` must be JSON-serialisable here.
    """
    path = os.fspath(Path(path).resolve())
    extra = ["--globals", json.dumps(init_globals)] if init_globals else []
    try:
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), path, "--timeout", str(timeout), *extra],
            capture_output=True,
            text=True,
            timeout=timeout + 60,
        )
    except subprocess.TimeoutExpired:
        return Outcome(path=path, timed_out=True, duration=timeout, isolated=True)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_JSON_PREFIX):
            outcome = Outcome.from_json(line[len(_JSON_PREFIX):])
            outcome.isolated = True
            return outcome
    return Outcome(
        path=path,
        exc_type="OracleCrash",
        exc_mro=("OracleCrash",),
        exc_message=f"the child process exited with {proc.returncode} without an outcome",
        stdout=proc.stdout,
        stderr=proc.stderr,
        isolated=True,
    )


def run_fixture(
    path: str | os.PathLike[str],
    *,
    subprocess: bool = False,  # reads well at call sites
    timeout: float = DEFAULT_TIMEOUT,
    around: Callable[[], AbstractContextManager[Any]] | None = None,
    keep_namespace: bool = False,
    init_globals: dict[str, Any] | None = None,
) -> Outcome:
    """Run a fixture in process (the default) or in a subprocess."""
    if subprocess:
        if around is not None or keep_namespace:
            raise ValueError("`around` and `keep_namespace` work in process only")
        return run_in_subprocess(path, timeout=timeout, init_globals=init_globals)
    return run_in_process(
        path, timeout=timeout, around=around, keep_namespace=keep_namespace, init_globals=init_globals
    )


def _main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Run one graphlife fixture under torch; print the outcome as JSON.")
    parser.add_argument("fixture")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    parser.add_argument("--globals", default=None, help="JSON object: the fixture's initial globals")
    args = parser.parse_args(argv)
    init_globals = json.loads(args.globals) if args.globals else None
    outcome = run_in_process(args.fixture, timeout=args.timeout, init_globals=init_globals)
    sys.stdout.write(_JSON_PREFIX + outcome.to_json() + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
