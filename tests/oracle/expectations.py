"""What each rule's fixtures must do under torch: the runtime truth, per code.

A code maps to an :class:`Expectation`: how to run a fixture (default: the
in-process runner) and two checks, one for ``bad_*.py`` and one for
``good_*.py``. A check takes ``(fixture, outcome)`` and returns a list of
problems (empty: torch agrees). ``test_runtime_truth.py`` runs every fixture
whose directory's code has a registered expectation.

Adding the truth for more rules: put it in ``tests/oracle/expectations_<topic>.py``
(e.g. ``expectations_leaks.py``) and call :func:`register` at import time;
:func:`load_all` imports every such module. Building blocks here:
:func:`raises`, :func:`runs_clean`, :func:`warns`, :func:`all_of`.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fixturelib import Fixture
from oracle.runner import Outcome, run_fixture

#: ``check(fixture, outcome) -> problems``; an empty list means torch agrees.
Check = Callable[[Fixture, Outcome], list[str]]
#: ``run(fixture) -> Outcome``.
Runner = Callable[[Fixture], Outcome]


def default_run(fixture: Fixture) -> Outcome:
    return run_fixture(fixture.path, subprocess=fixture.subprocess)


@dataclass(frozen=True)
class Expectation:
    code: str
    bad: Check
    good: Check
    run: Runner = default_run
    summary: str = ""  # what a bad fixture must do, for failure messages

    def check(self, fixture: Fixture, outcome: Outcome) -> list[str]:
        problems = list((self.bad if fixture.is_bad else self.good)(fixture, outcome))
        if outcome.state_leaks:
            problems.append(f"the fixture left global torch state changed: {', '.join(outcome.state_leaks)}")
        return problems


EXPECTATIONS: dict[str, Expectation] = {}


def register(
    code: str,
    bad: Check,
    good: Check | None = None,
    *,
    run: Runner = default_run,
    summary: str = "",
    replace: bool = False,
) -> Expectation:
    """Register the runtime truth for ``code``. Good fixtures default to :func:`runs_clean`."""
    if code in EXPECTATIONS and not replace:
        raise ValueError(f"an expectation for {code} is already registered")
    expectation = Expectation(code, bad, good or runs_clean(), run, summary)
    EXPECTATIONS[code] = expectation
    return expectation


def load_all() -> dict[str, Expectation]:
    """Import every ``oracle.expectations_*`` / ``oracle.expect_*`` module (they register themselves)."""
    package_dir = Path(__file__).resolve().parent
    for info in pkgutil.iter_modules([str(package_dir)]):
        if info.name.startswith(("expectations_", "expect_")):
            importlib.import_module(f"oracle.{info.name}")
    return EXPECTATIONS


# --------------------------------------------------------------------------- building blocks


def statement_start(source: str, line: int) -> int:
    """First line of the innermost simple statement that spans ``line`` (``line`` if none)."""
    best: ast.stmt | None = None
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt) or node.end_lineno is None:
            continue
        # compound statements (for, with, def, if...) span their bodies; prefer the innermost
        if node.lineno <= line <= node.end_lineno and (
            best is None or (node.lineno, -node.end_lineno) >= (best.lineno, -best.end_lineno)
        ):
            best = node
    return best.lineno if best is not None else line


def _marked_statement_on_stack(fixture: Fixture, outcome: Outcome, code: str) -> list[str]:
    marked = fixture.lines_marked(code)
    if not marked:
        return [f"a bad {code} fixture needs a `# expect: {code}` marker on the statement torch fails at"]
    starts = [statement_start(fixture.source, frame.lineno) for frame in outcome.frames]
    if any(start in marked for start in starts):
        return []
    return [
        f"torch raised, but not while running a statement marked `# expect: {code}` "
        f"(marked: lines {marked}; the fixture's frames on the traceback start at lines {starts or 'none'})"
    ]


def raises(exc_type: type[BaseException], *fragments: str, at_marker: bool = True, code: str | None = None) -> Check:
    """The fixture raises ``exc_type`` (or a subclass) whose message contains one of ``fragments``.

    ``at_marker``: the statement marked with the fixture's code (or ``code``) must be
    on the traceback, i.e. torch fails *there* (true for rules whose marker is the
    failing statement; not for GL102, whose marker is the earlier in-place change).
    """
    wanted = " or ".join(repr(f) for f in fragments) if fragments else "anything"

    def check(fixture: Fixture, outcome: Outcome) -> list[str]:
        expected = f"{exc_type.__name__} containing {wanted}"
        if outcome.timed_out:
            return [f"expected {expected}, but {outcome.describe()}"]
        if not outcome.raised_instance_of(exc_type) or (
            fragments and not any(f in outcome.exc_message for f in fragments)
        ):
            return [f"expected {expected}, but {outcome.describe()}"]
        if at_marker:
            return _marked_statement_on_stack(fixture, outcome, code or fixture.code)
        return []

    return check


def runs_clean() -> Check:
    """The fixture runs to the end without an exception."""

    def check(fixture: Fixture, outcome: Outcome) -> list[str]:
        if outcome.raised or outcome.timed_out:
            return [f"a good fixture must run clean, but {outcome.describe()}"]
        return []

    return check


def warns(category: type[Warning] | str, fragment: str = "", *, clean: bool = True) -> Check:
    """The fixture emits a ``category`` warning containing ``fragment`` (and, with ``clean``, raises nothing).

    torch emits some warnings only once per process: fixtures that depend on those
    should carry ``# oracle: subprocess``.
    """
    name = category if isinstance(category, str) else category.__name__

    def check(fixture: Fixture, outcome: Outcome) -> list[str]:
        problems = []
        if clean and (outcome.raised or outcome.timed_out):
            problems.append(f"expected only a warning, but {outcome.describe()}")
        if not any(w.category == name and fragment in w.message for w in outcome.warnings):
            problems.append(f"expected a {name} containing {fragment!r}, but {outcome.describe()}")
        return problems

    return check


def no_warning(category: type[Warning] | str, fragment: str = "") -> Check:
    """The fixture runs clean and emits no ``category`` warning containing ``fragment``."""
    name = category if isinstance(category, str) else category.__name__

    def check(fixture: Fixture, outcome: Outcome) -> list[str]:
        problems = runs_clean()(fixture, outcome)
        if any(w.category == name and fragment in w.message for w in outcome.warnings):
            problems.append(f"expected no {name} containing {fragment!r}, but {outcome.describe()}")
        return problems

    return check


def all_of(*checks: Check) -> Check:
    def check(fixture: Fixture, outcome: Outcome) -> list[str]:
        return [problem for c in checks for problem in c(fixture, outcome)]

    return check


# --------------------------------------------------------------------------- GL1xx: torch raises

_GL1XX = {
    "GL101": (RuntimeError, ("Trying to backward through the graph a second time",), True),
    # the marker is the in-place change; torch raises later, at the backward
    "GL102": (
        RuntimeError,
        ("one of the variables needed for gradient computation has been modified by an inplace operation",),
        False,
    ),
    "GL103": (RuntimeError, ("a leaf Variable that requires grad is being used in an in-place operation",), True),
    "GL104": (RuntimeError, ("element 0 of tensors does not require grad and does not have a grad_fn",), True),
    "GL105": (ValueError, ("can't optimize a non-leaf Tensor",), True),
    "GL106": (
        RuntimeError,
        (
            "Inference tensors cannot be saved for backward",
            "Inplace update to inference tensor outside InferenceMode is not allowed",
        ),
        True,
    ),
    "GL107": (RuntimeError, ("you can only change requires_grad flags of leaf variables",), True),
    "GL108": (TypeError, ("got an unexpected keyword argument 'retain_variables'",), True),
    "GL109": (RuntimeError, ("Can't call numpy() on Tensor that requires grad",), True),
    "GL110": (RuntimeError, ("Output 0 of BackwardHookFunction is a view and is being modified inplace",), True),
}

for _code, (_exc, _fragments, _at_marker) in _GL1XX.items():
    register(
        _code,
        raises(_exc, *_fragments, at_marker=_at_marker),
        summary=f"{_exc.__name__}: {' / '.join(_fragments)}",
    )
