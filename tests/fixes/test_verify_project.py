"""A fix is judged in the project its finding was found in.

The engine follows a file's imports into the user's own modules, so some findings (and
some fixes' consequences) exist only given another module. In the GAN project
(`tests/fixtures/projects/bad_gan_losses_module`) the discriminator and its loss live in
`models.py` and `losses.py`: `retain_graph=True` on the discriminator's backward looks
like a fix of the generator's GL101 when `train.py` is read alone, but given `models.py`
the optimizer step then changes weights the kept graph saved, and the generator's backward
raises (GL102). The editor and `graphlife fix` must not offer it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from graphlife.checker import check_source, project_modules
from graphlife.cli import main
from graphlife.config import Config
from graphlife.findings import Finding, Severity, Span
from graphlife.fixes import compute_fixes, fix_source
from graphlife.fixes.apply import apply_edits
from graphlife.fixes.verify import FixVerifier

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"


@pytest.fixture
def gan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "gan"
    shutil.copytree(PROJECTS / "bad_gan_losses_module", project, ignore=shutil.ignore_patterns("fixture.toml"))
    monkeypatch.chdir(project)
    return project


def _generator_backward_finding(source: str, config: Config):
    result = check_source(source, "train.py", config, modules=project_modules("train.py", config))
    (finding,) = [f for f in result.findings if f.code == "GL101" and f.span.path is None]
    return finding


def test_a_fix_wrong_only_given_another_module_is_not_offered(gan: Path) -> None:
    config = Config()
    source = (gan / "train.py").read_text()
    finding = _generator_backward_finding(source, config)
    assert any(recipe.kind == "retain_graph" for recipe in finding.fixes)

    # read alone, train.py cannot see why `retain_graph=True` is wrong ...
    alone = compute_fixes(finding, source, path="train.py", config=config)
    (retain,) = [fix for fix in alone if fix.kind == "retain_graph"]
    after = check_source(apply_edits(source, retain.edits), "train.py", config,
                         modules=project_modules("train.py", config)).findings
    assert [f.code for f in after if f.code == "GL102"], "given models.py, the retained graph meets the step"

    # ... and judged in the project, as the finding was found, it is not offered
    in_project = compute_fixes(finding, source, path="train.py", config=config,
                               modules=lambda: project_modules("train.py", config))
    assert [fix.kind for fix in in_project] == []


def test_fix_all_follows_the_imports_too(gan: Path) -> None:
    config = Config()
    source = (gan / "train.py").read_text()
    assert fix_source(source, "train.py", config, unsafe=True,
                      modules=lambda: project_modules("train.py", config)) == source


def test_graphlife_fix_applies_no_fix_the_project_shows_wrong(gan: Path, capsys: pytest.CaptureFixture) -> None:
    before = (gan / "train.py").read_text()
    main(["check", "--fix", "--unsafe-fixes", "--no-cache", "train.py"])
    capsys.readouterr()
    assert (gan / "train.py").read_text() == before


def test_an_error_a_fix_causes_in_another_module_counts() -> None:
    """The verifier compares the errors of the whole project before and after a fix: a fix
    that makes the project's other file raise (a helper there calling backward on what the
    fixed file now detaches) is no fix, even though the checked file itself is clean."""
    finding = Finding("GL101", "backward-through-freed-graph", Severity.ERROR, Span(6, 1, 6, 16), "freed")
    elsewhere = Finding("GL104", "backward-without-grad", Severity.ERROR, Span(2, 5, 2, 30, path="steps.py"), "no grad")
    results = {"before": [finding], "fixed here": [], "fixed here, broken there": [elsewhere]}
    verifier = FixVerifier("before", lambda text: results[text])
    assert verifier.accepts(finding, "fixed here", [])
    assert not verifier.accepts(finding, "fixed here, broken there", [])
