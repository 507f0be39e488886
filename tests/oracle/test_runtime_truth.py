"""Every fixture under torch: bad ones really fail (or leak, or go wrong) the way their rule says, good ones don't.

Also checks the harness itself on throwaway fixtures, so a broken runner cannot
make the fixture tests pass vacuously.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fixturelib import fixture_dirs, fixture_paths, load_fixture
from oracle.expectations import EXPECTATIONS, load_all, raises, runs_clean, statement_start, warns
from oracle.runner import run_fixture

load_all()

_REGISTERED = set(EXPECTATIONS)
_PATHS = fixture_paths(codes=_REGISTERED)
_UNREGISTERED = [d.name for d in fixture_dirs() if d.name not in _REGISTERED]


def _fixture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", _PATHS, ids=_fixture_id)
def test_fixture_runtime_truth(path: Path) -> None:
    fixture = load_fixture(path)
    expectation = EXPECTATIONS[fixture.code]
    outcome = expectation.run(fixture)
    problems = expectation.check(fixture, outcome)
    if problems:
        summary = expectation.summary or "see expectations"
        lines = [f"{fixture.id} ({fixture.kind}; {fixture.code} bad fixtures must: {summary})"]
        lines += [f"  - {problem}" for problem in problems]
        if outcome.traceback:
            lines.append("torch's traceback:\n" + outcome.traceback[-3000:])
        pytest.fail("\n".join(lines), pytrace=False)


@pytest.mark.parametrize("code", _UNREGISTERED or ["(none)"])
def test_fixture_directory_has_runtime_expectation(code: str) -> None:
    if code == "(none)":
        pytest.skip("every fixture directory has a registered runtime expectation")
    pytest.skip(
        f"tests/fixtures/{code}: not run here: no expectation registered through load_all() "
        "(tests/oracle/expectations_*.py); a dedicated test may run it"
    )


def test_gl1xx_expectations_registered() -> None:
    assert {f"GL10{i}" for i in range(1, 8)} <= set(EXPECTATIONS)


# --------------------------------------------------------------------------- the harness itself


def _write(tmp_path: Path, name: str, body: str) -> Path:
    directory = tmp_path / "GL999"
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_runner_records_exception_type_message_and_fixture_frames(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad_double_backward.py", """\
        import torch
        torch.manual_seed(0)

        def step(x):
            loss = (x * x).sum()
            loss.backward()
            loss.backward()  # expect: GL999

        step(torch.randn(3, requires_grad=True))
        """)
    outcome = run_fixture(path)
    assert outcome.exc_type == "RuntimeError"
    assert "backward through the graph a second time" in outcome.exc_message
    assert [f.lineno for f in outcome.frames] == [9, 7]
    fixture = load_fixture(path)
    assert raises(RuntimeError, "second time")(fixture, outcome) == []
    assert raises(RuntimeError, "second time", code="GL999")(fixture, outcome) == []
    assert raises(ValueError, "second time")(fixture, outcome)
    assert raises(RuntimeError, "some other text")(fixture, outcome)
    assert runs_clean()(fixture, outcome)


def test_raise_on_an_unmarked_line_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad_wrong_line.py", """\
        import torch
        w = torch.ones(2, requires_grad=True)
        y = w * 2  # expect: GL999
        w += 1
        """)
    fixture = load_fixture(path)
    problems = raises(RuntimeError, "a leaf Variable")(fixture, run_fixture(path))
    assert problems and "marked" in problems[0]


def test_runner_resets_global_state_and_reports_leaks(tmp_path: Path) -> None:
    import torch

    path = _write(tmp_path, "good_leaves_state.py", """\
        import torch
        torch.set_grad_enabled(False)
        torch.set_default_dtype(torch.float64)
        x = torch.randn(2)
        """)
    outcome = run_fixture(path)
    assert not outcome.raised
    assert "grad mode disabled" in outcome.state_leaks
    assert any("default dtype" in leak for leak in outcome.state_leaks)
    assert torch.is_grad_enabled()
    assert torch.get_default_dtype() == torch.float32
    assert EXPECTATIONS["GL103"].check(load_fixture(path), outcome)  # leaks are problems


def test_runner_seeds_and_runs_as_main_in_a_fresh_namespace(tmp_path: Path) -> None:
    path = _write(tmp_path, "good_main.py", """\
        import torch
        leftover = globals().get("marker_from_earlier_run")
        marker_from_earlier_run = 1
        first = torch.rand(1).item()
        if __name__ != "__main__":
            raise AssertionError(__name__)
        if leftover is not None:
            raise AssertionError("namespace reused")
        """)
    first = run_fixture(path, keep_namespace=True)
    second = run_fixture(path, keep_namespace=True, init_globals={"STEPS": 6})
    assert not first.raised and not second.raised, (first.describe(), second.describe())
    assert first.namespace["first"] == second.namespace["first"]
    assert "STEPS" not in first.namespace and second.namespace["STEPS"] == 6


def test_runner_captures_warnings_and_output(tmp_path: Path) -> None:
    path = _write(tmp_path, "good_warns.py", """\
        import warnings
        print("hello")
        warnings.warn("custom note", UserWarning)
        """)
    outcome = run_fixture(path)
    assert outcome.stdout == "hello\n"
    fixture = load_fixture(path)
    assert warns(UserWarning, "custom note")(fixture, outcome) == []
    assert warns(UserWarning, "absent text")(fixture, outcome)


def test_runner_subprocess_mode(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad_sub.py", """\
        # oracle: subprocess
        import torch
        w = torch.ones(2, requires_grad=True)
        w.mul_(STEPS)  # expect: GL103
        """)
    fixture = load_fixture(path)
    assert fixture.subprocess
    assert run_fixture(path).exc_type == "NameError"  # no STEPS given
    outcome = run_fixture(path, subprocess=True, init_globals={"STEPS": 2})
    assert outcome.isolated
    assert outcome.exc_type == "RuntimeError" and "leaf Variable" in outcome.exc_message
    assert [f.lineno for f in outcome.frames] == [4]
    assert raises(RuntimeError, "leaf Variable", code="GL103")(fixture, outcome) == []


def test_runner_stops_a_runaway_fixture(tmp_path: Path) -> None:
    path = _write(tmp_path, "good_spins.py", """\
        while True:
            try:
                pass
            except Exception:
                pass
        """)
    outcome = run_fixture(path, timeout=0.3)
    assert outcome.timed_out
    assert runs_clean()(load_fixture(path), outcome)


def test_statement_start_finds_the_innermost_statement() -> None:
    source = textwrap.dedent("""\
        for i in range(2):
            opt = make(
                [w],
                lr=0.1,
            )
        """)
    assert statement_start(source, 3) == 2
    assert statement_start(source, 2) == 2
    assert statement_start(source, 1) == 1
