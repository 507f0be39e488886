"""Each GL1xx bad fixture through `graphlife run`: the right rule at the right line; each bad fixture of
the custom-Function errors torch raises (GL402, GL404, GL406): the right rule, at a line of the fixture;
the good ones of all these run clean and unexplained."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fixturelib import FIXTURES_DIR, fixture_paths, load_fixture
from oracle.expectations import statement_start

_GL1 = {f"GL10{i}" for i in range(1, 8)}
# The custom-Function errors torch raises: the marker is often in the Function's body, which the
# traceback does not show (torch raises after `backward` returned, or from `apply`).
_GL4 = {"GL402", "GL404", "GL406"}
_BAD = [p for p in fixture_paths(codes=_GL1) if p.name.startswith("bad_")]
_GOOD = [p for p in fixture_paths(codes=_GL1 | _GL4) if p.name.startswith("good_")]
_BAD_GL4 = [p for p in fixture_paths(codes=_GL4) if p.name.startswith("bad_")]


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _lines_named(text: str, label: str, path: Path) -> list[int]:
    """The lines of ``path`` the explanation names after ``label`` ("backward was called at")."""
    pattern = re.escape(label) + r".*? " + re.escape(str(path)) + r":(\d+) in "
    return [int(m.group(1)) for m in re.finditer(pattern, text)]


@pytest.mark.parametrize("path", _BAD, ids=_id)
def test_bad_fixture_is_explained_at_its_line(path: Path, run_in_process) -> None:
    fixture = load_fixture(path)
    status, _, err = run_in_process("--sites", str(path))
    assert status == 1
    assert err.index("Traceback (most recent call last)") < err.index(f"graphlife: {fixture.code} "), err
    assert "args[0]" not in err  # torch's own frame is never explained
    marked = fixture.lines_marked(fixture.code)
    if fixture.code == "GL102":
        # The marker is the in-place change; torch raises later, at the backward.
        changed = _lines_named(err, "the saved tensor was changed in place", path)
        assert changed, err
        if statement_start(fixture.source, changed[0]) in marked:
            return
        # A torch module changed it (nn.ReLU(inplace=True)) and the marker is where it was made.
        module = re.search(r"changed in place by (\w+)\(", err)
        assert module is not None, err
        assert module.group(1) in "".join(fixture.line_text(line) for line in marked), err
        return
    named = _lines_named(err, "was called at", path) + _lines_named(err, "raised at", path)
    named += _lines_named(err, "called from", path)
    assert {statement_start(fixture.source, line) for line in named} & set(marked), err


@pytest.mark.parametrize("path", _BAD_GL4, ids=_id)
def test_custom_function_errors_are_explained_in_the_fixture(path: Path, run_in_process) -> None:
    fixture = load_fixture(path)
    status, _, err = run_in_process(str(path))
    assert status == 1
    assert f"graphlife: {fixture.code} " in err, err
    assert _lines_named(err, "raised at", path) + _lines_named(err, "was called at", path), err


@pytest.mark.parametrize("path", _GOOD, ids=_id)
def test_good_fixture_runs_clean_and_unexplained(path: Path, run_in_process) -> None:
    status, _, err = run_in_process(str(path))
    assert status == 0, err
    assert "graphlife:" not in err


@pytest.mark.parametrize(("name", "line"), [
    ("GL101/bad_gru_hidden_carried_tensor.py", 18),  # the RNN of the earlier iteration, not this one's loss
    ("GL101/bad_gan_discriminator_no_detach.py", 15),  # the generator, which the discriminator's backward freed
])
def test_the_freed_graph_named_is_the_one_an_earlier_backward_freed(name: str, line: int, run_in_process) -> None:
    path = FIXTURES_DIR / name
    _, _, err = run_in_process("--sites", str(path))
    assert _lines_named(err, "the freed graph was built", path) == [line], err
