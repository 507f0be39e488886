"""GitHub Actions workflow commands: each finding becomes an annotation on the line of the
pull request (``::error file=...,line=...::message``), each note a warning. Severities map
to GitHub's three levels: error, warning, and notice for information and hints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from graphlife.output.paths import display_path
from graphlife.output.report import shown_message

if TYPE_CHECKING:
    from graphlife.output.report import RunResult

LEVELS = {"error": "error", "warning": "warning", "information": "notice", "hint": "notice"}


def escape_data(text: str) -> str:
    """A command's message: ``%``, CR and LF escaped as the Actions runner reads them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value: also ``:`` and ``,``, which separate properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: Any) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items() if value is not None)
    return f"::{level} {props}::{escape_data(message)}\n" if props else f"::{level}::{escape_data(message)}\n"


def write_github(result: RunResult, out: TextIO) -> None:
    for report in result.reports:
        path = display_path(report.path)
        for error in report.syntax_error_dicts():
            where = f"cell {error['cell']}, line {error['cell_line']}: " if "cell" in error else ""
            out.write(command("error", f"{where}{error['message']} (this part was not analyzed)",
                              title="graphlife: syntax error", file=path, line=error["line"], col=error["column"]))
        for finding in report.findings:
            where = f"cell {finding['cell']}, line {finding['cell_line']}: " if "cell" in finding else ""
            out.write(command(
                LEVELS[finding["severity"]], f"{where}{shown_message(finding)}",
                title=f"graphlife {finding['code']} ({finding['name']})", file=path, line=finding["line"],
                col=finding["column"], endLine=finding["end_line"],
                endColumn=finding["end_column"] if finding["end_line"] == finding["line"] else None,
            ))
    for note in result.notes:
        file = display_path(note.path) if note.path is not None else None
        out.write(command("error" if note.level == "error" else "warning", note.message, title="graphlife", file=file))
