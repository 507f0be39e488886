"""``compute_fixes`` and ``fix_source``: the one path from findings to edited text.

Why one module: the language server's code actions and ``graphlife fix`` must apply
the same edits. ``compute_fixes`` never raises on odd input (a recipe that trips on
an unexpected shape is treated as "not applicable"), and every fix is checked to
leave parseable source before it is offered.
"""

from __future__ import annotations

import libcst as cst

from graphlife.config import Config
from graphlife.findings import Finding, Span
from graphlife.fixes import ResolvedFix, TextEdit
from graphlife.fixes.document import Document
from graphlife.fixes.registry import RECIPES
from graphlife.text_lines import LineOffsets

#: ``fix_source`` re-checks after each round; a fix may reveal the next finding.
MAX_ROUNDS = 4


def compute_fixes(finding: Finding, source: str, _doc: Document | None = None) -> list[ResolvedFix]:
    """Every applicable fix of ``finding`` on ``source``, the first one preferred."""
    try:
        doc = _doc or Document(source)
    except cst.ParserSyntaxError:
        return []
    fixes: list[ResolvedFix] = []
    kinds = {r.kind for r in finding.fixes}
    for recipe in finding.fixes:
        make = RECIPES.get(recipe.kind)
        if make is None:
            continue
        if (
            recipe.kind == "detach_expression"
            and "merge_backwards" in kinds
            and _offers(doc, finding, "merge_backwards")
        ):
            # two adjacent backwards through a shared part: detaching the shared tensor would
            # silently stop one loss from training it; the merged backward keeps both gradients
            continue
        try:
            edits = make(doc, {**recipe.params, "_finding": finding.span})
        except Exception:  # noqa: BLE001 - an unexpected shape means "no fix", never a crash
            edits = None
        if not edits or not _parses(apply_edits(source, edits)):
            continue
        fixes.append(ResolvedFix(recipe.title, not fixes, tuple(edits)))
    return fixes


def _offers(doc: Document, finding: Finding, kind: str) -> bool:
    for recipe in finding.fixes:
        if recipe.kind == kind:
            try:
                if RECIPES[kind](doc, {**recipe.params, "_finding": finding.span}):
                    return True
            except Exception:  # noqa: BLE001
                return False
    return False


def _parses(source: str) -> bool:
    try:
        compile(source, "<fix>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _range(offsets: LineOffsets, span: Span) -> tuple[int, int]:
    return offsets.offset(span.line, span.column), offsets.offset(span.end_line, span.end_column)


def apply_edits(source: str, edits: list[TextEdit] | tuple[TextEdit, ...]) -> str:
    """Apply non-overlapping edits (coordinates of ``source``), last first."""
    offsets = LineOffsets(source)
    ranged = sorted(((*_range(offsets, e.span), e.new_text) for e in edits), key=lambda r: (r[0], r[1]), reverse=True)
    for start, end, text in ranged:
        source = source[:start] + text + source[end:]
    return source


def _conflicts(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] == b[0] or (max(a[0], b[0]) < min(a[1], b[1]))


def fix_source(source: str, path: str | None = None, config: Config | None = None) -> str:
    """``source`` with the preferred fix of every finding applied, re-checked until stable.

    A file that does not parse is returned unchanged. Fixes whose edits overlap an
    already chosen fix wait for the next round (their finding is re-derived then).
    """
    from graphlife.checker import check_source  # noqa: PLC0415 - the checker imports the rules

    seen = {source}
    for _ in range(MAX_ROUNDS):
        if not _parses(source):
            return source
        result = check_source(source, path, config)
        if getattr(result, "syntax_errors", None):
            return source
        try:
            doc = Document(source)
        except cst.ParserSyntaxError:
            return source
        offsets = LineOffsets(source)
        taken: list[tuple[int, int]] = []
        chosen: list[TextEdit] = []
        for finding in result.findings:
            fixes = compute_fixes(finding, source, doc)
            if not fixes:
                continue
            ranges = [_range(offsets, e.span) for e in fixes[0].edits]
            if any(_conflicts(r, t) for r in ranges for t in taken):
                continue
            taken.extend(ranges)
            chosen.extend(fixes[0].edits)
        if not chosen:
            break
        fixed = apply_edits(source, chosen)
        if not _parses(fixed) or fixed in seen:
            break  # a fix of one rule undone by another's: stop before going round in circles
        seen.add(fixed)
        source = fixed
    return source
