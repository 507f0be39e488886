"""Fix recipes -> text edits, with libcst on the smallest enclosing statement.

The language server's code actions and `graphlife fix` call the same two
functions, so the editor applies exactly what the command line applies.

Contract (see docs/CONVENTIONS.md):
- ``compute_fixes(finding, source) -> list[ResolvedFix]``: every fix of a finding
  that can be made on this source and that the engine accepts on the fixed text
  (:mod:`graphlife.fixes.verify`), best first; the first safe one is preferred.
- ``fix_source(source, path=None, config=None, unsafe=False) -> str``: the source with
  the best safe fix (any fix, with ``unsafe``) of every finding applied, re-checked
  until stable.

The package has two sides. :mod:`graphlife.fixes.proofs` decides, during the analysis,
where a recipe is right; every ``graphlife check`` runs it, and the rules import it (the
only part of this package they may import: ``server/.importlinter``). The other modules
turn recipes into edits with libcst and verify them, which only ``graphlife fix`` and the
editor's code actions need. So this file imports the fixer lazily: loading the proofs
loads this package, and must not load libcst.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphlife.findings import Applicability, Span


@dataclass(frozen=True)
class TextEdit:
    """Replace ``span`` (1-based lines, 1-based character columns, end exclusive) by ``new_text``."""

    span: Span
    new_text: str


@dataclass(frozen=True)
class ResolvedFix:
    """A fix ready to apply: its title, whether it is the preferred one, its edits, whether it
    is safe to apply without asking, and the recipe it came from."""

    title: str
    preferred: bool
    edits: tuple[TextEdit, ...]
    applicability: Applicability = Applicability.SAFE
    kind: str = ""

    @property
    def safe(self) -> bool:
        return self.applicability is Applicability.SAFE


if TYPE_CHECKING:
    from graphlife.fixes.apply import compute_fixes, fix_source

__all__ = ["ResolvedFix", "TextEdit", "compute_fixes", "fix_source"]

#: The fixer's entry points, loaded on first use (they import libcst).
_FIXER_ENTRY_POINTS = frozenset({"compute_fixes", "fix_source"})


def __getattr__(name: str) -> object:
    """``graphlife.fixes.compute_fixes`` and ``fix_source`` load the fixer when first asked
    for; a check, which loads only the proofs, never pays for libcst."""
    if name in _FIXER_ENTRY_POINTS:
        from graphlife.fixes import apply  # noqa: PLC0415 - the fixer loads only when used

        return getattr(apply, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
