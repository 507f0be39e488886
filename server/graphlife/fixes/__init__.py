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
"""

from __future__ import annotations

from dataclasses import dataclass

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


from graphlife.fixes.apply import compute_fixes, fix_source  # noqa: E402 - needs the classes above

__all__ = ["ResolvedFix", "TextEdit", "compute_fixes", "fix_source"]
