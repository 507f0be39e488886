"""Every multi-file fixture project under torch, run as its user runs it: bad ones fail the way fixture.toml says.

Each project runs in child processes (see ``oracle/projects.py``): once
literally as ``python train.py`` / ``python -m pkg.train`` from its folder, and
once observed (the exception's frames, and for every good twin and every
``leaks``/``wrong_grad`` project the leak and optimizer-step measurements).
"""

from __future__ import annotations

import pytest

from fixturelib import PROJECT_ORACLES, Project, iter_projects
from oracle.projects import check_bad, check_good, run_as_user, run_observed

PROJECTS = list(iter_projects())
_BY_NAME = {project.name: project for project in PROJECTS}


def _fail(project: Project, problems: list[str], summary: str) -> None:
    lines = [f"{project.name}: {project.settings.description}", f"  torch must show: {summary}"]
    lines += [f"  - {problem}" for problem in problems]
    pytest.fail("\n".join(lines), pytrace=False)


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_project_runtime_truth(project: Project) -> None:
    runs = run_as_user(project)
    if project.is_bad:
        oracle = str(project.settings.oracle)
        observed = run_observed(project, measure=oracle != "raises")
        problems = check_bad(project, runs, observed, oracle)
        if problems:
            _fail(project, problems, f"`{oracle}` ({project.settings.error or 'see oracle/projects.py'})")
        if oracle != "raises":  # measured: the good check must object to what was seen
            assert check_good(project, runs, observed), f"{project.name}: the good check accepts it too"
    else:
        observed = run_observed(project, measure=True)
        problems = check_good(project, runs, observed)
        if problems:
            _fail(project, problems, "a clean run: exit 0, no leak, every step applies its fresh gradient")
        twin_oracle = str(_BY_NAME[project.twin].settings.oracle)
        assert check_bad(project, runs, observed, twin_oracle), (
            f"{project.name}: the check that its bad twin shows `{twin_oracle}` accepts the fixed project too"
        )


def test_projects_come_in_twins_and_cover_every_verdict() -> None:
    names = set(_BY_NAME)
    bad = [p for p in PROJECTS if p.is_bad]
    assert len(bad) >= 13, f"at least 13 bad projects, found {len(bad)}"
    assert {p.twin for p in PROJECTS} == names, f"unpaired: {sorted({p.twin for p in PROJECTS} ^ names)}"
    assert {p.settings.oracle for p in bad} == set(PROJECT_ORACLES)
    families = {code[:3] for p in bad for code in {c for _, _, c in p.expected()}}
    assert {"GL1", "GL2", "GL3"} <= families, families
    assert any(p.settings.module for p in bad) and any(p.settings.pythonpath for p in bad)
