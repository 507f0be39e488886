"""Entry point of the engine (being written): runs syntactic rules and the abstract interpreter."""

from __future__ import annotations

import ast

from graphlife.findings import Finding
from graphlife.rules.base import ModuleContext, Reporter, Rule


def analyze_module(tree: ast.Module, source: str, rules: list[Rule], *, deadline: float) -> tuple[list[Finding], list[str]]:
    """Findings of ``rules`` on one parsed file, and notes about skipped work."""
    reporter = Reporter()
    lines = source.splitlines()
    notes: list[str] = []
    context = ModuleContext(tree=tree, source=source, lines=lines, reporter=reporter)
    for rule in rules:
        if rule.check_module is not None:
            rule.check_module(context)
    return reporter.findings, notes
