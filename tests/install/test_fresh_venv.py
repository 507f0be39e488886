"""`pip install git+URL` from the repository root into a fresh virtualenv, as a new user does.

Offline and fast: the package is built without build isolation (setuptools is lent to the
build from this interpreter's environment) and installed without its dependencies; of
those, only pathspec (and tomli on Python 3.10) is lent to the new environment. The
editor-only libraries (pygls, lsprotocol, libcst) are not there: `pip install graphlife`
must check files and explain tracebacks without them, and say what to install for the rest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pathspec
import pytest
import setuptools
from clean_clone import clean_clone

DOUBLE_BACKWARD = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()
    """)
TRACEBACK = textwrap.dedent("""\
    Traceback (most recent call last):
      File "train.py", line 6, in <module>
        loss.backward()
    RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they \
    have already been freed).
    """)


def lend(packages: list[Path], folder: Path) -> Path:
    """A folder holding links to these installed packages only (a `.pth` or PYTHONPATH entry)."""
    folder.mkdir(parents=True, exist_ok=True)
    for package in packages:
        (folder / package.name).symlink_to(package)
    return folder


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fresh")
    source = clean_clone(root / "graphlife-src")
    env_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    site = Path(setuptools.__file__).resolve().parents[1]
    names = ("setuptools", "pkg_resources", "_distutils_hack")
    build_deps = lend([site / name for name in names if (site / name).exists()], root / "build-deps")
    install = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
         "--no-build-isolation", f"git+file://{source}"],
        capture_output=True, text=True, timeout=600, check=False,
        env={**_clean_env(), "PYTHONPATH": str(build_deps)},
    )
    assert install.returncode == 0, install.stdout + install.stderr
    runtime_packages = [Path(pathspec.__file__).parent]
    if sys.version_info < (3, 11):  # the TOML parser of Python 3.10 (tomllib is 3.11+)
        import tomli

        runtime_packages.append(Path(tomli.__file__).parent)
    runtime = lend(runtime_packages, root / "runtime-deps")
    [site_packages] = (env_dir / "lib").glob("python3*/site-packages")
    (site_packages / "lent-runtime-deps.pth").write_text(f"{runtime}\n")
    return env_dir


def _clean_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}


def in_venv(venv: Path, *args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True, cwd=cwd,
                          input=stdin, timeout=300, env=_clean_env(), check=False)


def test_the_installed_package_is_the_one_that_runs(venv: Path) -> None:
    where = in_venv(venv, "python", "-c", "import graphlife, os; print(os.path.realpath(graphlife.__file__))")
    assert where.stdout.strip().startswith(str(venv.resolve())), where.stdout + where.stderr
    version = in_venv(venv, "graphlife", "-V")
    assert version.returncode == 0 and version.stdout.startswith("graphlife 0.1.0 (op table measured with torch ")


def test_metadata_license_and_typing_marker(venv: Path) -> None:
    code = ("import json, importlib.metadata as m, importlib.resources as r\n"
            "meta = m.metadata('graphlife')\n"
            "print(json.dumps({'license': meta['License-Expression'], 'author': meta['Author'],\n"
            "  'extras': meta.get_all('Provides-Extra'), 'classifiers': meta.get_all('Classifier'),\n"
            "  'readme': len(meta.get_payload() or ''), 'license_file': any('LICENSE' in str(f) for f in\n"
            "  m.files('graphlife')), 'typed': r.files('graphlife').joinpath('py.typed').is_file()}))")
    facts = json.loads(in_venv(venv, "python", "-c", code).stdout)
    assert facts["license"] == "MIT" and facts["author"] == "graphlife developers"
    assert {"lsp", "test"} <= set(facts["extras"])
    assert "Typing :: Typed" in facts["classifiers"]
    assert facts["license_file"] and facts["typed"]
    assert facts["readme"] > 2000  # the package's own readme, not a stub


def test_the_checker_and_explain_work_without_the_editor_libraries(venv: Path, tmp_path: Path) -> None:
    missing = in_venv(venv, "python", "-c", "import importlib.util as u; "
                      "print([m for m in ('pygls', 'lsprotocol', 'libcst') if u.find_spec(m)])")
    assert missing.stdout.strip() == "[]"
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    (tmp_path / "train.ipynb").write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "source": DOUBLE_BACKWARD, "metadata": {}, "outputs": [],
                   "execution_count": None}]}))
    checked = in_venv(venv, "graphlife", "check", "--output-format", "concise", ".", cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr
    assert "train.py:6:1: GL101" in checked.stdout and "train.ipynb:cell 1:6:1: GL101" in checked.stdout
    probe = in_venv(venv, "python", "-c", "from graphlife.debug import explain; print(callable(explain))")
    assert probe.stdout.strip() == "True", probe.stderr  # the debug probe's entry, for the user's own program
    explained = in_venv(venv, "graphlife", "explain", stdin=TRACEBACK, cwd=tmp_path)
    assert explained.returncode in (0, 1) and "Traceback" not in explained.stderr
    assert "backward" in explained.stdout.lower()


def test_the_server_and_fixes_name_the_extra_to_install(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DOUBLE_BACKWARD)
    for command in (("graphlife", "lsp", "--stdio"), ("graphlife", "check", "--fix", "train.py")):
        proc = in_venv(venv, *command, cwd=tmp_path)
        assert proc.returncode == 2
        assert "pip install 'graphlife[lsp]'" in proc.stderr and "Traceback" not in proc.stderr
