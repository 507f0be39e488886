"""The text formats: ``text`` (full: each finding with its source line marked and its
related places) and ``concise`` (``path:line:col: CODE severity: message``, one a line).
Both end with a summary unless ``--quiet``; ``--statistics`` prints the counts instead."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from graphlife.output.report import FileReport, RunResult

SEVERITY_COLOURS = {"error": "1;31", "warning": "1;33", "information": "1;34", "hint": "2"}


class Painter:
    """ANSI colours when the run writes to a terminal (and NO_COLOR is unset), else plain."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text


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
        _write_report(report, out, paint, excerpts)
    if not result.quiet:
        _write_summary(result, out)


def _write_report(report: FileReport, out: TextIO, paint: Painter, excerpts: bool) -> None:
    for index, (line, column, message) in enumerate(report.syntax_errors):
        if report.syntax_error_cells:
            cell, cell_line = report.syntax_error_cells[index]
            where = f"cell {cell}:{cell_line}"
        else:
            where = str(line)
        out.write(f"{paint(report.path, '1')}:{where}:{column}: {paint('syntax error', '1;31')}: {message}\n")
    for finding in report.findings:
        severity = finding["severity"]
        where = f"cell {finding['cell']}:{finding['cell_line']}" if "cell" in finding else str(finding["line"])
        head = f"{paint(report.path, '1')}:{where}:{finding['column']}: "
        code = paint(finding["code"], "1")
        out.write(f"{head}{code} {paint(severity, SEVERITY_COLOURS.get(severity, '0'))}: {finding['message']}\n")
        if not excerpts:
            continue
        if 0 < finding["line"] <= len(report.lines):
            text = report.lines[finding["line"] - 1]
            start = finding["column"] - 1
            end = finding["end_column"] - 1 if finding["end_line"] == finding["line"] else len(text)
            end = max(end, start + 1)
            out.write(f"  {finding.get('cell_line', finding['line']):>5} | {text}\n")  # a notebook: its cell's line
            out.write(f"        | {' ' * start}{paint('^' * (end - start), SEVERITY_COLOURS.get(severity, '0'))}\n")
        for related in finding["related"]:
            elsewhere = related.get("path", report.path) != report.path
            where = f"{related['path']}:{related['line']}" if elsewhere else f"line {related['line']}"
            out.write(f"        = note: {where}: {related['message']}\n")


def _write_summary(result: RunResult, out: TextIO) -> None:
    counts: dict[str, int] = {}
    for finding in result.findings():
        counts[finding["severity"]] = counts.get(finding["severity"], 0) + 1
    syntax = len(result.syntax_errors())
    if syntax:
        counts["syntax error"] = syntax
    total = sum(counts.values())
    files = result.files_checked()
    partly = sum(1 for note in result.notes if note.path is not None and "time box" in note.message)
    if total:
        detail = ", ".join(f"{n} {s}{'s' if n != 1 and s != 'information' else ''}" for s, n in sorted(counts.items()))
        out.write(
            f"\nFound {total} problem{'s' if total != 1 else ''} ({detail})"
            f" in {files} file{'s' if files != 1 else ''}.\n"
        )
    else:
        out.write(f"All checks passed ({files} file{'s' if files != 1 else ''}).\n")
    if partly:
        out.write(f"{partly} file{'s were' if partly != 1 else ' was'} analyzed only in part (the time box); "
                  "see the notes above.\n")
