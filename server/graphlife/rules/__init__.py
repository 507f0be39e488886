"""The rule catalog: every module ``glNNN_*.py`` in this package defines one ``RULE``."""

from __future__ import annotations

import functools
import importlib
import pkgutil

from graphlife.analysis.rule_api import Rule


@functools.lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every rule, ordered by code."""
    rules = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("gl") and info.name[2:5].isdigit():
            module = importlib.import_module(f"{__name__}.{info.name}")
            rules.append(module.RULE)
    return tuple(sorted(rules, key=lambda r: r.code))


def rule_by_code(code: str) -> Rule | None:
    """The rule with this code, or ``None``."""
    return next((rule for rule in all_rules() if rule.code == code), None)
