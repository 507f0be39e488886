"""``compute_fixes`` and ``fix_source``: the one path from findings to edited text.

Why one module: the language server's code actions and ``graphlife fix`` must apply
the same edits. ``compute_fixes`` never raises on odd input (a recipe that trips on
an unexpected shape is treated as "not applicable"), and every fix is checked to
leave parseable source before it is offered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from graphlife.config import Config
from graphlife.findings import Applicability, Finding, FixRecipe, Span
from graphlife.fixes import ResolvedFix, TextEdit
from graphlife.fixes.document import Document
from graphlife.fixes.registry import make_edits
from graphlife.fixes.verify import Analyze, FixVerifier, Modules, engine_analyze, new_errors
from graphlife.recipes import DetachExpression, MergeBackwards
from graphlife.text_lines import LineOffsets

#: ``fix_source`` re-checks after each round; a fix may reveal the next finding.
MAX_ROUNDS = 4


def compute_fixes(
    finding: Finding,
    source: str,
    _doc: Document | None = None,
    *,
    path: str | None = None,
    config: Config | None = None,
    verifier: FixVerifier | None = None,
    modules: Modules | None = None,
) -> list[ResolvedFix]:
    """Every fix of ``finding`` on ``source`` the engine accepts, best first; the first safe
    one is preferred.

    Each fix is applied to a copy of the text and re-analyzed (:mod:`graphlife.fixes.verify`):
    one that leaves the finding or adds an error is not offered. ``verifier`` shares that
    work between the findings of one text (``path``, ``config`` and ``modules``, the project
    the finding was found in, make one otherwise).
    """
    try:
        doc = _doc or Document(source)
    except cst.ParserSyntaxError:
        return []
    if verifier is None:
        verifier = FixVerifier(source, engine_analyze(path, config, modules))
    fixes: list[ResolvedFix] = []
    merges = _offers(doc, finding, MergeBackwards)
    for recipe in finding.fixes:
        if isinstance(recipe, DetachExpression) and merges:
            # two adjacent backwards through a shared part: detaching the shared tensor would
            # silently stop one loss from training it; the merged backward keeps both gradients
            continue
        try:
            edits = make_edits(doc, recipe, finding.span)
        except Exception:  # noqa: BLE001 - an unexpected shape means "no fix", never a crash
            edits = None
        if not edits:
            continue
        fixed = apply_edits(source, edits)
        if not _parses(fixed) or not verifier.accepts(finding, fixed, edits):
            continue
        fixes.append(ResolvedFix(recipe.title, False, tuple(edits), recipe.applicability, recipe.kind))
    preferred = next((i for i, fix in enumerate(fixes) if fix.applicability is Applicability.SAFE), None)
    if preferred is not None:
        fixes[preferred] = replace(fixes[preferred], preferred=True)
    return fixes


def _offers(doc: Document, finding: Finding, kind: type[FixRecipe]) -> bool:
    for recipe in finding.fixes:
        if isinstance(recipe, kind):
            try:
                if make_edits(doc, recipe, finding.span):
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


def fix_source(source: str, path: str | None = None, config: Config | None = None, *, unsafe: bool = False,
               modules: Modules | None = None, analyze: Analyze | None = None) -> str:
    """``source`` with the best accepted fix of every finding applied, re-checked until stable.

    Safe fixes only, unless ``unsafe`` (``--unsafe-fixes``): then the best fix of each finding,
    safe or not. A file that does not parse is returned unchanged. Fixes whose edits overlap
    an already chosen fix wait for the next round (their finding is re-derived then). With
    ``modules`` (the file's project, as its check followed it), every analysis follows the
    file's imports too. ``analyze`` replaces the checker (the editor's incremental one).
    """
    analyze = analyze or engine_analyze(path, config, modules)
    seen = {source}
    for _ in range(MAX_ROUNDS):
        if not _parses(source):
            return source
        findings = analyze(source)
        if findings is None:
            return source
        try:
            doc = Document(source)
        except cst.ParserSyntaxError:
            return source
        chosen = [edit for fix in choose_fixes(source, findings, FixVerifier(source, analyze, findings), unsafe, doc)
                  for edit in fix]
        if not chosen:
            break
        fixed = apply_edits(source, chosen)
        if not _parses(fixed) or fixed in seen:
            break  # a fix of one rule undone by another's: stop before going round in circles
        after = analyze(fixed)
        if after is None or new_errors(findings, after):
            break  # fixes that were right one by one, wrong together: keep what was proven
        seen.add(fixed)
        source = fixed
    return source


def choose_fixes(source: str, findings: Sequence[Finding], verifier: FixVerifier, unsafe: bool,
                 doc: Document | None = None,
                 allowed: Callable[[tuple[TextEdit, ...]], bool] | None = None) -> list[tuple[TextEdit, ...]]:
    """One round of ``graphlife fix``: the edits of the best accepted fix of each finding (safe
    only, unless ``unsafe``) that ``allowed`` lets through and that overlaps no fix chosen before."""
    offsets = LineOffsets(source)
    taken: list[tuple[int, int]] = []
    chosen: list[tuple[TextEdit, ...]] = []
    for finding in findings:
        fixes = compute_fixes(finding, source, doc, verifier=verifier)
        fix = next((f for f in fixes if (unsafe or f.safe) and (allowed is None or allowed(f.edits))), None)
        if fix is None:
            continue
        ranges = [_range(offsets, e.span) for e in fix.edits]
        if any(_conflicts(r, t) for r in ranges for t in taken):
            continue
        taken.extend(ranges)
        chosen.append(fix.edits)
    return chosen
