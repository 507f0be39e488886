"""``Finding`` -> LSP ``Diagnostic``, on the document (or notebook cell) it belongs to.

Everything the editor shows about a finding is decided here: the code and its
documentation link (``codeDescription``, only when graphlife's metadata names a
site), ``source: "graphlife"``, the severity after the user's overrides (the checker already applied them), the related
places (where the graph was built, where a backward freed it) and the tags
that change how the editor draws the range.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace.position_codec import PositionCodec

from graphlife.findings import Finding, Severity, Span, localized
from graphlife.lsp.documents import Snapshot
from graphlife.lsp.positions import span_to_range
from graphlife.lsp.rule_links import web_url

SOURCE = "graphlife"

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}

#: Rules whose range the editor should draw specially.
#: GL202: the ``retain_graph=True`` argument does nothing useful -> faded out.
#: GL405: an API use torch announces it will break -> struck through.
_TAGS = {
    "GL202": [types.DiagnosticTag.Unnecessary],
    "GL405": [types.DiagnosticTag.Deprecated],
}


def _docs_url(code: str) -> str | None:
    """The rule's web page, only when graphlife's metadata names a documentation site
    (:mod:`.rule_links`); the editor's command opens the bundled page otherwise."""
    try:
        from graphlife.rules import rule_by_code  # noqa: PLC0415

        rule = rule_by_code(code)
    except Exception:  # noqa: BLE001 - a broken rule module must not hide the finding
        return None
    return web_url(rule) if rule is not None else None


def locate(snapshot: Snapshot, span: Span, codec: PositionCodec,
           other_lines: Mapping[str, Sequence[str]] | None = None) -> tuple[str, types.Range] | None:
    """The document URI and LSP range of a span: of the analyzed source, or (``span.path``) of
    another file of the project, whose positions convert with that file's own lines."""
    if span.path is not None:
        lines = (other_lines or {}).get(span.path)
        if lines is None:
            return None
        return file_uri(span.path), span_to_range(span, lines, codec)
    segment = snapshot.segment_for_line(span.line)
    if segment is None:
        return None
    if span.end_line - segment.line_offset > len(segment.lines):  # runs past a cell: stop at its end
        last = len(segment.lines)
        span = Span(span.line, span.column, segment.line_offset + last, len(segment.lines[-1]) + 1)
    return segment.uri, span_to_range(span, segment.lines, codec, segment.line_offset)


def file_uri(path: str) -> str:
    """The ``file:`` URI of a path of the project (how VS Code spells it)."""
    return from_fs_path(path) or Path(path).as_uri()


def to_diagnostic(
    finding: Finding, snapshot: Snapshot, codec: PositionCodec, other_lines: Mapping[str, Sequence[str]] | None = None,
    language: str = "en",
) -> tuple[str, types.Diagnostic] | None:
    """The diagnostic of one finding and the URI to publish it on (another file's, for a finding
    the analysis found there; its related information may point into any file), its texts in
    ``language``."""
    where = locate(snapshot, finding.span, codec, other_lines)
    if where is None:
        return None
    uri, rng = where
    # Line numbers of the analyzed source become cell lines in a notebook; a message about
    # another file names that file's lines, which are its own.
    def user_text(text: str) -> str:
        if finding.span.path is None:
            return snapshot.user_text(text, language)
        return localized(text, language)

    related = []
    for item in finding.related:
        other = locate(snapshot, item.span, codec, other_lines)
        if other is not None:
            related.append(
                types.DiagnosticRelatedInformation(
                    location=types.Location(uri=other[0], range=other[1]), message=user_text(item.message)
                )
            )
    url = _docs_url(finding.code)
    diagnostic = types.Diagnostic(
        range=rng,
        message=user_text(finding.message),
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        related_information=related or None,
        tags=_TAGS.get(finding.code),
        data={"name": finding.name},
    )
    return uri, diagnostic


def diagnostics_by_uri(
    findings: list[Finding], snapshot: Snapshot, codec: PositionCodec,
    other_lines: Mapping[str, Sequence[str]] | None = None, language: str = "en",
) -> dict[str, list[types.Diagnostic]]:
    """Diagnostics grouped by document; every document of the snapshot gets a (maybe empty)
    list, another file of the project one when a finding is there."""
    out: dict[str, list[types.Diagnostic]] = {segment.uri: [] for segment in snapshot.segments}
    for finding in findings:
        converted = to_diagnostic(finding, snapshot, codec, other_lines, language)
        if converted is not None:
            out.setdefault(converted[0], []).append(converted[1])
    return out


def merge_diagnostics(lists: Iterable[Sequence[types.Diagnostic]]) -> list[types.Diagnostic]:
    """The diagnostics of one document from several analyses (its own, and those of the open
    documents that import it): one per range and rule, the strongest severity deciding, as
    ``graphlife check`` reports a statement once however many entry files reach it."""
    kept: dict[tuple, types.Diagnostic] = {}
    for diagnostics in lists:
        for diagnostic in diagnostics:
            start, end = diagnostic.range.start, diagnostic.range.end
            # Diagnostics without a code (a syntax error, skipped work) differ by their message.
            key = (start.line, start.character, end.line, end.character, diagnostic.code,
                   diagnostic.message if diagnostic.code is None else "")
            present = kept.get(key)
            if present is None or _rank(diagnostic) < _rank(present):
                kept[key] = diagnostic
    return sorted(kept.values(), key=lambda d: (d.range.start.line, d.range.start.character, str(d.code)))


def _rank(diagnostic: types.Diagnostic) -> int:
    """Error 1 ... Hint 4 (a missing severity reads as a warning, as clients show it)."""
    return int(diagnostic.severity or types.DiagnosticSeverity.Warning)
