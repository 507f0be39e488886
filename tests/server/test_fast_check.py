"""A check answered from the cache before the command line loads prints what the full check printed.

Why it matters to a user: ``graphlife check train.py`` of a file already checked is answered
by :mod:`graphlife.fast_check` in a fraction of the start-up of the full command line (a
pre-commit hook, an editor's "check on save"). It must say exactly what a first, uncached
check said (the same text on both streams, the same exit status, the same colours and
language), and it must never answer from a record that no longer holds: anything it is not
sure of goes to the full command line. Each test runs graphlife as the ``graphlife``
command does (``graphlife.cli:main`` in a new process) and compares with a first run.
"""

from __future__ import annotations

import ast
import os
import pty
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import graphlife as graphlife_package
from graphlife.config import find_pyproject
from tests.server.cli_helpers import CLEAN, DOUBLE_BACKWARD, EVAL_WITHOUT_NO_GRAD

AN_HOUR_AGO_NS = time.time_ns() - 3600 * 10**9

#: ``graphlife ARGS`` as the console script runs it, then the modules it loaded, to a file.
RUNNER = ("import sys\nfrom graphlife.cli import main\nstatus = main(sys.argv[2:])\nsys.stdout.flush()\n"
          "open(sys.argv[1], 'w').write(repr(sorted(sys.modules)))\nsys.exit(status)\n")

#: The graphlife under test, whatever the current folder of the process running it.
THIS_GRAPHLIFE = {"PYTHONPATH": str(Path(graphlife_package.__file__).parent.parent)}

#: What the fast path exists not to load.
HEAVY = ("argparse", "json", "pathlib", "dataclasses", "inspect", "typing", "enum", "graphlife.cli_full")


class Run:
    """One ``graphlife`` process: what it printed, its exit status, the modules it loaded."""

    def __init__(self, proc: subprocess.CompletedProcess, modules: list[str]) -> None:
        self.stdout, self.stderr, self.status = proc.stdout, proc.stderr, proc.returncode
        self.modules = set(modules)

    @property
    def fast(self) -> bool:
        return "graphlife.fast_check" in self.modules and "graphlife.cli_full" not in self.modules

    def shown(self) -> tuple[str, str, int]:
        return self.stdout, self.stderr, self.status


def modules_file() -> Path:
    """Where a run writes the modules it loaded: outside the project, whose folder's stat is
    one of the inputs of its records."""
    handle, name = tempfile.mkstemp(suffix=".modules")
    os.close(handle)
    return Path(name)


def graphlife(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Run:
    modules = modules_file()
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG", "NO_COLOR")}
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(modules), *args], capture_output=True, text=True,
                          cwd=cwd, env={**environment, **THIS_GRAPHLIFE, **(env or {})}, timeout=180, check=False)
    text = modules.read_text()
    loaded = ast.literal_eval(text) if text else []
    modules.unlink(missing_ok=True)
    return Run(proc, loaded)


def age(*paths: Path) -> None:
    """Files and folders written an hour ago: a stat taken just after a write proves nothing
    and is never kept, so a fresh file would be read again on every run."""
    for path in paths:
        os.utime(path, ns=(AN_HOUR_AGO_NS, AN_HOUR_AGO_NS))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")  # a project without graphlife settings
    (tmp_path / "pkg").mkdir()
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "evaluate.py").write_text(EVAL_WITHOUT_NO_GRAD)
    (tmp_path / "broken.py").write_text("import torch\nx = (\n")
    (tmp_path / "pkg/model.py").write_text(CLEAN)
    age(*tmp_path.rglob("*"), tmp_path)
    return tmp_path


def first_and_cached(project: Path, *args: str, env: dict[str, str] | None = None) -> tuple[Run, Run]:
    """A first run (it analyzes and fills the cache), and a later one once the cache folder's
    own stat is an old one (the second run records it, as a run an hour later would)."""
    first = graphlife(*args, cwd=project, env=env)
    age(project, *(project / ".graphlife_cache").iterdir()) if (project / ".graphlife_cache").exists() else None
    graphlife(*args, cwd=project, env=env)
    return first, graphlife(*args, cwd=project, env=env)


@pytest.mark.parametrize("args", [
    ("check", "clean.py"),  # nothing found
    ("check", "train.py"),  # an error (exit status 1)
    ("check", "evaluate.py"),  # information only (exit status 0)
    ("check", "broken.py"),  # a syntax error
    ("check", "train.py", "clean.py", "pkg/model.py", "evaluate.py"),  # several files, in the order given
])
def test_a_plain_check_is_answered_from_the_cache_as_the_first_run_answered(project, args):
    first, cached = first_and_cached(project, *args)
    assert not first.fast
    assert cached.fast, cached.stderr
    assert cached.shown() == first.shown()
    assert not [name for name in cached.modules if name.split(".")[0] in HEAVY or name in HEAVY]


def test_chinese_from_the_environment_is_answered_in_chinese(project):
    english = graphlife("check", "train.py", cwd=project)
    zh = {"LANG": "zh_CN.UTF-8"}
    first, cached = first_and_cached(project, "check", "train.py", env=zh)
    assert cached.fast and cached.shown() == first.shown()
    assert "发现" in cached.stdout and cached.stdout != english.stdout  # a record of another language is not used
    assert graphlife("check", "train.py", cwd=project, env={"LANGUAGE": "en", "LANG": "zh_CN.UTF-8"}).stdout \
        == english.stdout


def test_colours_on_a_terminal_are_the_full_checks(project):
    def on_terminal(env: dict[str, str] | None = None) -> tuple[bytes, str]:
        main, child = pty.openpty()
        environment = {**os.environ, **THIS_GRAPHLIFE, **(env or {})}
        environment.pop("NO_COLOR", None) if env is None else None
        modules = modules_file()
        proc = subprocess.run([sys.executable, "-c", RUNNER, str(modules), "check", "train.py"],
                              stdout=child, stderr=subprocess.PIPE, cwd=project, env=environment, timeout=180,
                              check=False)
        os.close(child)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(main)
        loaded = modules.read_text()
        modules.unlink()
        return b"".join(chunks), ("fast" if "graphlife.cli_full" not in loaded else "full") + str(proc.returncode)

    first = on_terminal()
    age(project, *(project / ".graphlife_cache").iterdir())
    on_terminal()
    assert on_terminal() == (first[0], "fast1")
    assert b"\x1b[1;31m" in first[0]
    plain = on_terminal({"NO_COLOR": "1"})
    assert plain[1] == "fast1" and b"\x1b[" not in plain[0]


@pytest.mark.parametrize("args", [
    ("check", "."),  # a folder
    ("check", "train.py", "--no-cache"),
    ("check", "--output-format", "concise", "train.py"),
    ("check", "--select", "GL1", "train.py"),
    ("check", "--no-such-flag", "train.py"),
    ("check", "train.py", "missing.py"),
    ("check", "./train.py"),  # another spelling: the full check spells it `train.py`
    ("check", "-"),
])
def test_what_the_fast_path_does_not_answer_the_full_check_does(project, args):
    first, again = first_and_cached(project, *args)
    assert not again.fast
    if "--no-cache" not in args and args[1] != "-":
        assert again.shown() == first.shown()


def test_a_record_made_with_other_settings_is_not_used_without_them(project):
    first_and_cached(project, "check", "--ignore", "GL101", "train.py")  # the only record is of these settings
    plain = graphlife("check", "train.py", cwd=project)
    assert not plain.fast and plain.status == 1 and "GL101" in plain.stdout


def test_settings_that_appear_after_the_check_are_read(project):
    _, cached = first_and_cached(project, "check", "train.py")
    assert cached.fast and "GL101" in cached.stdout
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.graphlife]\nignore = ['GL101']\n")
    after = graphlife("check", "train.py", cwd=project)
    assert not after.fast and "GL101" not in after.stdout and after.status == 0


def test_a_settings_file_that_applies_leaves_the_check_to_the_full_command_line(project):
    (project / "pyproject.toml").write_text("[tool.graphlife]\nignore = ['GL205']\n")
    age(project / "pyproject.toml")
    first, again = first_and_cached(project, "check", "train.py")
    assert not again.fast and again.shown() == first.shown()


@pytest.mark.parametrize("change", ["edit", "touch an import", "import", "corrupt", "old-format"])
def test_a_record_that_no_longer_holds_is_not_used(project, change):
    (project / "train.py").write_text("import torch\nfrom helpers import step\n\n"
                                      "w = torch.randn(3, requires_grad=True)\n"
                                      "loss = step(w)\nloss.backward()\nloss.backward()\n")
    (project / "helpers.py").write_text("def step(w):\n    return (w * w).sum()\n")  # the graph the error names
    age(project / "train.py", project / "helpers.py")
    first, cached = first_and_cached(project, "check", "train.py")
    assert cached.fast and cached.shown() == first.shown()
    (record,) = (project / ".graphlife_cache").glob("*.rec")
    if change == "edit":
        (project / "train.py").write_text(CLEAN)
    elif change == "touch an import":  # the same text: read again by the full check, which renews the record
        os.utime(project / "helpers.py")
    elif change == "import":
        (project / "helpers.py").write_text("def step(w):\n    return (w * 2).sum()\n")
    elif change == "corrupt":
        record.write_bytes(record.read_bytes()[:40])
    else:
        (project / ".graphlife_cache" / "old.json").write_text("{}")
        record.write_bytes(b'{"format": 1}')
    after = graphlife("check", "train.py", cwd=project)
    assert not after.fast
    uncached = graphlife("check", "--no-cache", "train.py", cwd=project)
    assert after.shown() == uncached.shown()
    if change not in ("edit", "import"):
        assert after.shown() == first.shown()


def test_a_touched_file_is_still_answered_its_text_decides(project):
    first, _ = first_and_cached(project, "check", "train.py")
    os.utime(project / "train.py")
    again = graphlife("check", "train.py", cwd=project)
    assert again.fast and again.shown() == first.shown()


def test_python_m_graphlife_answers_from_the_cache_too(project):
    first_and_cached(project, "check", "train.py")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "graphlife", "check", "train.py"],
                          capture_output=True, text=True, cwd=project, env={**os.environ, **THIS_GRAPHLIFE},
                          timeout=180, check=False)
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert proc.returncode == 1 and "GL101" in proc.stdout
    assert "graphlife.fast_check" in imported and not imported & set(HEAVY)


def test_outside_any_project_the_check_is_answered_too(tmp_path):
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    age(tmp_path / "train.py", tmp_path)
    if find_pyproject(tmp_path) is not None:
        pytest.skip("a pyproject.toml above the temporary folder")
    first, cached = first_and_cached(tmp_path, "check", "train.py")
    assert cached.fast and cached.shown() == first.shown()
