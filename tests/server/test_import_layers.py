"""The import layers of `server/.importlinter` catch what they are meant to.

Why it matters to a user: `graphlife check` must not load the fixer (libcst), and a rule
must not depend on how a fix is written, only on why it is right. The fix subsystem is one
package with two sides: its proofs (`graphlife.fixes.proofs`) sit below the rules, which
import them; the fixer (recipes to edits, verified by re-analysis) sits above the checker.
Each test copies the package, adds one import that crosses a line, and runs `lint-imports`
on the copy: the contracts must break. The unchanged copy must pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[2] / "server"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(SERVER / "graphlife", root / "graphlife", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(SERVER / ".importlinter", root / ".importlinter")
    return root


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def with_module(pristine: Path, tmp_path: Path, relative: str, text: str) -> Path:
    """A copy of the package with one more module (or one module replaced)."""
    root = tmp_path / "copy"
    shutil.copytree(pristine, root)
    (root / "graphlife" / relative).write_text(text)
    return root


def test_the_package_as_it_is_keeps_every_contract(pristine):
    result = lint(pristine)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("import_line", [
    "import graphlife.fixes.apply\n",
    "from graphlife.fixes import compute_fixes\n",  # the package's lazy entry point leads to the fixer
    "from graphlife.fixes.verify import FixVerifier\n",
])
def test_a_rule_that_imports_the_fixer_breaks_the_layers(pristine, tmp_path, import_line):
    result = lint(with_module(pristine, tmp_path, "rules/gl999_imports_the_fixer.py", import_line))
    assert result.returncode != 0
    assert "graphlife.rules.gl999_imports_the_fixer -> graphlife.fixes" in result.stdout


def test_a_rule_may_import_the_proofs(pristine, tmp_path):
    result = lint(with_module(pristine, tmp_path, "rules/gl999_uses_a_proof.py",
                              "from graphlife.fixes.proofs.carried import still_carried\n"))
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("import_line", [
    "import graphlife.rules.base\n",  # a proof below the rules that import it
    "import graphlife.fixes.document\n",  # the fixer's libcst side
    "import graphlife.checker\n",
])
def test_a_proof_that_imports_above_its_layer_breaks_the_contracts(pristine, tmp_path, import_line):
    result = lint(with_module(pristine, tmp_path, "fixes/proofs/reaches_up.py", import_line))
    assert result.returncode != 0
    assert "graphlife.fixes.proofs.reaches_up -> " in result.stdout


def test_a_new_module_of_the_fix_package_must_take_a_side(pristine, tmp_path):
    result = lint(with_module(pristine, tmp_path, "fixes/undeclared.py", '"""Neither the fixer nor a proof yet."""\n'))
    assert result.returncode != 0
    assert "graphlife.fixes.undeclared" in result.stdout
