"""The text formats: ``text`` (full: each finding with its source line marked and its
related places) and ``concise`` (``path:line:col: CODE severity: message``, one a line).
Both end with a summary unless ``--quiet``; ``--statistics`` prints the counts instead.

The writing itself is :mod:`graphlife.output.text_render`, which a check answered from the
cache (:mod:`graphlife.fast_check`) calls too, so that both print the same text."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from graphlife.findings import MessageTemplate
from graphlife.output.text_render import SEVERITY_COLOURS, WORDS, Painter, write_report, write_summary

if TYPE_CHECKING:
    from graphlife.output.report import RunResult

__all__ = ["SEVERITY_COLOURS", "Painter", "write_concise", "write_full"]


def write_full(result: RunResult, out: TextIO) -> None:
    _write(result, out, excerpts=True)


def write_concise(result: RunResult, out: TextIO) -> None:
    _write(result, out, excerpts=False)


def _write(result: RunResult, out: TextIO, excerpts: bool) -> None:
    if result.statistics:
        from graphlife.output.statistics import write_statistics_table  # noqa: PLC0415

        write_statistics_table(result, out)
        return
    paint = Painter(result.colour)
    for report in result.reports:
        write_report(report, out, paint, excerpts, result.language)
    if not result.quiet:
        partly = sum(1 for note in result.notes if note.path is not None and "time box" in note.message)
        write_summary(out, [finding["severity"] for finding in result.findings()], len(result.syntax_errors()),
                      result.files_checked(), partly, result.language)


def _template(word: str) -> MessageTemplate:
    english, chinese = WORDS[word]
    return MessageTemplate(word, english, zh_cn=chinese)


# The words of the text formats as message templates (English and Chinese), one per pair of
# :data:`graphlife.output.text_render.WORDS`: the catalog of messages and its tests see them.
LINE = _template("text.line")
NOTE = _template("text.note")
FOUND = _template("text.found")
ALL_PASSED = _template("text.all-passed")
PROBLEM = _template("text.problem")
PROBLEMS = _template("text.problems")
FILE = _template("text.file")
FILES = _template("text.files")
PARTLY_ONE = _template("text.partly-one")
PARTLY = _template("text.partly")
ERRORS = _template("text.errors")
ERROR = _template("text.error")
WARNINGS = _template("text.warnings")
WARNING = _template("text.warning")
INFORMATION = _template("text.information")
INFORMATION_ONE = _template("text.information-one")
HINTS = _template("text.hints")
HINT = _template("text.hint")
SYNTAX_ERRORS = _template("text.syntax-errors")
SYNTAX_ERROR = _template("text.syntax-error")
