"""Diagnostics for the parts of a document graphlife could not analyze.

A syntax error makes the checker skip the top-level block around it; a time box
makes it skip the rest of a file. Both used to go to the log only, and a user
whose training loop lost every finding to a stray indent saw "No problems have
been detected". So they are shown where the user looks: a syntax error as an
error on its position (``graphlife.showSyntaxErrors``, on by default, as ruff's
setting of that name; off for users whose other tools already show it), and
skipped work as one information diagnostic on the document's first line.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from graphlife.checker import SyntaxProblem
from graphlife.findings import MessageTemplate, Span
from graphlife.lsp.diagnostics import SOURCE, locate
from graphlife.lsp.documents import Snapshot

#: The words every checker note about skipped code contains ("...; later functions were not
#: analyzed", "file is larger than 20 MB; not analyzed"); other notes (an unreadable import,
#: bytes that are not UTF-8) are about something else and stay in the log.
_SKIPPED = "not analyzed"


#: Python's own words (``error.message``) stay as Python prints them, quoted in either language.
SYNTAX_ERROR = MessageTemplate(
    "lsp.syntax-error", "SyntaxError: {error} (graphlife did not analyze the top-level block around it)",
    zh_cn="SyntaxError: {error}（graphlife 没有分析它所在的顶层代码块）")
NOT_ALL_OF_FILE = MessageTemplate("lsp.skipped-file", "graphlife did not analyze all of this file: {notes}.",
                                  zh_cn="graphlife 没有分析完这个文件：{notes}。")
NOT_ALL_OF_NOTEBOOK = MessageTemplate(
    "lsp.skipped-notebook", "graphlife did not analyze all of this notebook: {notes}.",
                                      zh_cn="graphlife 没有分析完这个笔记本：{notes}。")


def syntax_error_diagnostics(snapshot: Snapshot, errors: Sequence[SyntaxProblem],
                             codec: PositionCodec, language: str = "en") -> dict[str, list[types.Diagnostic]]:
    """One error diagnostic per syntax error, on the document (notebook cell) it is in."""
    out: dict[str, list[types.Diagnostic]] = {}
    for error in errors:
        line, column = max(error.line, 1), max(error.column, 1)
        where = locate(snapshot, Span(line, column, line, column + 1), codec)
        if where is None:
            continue
        uri, rng = where
        out.setdefault(uri, []).append(types.Diagnostic(
            range=rng,
            message=SYNTAX_ERROR(error=error.message).in_language(language),
            severity=types.DiagnosticSeverity.Error,
            source=SOURCE,
        ))
    return out


def skipped_notes(notes: Sequence[str]) -> list[str]:
    """The checker's notes that say code was left unanalyzed."""
    return [note for note in notes if _SKIPPED in note]


def skipped_work_diagnostics(snapshot: Snapshot, notes: Sequence[str],
                             codec: PositionCodec, language: str = "en") -> dict[str, list[types.Diagnostic]]:
    """One information diagnostic on the first line of the document (the first cell of a
    notebook) saying which parts were not analyzed, so that no findings there is not read as
    "no bugs there"."""
    skipped = skipped_notes(notes)
    if not skipped or not snapshot.segments:
        return {}
    first = snapshot.segments[0]
    where = locate(snapshot, Span(first.line_offset + 1, 1, first.line_offset + 1,
                                  len(first.lines[0]) + 1 if first.lines else 1), codec)
    if where is None:
        return {}
    uri, rng = where
    template = NOT_ALL_OF_NOTEBOOK if snapshot.is_notebook else NOT_ALL_OF_FILE
    separator = "；" if language == "zh-CN" else "; "
    told = separator.join(snapshot.user_text(note, language) for note in skipped)
    return {uri: [types.Diagnostic(
        range=rng,
        message=template(notes=told).in_language(language),
        severity=types.DiagnosticSeverity.Information,
        source=SOURCE,
    )]}


def unanalyzed_diagnostics(snapshot: Snapshot, errors: Sequence[SyntaxProblem], notes: Sequence[str],
                           codec: PositionCodec, show_syntax_errors: bool,
                           language: str = "en") -> dict[str, list[types.Diagnostic]]:
    """Both kinds, per URI (syntax errors only when the user wants them shown)."""
    out = syntax_error_diagnostics(snapshot, errors, codec, language) if show_syntax_errors else {}
    for uri, diagnostics in skipped_work_diagnostics(snapshot, notes, codec, language).items():
        out.setdefault(uri, []).extend(diagnostics)
    return out
