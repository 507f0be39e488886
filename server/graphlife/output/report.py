"""The result of a `graphlife check` run, as every output format reads it.

Findings are the JSON-ready dictionaries of :meth:`graphlife.findings.Finding.to_json`
(that shape is what ``--output-format json`` documents), kept per file in a
:class:`FileReport` that worker processes can pickle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphlife.output.text_render import SEVERITY_RANK, shown_message


@dataclass
class FileReport:
    """What checking one file produced, in a picklable form for worker processes."""

    path: str
    findings: list[dict] = field(default_factory=list)
    syntax_errors: list[tuple[int, int, str]] = field(default_factory=list)
    #: For a notebook: the (cell, line in the cell) of each syntax error, in the same order.
    syntax_error_cells: list[tuple[int, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Problems with the settings the file was checked with (reported once per run, not per file).
    settings_problems: list[str] = field(default_factory=list)
    read_error: str | None = None
    lines: list[str] = field(default_factory=list)
    fixed_source: str | None = None
    original_source: str | None = None
    #: Checked as asked (``False``: another file of the project, reported for what a checked
    #: file reached in it).
    checked: bool = True
    #: The lines of the project's other files that findings point into (for the source excerpt).
    other_lines: dict[str, list[str]] = field(default_factory=dict)
    encoding: str = "utf-8"  # as the file was read (a fix is written back the same way)

    def syntax_error_dicts(self) -> list[dict[str, Any]]:
        """The syntax errors in the JSON shape: path, line, column, message (and the cell)."""
        out = []
        for index, (line, column, message) in enumerate(self.syntax_errors):
            entry: dict[str, Any] = {"path": self.path, "line": line, "column": column, "message": message}
            if self.syntax_error_cells:
                entry["cell"], entry["cell_line"] = self.syntax_error_cells[index]
            out.append(entry)
        return out


@dataclass(frozen=True)
class Note:
    """Something the user should know that is not a finding: a file analyzed only in part
    (the time box), a notebook not checked, a setting that could not be used. ``path`` is
    ``None`` for the run as a whole."""

    path: str | None
    message: str
    #: ``"warning"`` (the result may be incomplete) or ``"error"`` (a file could not be read).
    level: str = "warning"


@dataclass
class RunResult:
    """Everything a run found, for the output formats."""

    version: str
    reports: list[FileReport]
    notes: list[Note] = field(default_factory=list)
    #: ``--statistics``: counts per rule instead of the findings.
    statistics: bool = False
    #: ``--quiet``: the findings only (no summary line).
    quiet: bool = False
    #: Colours for the text formats (a terminal, and NO_COLOR unset).
    colour: bool = False
    #: The language of the messages (:mod:`graphlife.i18n`): the findings carry theirs as
    #: ``localized_message``; the text formats write their own words in it too.
    language: str = "en"

    def findings(self) -> list[dict]:
        return [finding for report in self.reports for finding in report.findings]

    def syntax_errors(self) -> list[dict[str, Any]]:
        return [entry for report in self.reports for entry in report.syntax_error_dicts()]

    def files_checked(self) -> int:
        return sum(1 for report in self.reports if report.checked)

    def counts_by_code(self) -> list[tuple[str, str, int]]:
        """(code, name, count) per rule found, most frequent first; syntax errors as ``syntax-error``."""
        counts: dict[tuple[str, str], int] = {}
        for finding in self.findings():
            key = (finding["code"], finding["name"])
            counts[key] = counts.get(key, 0) + 1
        syntax = len(self.syntax_errors())
        if syntax:
            counts[("syntax-error", "syntax-error")] = syntax
        return sorted(((code, name, n) for (code, name), n in counts.items()), key=lambda row: (-row[2], row[0]))


__all__ = ["SEVERITY_RANK", "FileReport", "Note", "RunResult", "exit_status", "fails", "shown_message"]


def fails(severity: str, fail_on: str) -> bool:
    """Whether a finding of ``severity`` fails the run at threshold ``fail_on``."""
    return SEVERITY_RANK[severity] <= SEVERITY_RANK[fail_on]


def exit_status(result: RunResult, fail_on: str, usage_or_read_error: bool) -> int:
    """2 on a usage error or an unreadable file; else 1 when a finding at or above ``fail_on``
    or a syntax error (a part of a file that could not be checked) remains; else 0."""
    if usage_or_read_error:
        return 2
    if result.syntax_errors() or any(fails(f["severity"], fail_on) for f in result.findings()):
        return 1
    return 0
