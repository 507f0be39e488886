"""Each rule documents itself, and docs/rules.md (where every diagnostic links) is generated from that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphlife.rules import all_rules

ROOT = Path(__file__).resolve().parents[2]


def test_rules_page_is_current():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_rule_docs.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_documents_itself(rule):
    for section in ("What it does", "Why is this bad?", "Example", "Use instead"):
        assert rule.doc.section(section), f"{rule.code} has no `## {section}` section"
    if rule.severity.value == "error":
        assert rule.doc.section("What torch says"), f"{rule.code} (error) must quote what torch raises"
    page = (ROOT / "docs" / "rules.md").read_text()
    assert f"## {rule.code} {rule.name}" in page and rule.docs_anchor == f"{rule.code.lower()}-{rule.name}"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_users_never_see_the_sections_for_test_authors(rule):
    """`graphlife rules CODE`, the editor's rule page and docs/rules.md are user documentation."""
    assert "Fixture line" not in rule.markdown()
    assert rule.doc.section("What it does") in rule.markdown()
    assert "Fixture line" not in (ROOT / "docs" / "rules.md").read_text()


def test_graphlife_rules_prints_the_user_documentation():
    proc = subprocess.run([sys.executable, "-m", "graphlife", "rules", "GL102"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT / "server")})
    assert proc.returncode == 0, proc.stderr
    assert "## What it does" in proc.stdout
    assert "Fixture line" not in proc.stdout  # the docstring has one, for the fixtures' authors


def test_fix_recipes_page_is_current():
    """docs/FIX_RECIPES.md lists exactly the recipes the code has (tools/gen_fix_recipes.py)."""
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_fix_recipes.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_says_how_safe_its_fixes_are(rule):
    assert rule.doc.section("Fix safety"), f"{rule.code} has no `## Fix safety` section"
