"""`graphlife run [OPTIONS] (SCRIPT | -m MODULE) [ARGS...]`: run a program as ``python`` would.

The program gets the same ``sys.argv``, ``__main__``, ``sys.path[0]`` and exit
status as under ``python SCRIPT`` or ``python -m MODULE``; ``SystemExit`` and
``KeyboardInterrupt`` pass through unchanged. Nothing is added to the hot path
unless an option asks for it:

- no option: when an autograd error escapes, torch's traceback is printed as
  Python prints it, then graphlife's explanation (:mod:`.explain_error`);
- ``--sites``: the site recorder is on for the whole run (one Python call per torch
  call), so the explanation names the line that built the graph and the line that
  changed a saved tensor;
- ``--watch-graph`` (``--watch-every SECONDS``): the leak watch (:mod:`.watch`).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
import runpy
import sys
import types
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

USAGE = """usage: graphlife run [--sites] [--watch-graph] [--watch-every SECONDS] (SCRIPT | -m MODULE) [ARGS...]

Run a Python program as `python SCRIPT ARGS` (or `python -m MODULE ARGS`) would, and explain
any autograd error that escapes it.

options:
  --sites               record where each graph node was built and each tensor changed in
                        place, so that an explanation names those lines (a Python call per
                        torch call: slower)
  --watch-graph         count live autograd graph nodes and saved tensors at each optimizer
                        step; report once when they grow step after step: where the growing
                        graphs were built and what keeps them alive
  --watch-every SECONDS also count every SECONDS seconds (implies --watch-graph), for
                        programs without an optimizer
  --watch-budget PERCENT
                        the share of the run time the watch may spend counting (default 2);
                        0 counts at every step whatever it costs
  -m MODULE             run a module as `python -m MODULE`
"""


class UsageError(Exception):
    """A command line graphlife run cannot start from."""


@dataclass
class RunOptions:
    sites: bool = False
    watch: bool = False
    watch_every: float | None = None
    watch_budget: float = 2.0
    module: str | None = None
    script: str | None = None
    args: list[str] = field(default_factory=list)


def parse_options(argv: list[str]) -> RunOptions:
    """graphlife's options come before the program; everything after it is the program's."""
    options = RunOptions()
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        name, _, inline = arg.partition("=")
        if name in ("-h", "--help"):
            raise UsageError("")
        if name in ("--sites", "--watch-graph"):
            if inline:
                raise UsageError(f"{name} takes no value")
            options.sites = options.sites or name == "--sites"
            options.watch = options.watch or name == "--watch-graph"
            index += 1
            continue
        if name in ("--watch-every", "--watch-budget", "-m"):
            value = inline or (argv[index + 1] if index + 1 < len(argv) else None)
            if not value:
                raise UsageError(f"{name} needs a value")
            index += 1 if inline else 2
            if name == "-m":
                options.module = value
                options.args = argv[index:]
                return options
            number = _number(name, value)
            if name == "--watch-every":
                options.watch, options.watch_every = True, number
            else:
                options.watch_budget = number
            continue
        raise UsageError(f"unknown option {arg}")
    if index >= len(argv):
        raise UsageError("no program to run: give a SCRIPT or -m MODULE")
    options.script, options.args = argv[index], argv[index + 1:]
    return options


def _number(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"{name} wants a number, got {value!r}") from None
    if number < 0 or number != number:
        raise UsageError(f"{name} wants a number >= 0, got {value!r}")
    return number


def main(argv: list[str]) -> int:
    """The `graphlife run` command; the program's exit status (SystemExit passes through)."""
    try:
        options = parse_options(argv)
    except UsageError as exc:
        if str(exc):
            print(f"graphlife run: {exc}", file=sys.stderr)
            print(USAGE.splitlines()[0], file=sys.stderr)
            return 2
        print(USAGE)
        return 0
    if options.script is not None and not os.path.exists(options.script):
        # The message python gives, for the same exit status.
        print(f"graphlife run: can't open file {os.path.abspath(options.script)!r}: "
              "[Errno 2] No such file or directory", file=sys.stderr)
        return 2
    return run(options)


def run(options: RunOptions) -> int:
    tools = _Tools(options)
    interrupted = _InterruptedExit()
    try:
        _run_program(options)
    except SystemExit:
        tools.finish()
        interrupted.cancel()
        raise
    except KeyboardInterrupt as exc:
        tools.finish()
        exc.__traceback__ = trimmed = _without_launcher(exc.__traceback__)
        sys.excepthook(type(exc), exc, trimmed)
        interrupted.arm()
        return 130  # where the process cannot end by SIGINT
    except BaseException as exc:  # noqa: BLE001 - everything the program lets escape is reported
        tools.finish()
        interrupted.cancel()
        _report(exc, tools)
        return 1
    tools.finish()
    interrupted.cancel()
    return 0


def _run_program(options: RunOptions) -> None:
    if options.module is not None:
        sys.argv = [options.module, *options.args]  # runpy puts the module's file in argv[0]
        sys.path[0] = os.getcwd()
        runpy.run_module(options.module, run_name="__main__", alter_sys=True)
        return
    assert options.script is not None
    script = options.script
    sys.argv = [script, *options.args]
    path = os.path.abspath(script)
    sys.path[0] = os.path.dirname(path)
    if not os.path.isfile(path):  # a folder or a zip file with a __main__.py
        runpy.run_path(script, run_name="__main__")
        return
    # As python does: the file's absolute path in __file__ and tracebacks, argv[0] as typed, and
    # a real __main__ module that stays (pickle and multiprocessing look classes up there).
    with io.open_code(path) as handle:
        code = compile(handle.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __builtins__=builtins, __spec__=None, __loader__=None, __cached__=None)
    sys.modules["__main__"] = main
    exec(code, main.__dict__)  # noqa: S102 - running the user's program is the command's job


class _InterruptedExit:
    """Ends the process by SIGINT after the program's own exit handlers, as python does after a
    KeyboardInterrupt nobody caught (the shell then sees "interrupted", status 130). Registered
    before the program runs, so that its handler runs after the program's (they run last in,
    first out); it does nothing unless armed."""

    def __init__(self) -> None:
        import atexit  # noqa: PLC0415 - only `run` needs it

        self.armed = False
        atexit.register(self._at_exit)

    def arm(self) -> None:
        self.armed = True

    def cancel(self) -> None:
        import atexit  # noqa: PLC0415

        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        import signal  # noqa: PLC0415

        if not self.armed or not hasattr(signal, "SIGINT"):
            return
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


def _report(exc: BaseException, tools: _Tools) -> None:
    """Python's report of an uncaught exception (its hook), then graphlife's explanation."""
    # Python's hook prints the exception's own traceback: it starts at the program's first frame.
    exc.__traceback__ = trimmed = _without_launcher(exc.__traceback__)
    sys.stdout.flush()
    sys.excepthook(type(exc), exc, trimmed)
    try:
        from graphlife.runtime.explain_error import explain_exception  # noqa: PLC0415 - only on an error

        text = explain_exception(exc, tools.recorder)
    except Exception as failure:  # noqa: BLE001 - the program's own error is already printed
        text = f"graphlife: could not explain the error: {type(failure).__name__}: {failure}"
    if text:
        print("", file=sys.stderr)
        print(text, file=sys.stderr)
    sys.stderr.flush()


def _without_launcher(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the program's first frame on, as ``python SCRIPT`` shows it."""
    from graphlife.runtime.frames import is_library_code  # noqa: PLC0415

    while tb is not None and is_library_code(tb.tb_frame.f_code):
        tb = tb.tb_next
    return tb


class _Tools:
    """The recorder and the watch the options ask for, started once torch is imported."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self.recorder: Any = None
        self.watch: Any = None
        self._cancel = None
        if options.sites or options.watch:
            from graphlife.runtime.on_import import when_imported  # noqa: PLC0415

            self._cancel = when_imported("torch", self._start)

    def _start(self, torch: Any) -> None:
        from graphlife.runtime.sites import SiteRecorder  # noqa: PLC0415

        if self.options.sites:
            self.recorder = SiteRecorder(torch)
            self.recorder.start()
        if self.options.watch:
            from graphlife.runtime.watch import GraphWatch  # noqa: PLC0415

            self.watch = GraphWatch(torch, every=self.options.watch_every, budget=self.options.watch_budget / 100.0,
                                    recorder=self.recorder)
            self.watch.install()

    def finish(self) -> None:
        if self._cancel is not None:
            self._cancel()
        if self.recorder is not None:
            self.recorder.stop()  # the explanation's own torch calls are not the program's
        if self.watch is not None:
            self.watch.uninstall()
