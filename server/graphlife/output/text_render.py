"""The text formats' writing of one file's findings and of the summary, importing nothing the
interpreter has not loaded already.

Why apart from :mod:`graphlife.output.text`: a ``graphlife check`` answered from the cache
of results (:mod:`graphlife.fast_check`) prints what the full command line prints, with
the same code, and must not load the findings' and reports' classes (``dataclasses``,
``enum`` and ``typing``, which cost that start more than the rest of its work). So the
functions here read a report and a result by their attributes only (a
:class:`~graphlife.output.report.FileReport` or anything with the same ones), and the words
of the text formats are plain pairs of English and Chinese; :mod:`graphlife.output.text`
makes its :class:`~graphlife.findings.MessageTemplate` of each pair, which the tests of
the message catalog check like every other template.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol, TextIO

    class ReportLike(Protocol):
        """What :func:`write_report` reads of a :class:`~graphlife.output.report.FileReport`."""

        path: str
        findings: list[dict]
        syntax_errors: list[tuple[int, int, str]]
        syntax_error_cells: list[tuple[int, int]]
        lines: list[str]

#: How loud each severity is, loudest first (the exit status and merging compare them).
SEVERITY_RANK = {"error": 0, "warning": 1, "information": 2, "hint": 3}

SEVERITY_COLOURS = {"error": "1;31", "warning": "1;33", "information": "1;34", "hint": "2"}

#: The words of the text formats: id -> (English, Simplified Chinese). The findings bring their own.
WORDS: dict[str, tuple[str, str]] = {
    "text.line": ("line {n}", "第 {n} 行"),
    "text.note": ("        = note: {where}: {message}\n", "        = 说明：{where}：{message}\n"),
    "text.found": ("\nFound {problems} ({detail}) in {files}.\n", "\n发现 {problems}（{detail}），共检查 {files}。\n"),
    "text.all-passed": ("All checks passed ({files}).\n", "全部检查通过（{files}）。\n"),
    "text.problem": ("{n} problem", "{n} 个问题"),
    "text.problems": ("{n} problems", "{n} 个问题"),
    "text.file": ("{n} file", "{n} 个文件"),
    "text.files": ("{n} files", "{n} 个文件"),
    "text.partly-one": ("{n} file was analyzed only in part (the time box); see the notes above.\n",
                        "有 {n} 个文件只分析了一部分（超出了时间限制）；见上面的说明。\n"),
    "text.partly": ("{n} files were analyzed only in part (the time box); see the notes above.\n",
                    "有 {n} 个文件只分析了一部分（超出了时间限制）；见上面的说明。\n"),
    "text.errors": ("{n} errors", "{n} 个错误"),
    "text.error": ("{n} error", "{n} 个错误"),
    "text.warnings": ("{n} warnings", "{n} 个警告"),
    "text.warning": ("{n} warning", "{n} 个警告"),
    "text.information": ("{n} information", "{n} 条信息"),
    "text.information-one": ("{n} information", "{n} 条信息"),
    "text.hints": ("{n} hints", "{n} 个提示"),
    "text.hint": ("{n} hint", "{n} 个提示"),
    "text.syntax-errors": ("{n} syntax errors", "{n} 个语法错误"),
    "text.syntax-error": ("{n} syntax error", "{n} 个语法错误"),
}

#: Each kind of problem counted in the summary: (the word for more than one, for exactly one).
COUNTED = {
    "error": ("text.errors", "text.error"),
    "warning": ("text.warnings", "text.warning"),
    "information": ("text.information", "text.information-one"),
    "hint": ("text.hints", "text.hint"),
    "syntax error": ("text.syntax-errors", "text.syntax-error"),
}


def say(word: str, language: str, **args: str | int) -> str:
    """The word ``word`` of :data:`WORDS` in ``language``, filled with ``args``, as its
    :class:`~graphlife.findings.MessageTemplate` renders plain arguments."""
    english, chinese = WORDS[word]
    return (chinese if language == "zh-CN" and chinese else english).format_map(args)


class Painter:
    """ANSI colours when the run writes to a terminal (and NO_COLOR is unset), else plain."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text


def shown_message(entry: dict[str, Any]) -> str:
    """The message a person reads: in the chosen language when the finding (or related place)
    has it (``localized_message``), else the English ``message``."""
    return str(entry.get("localized_message", entry["message"]))


def write_report(report: ReportLike, out: TextIO, paint: Painter, excerpts: bool, language: str) -> None:
    """One file's syntax errors and findings (with their source lines when ``excerpts``)."""
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
        out.write(f"{head}{code} {paint(severity, SEVERITY_COLOURS.get(severity, '0'))}: {shown_message(finding)}\n")
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
            here = say("text.line", language, n=related["line"])
            where = f"{related['path']}:{related['line']}" if elsewhere else here
            out.write(say("text.note", language, where=where, message=shown_message(related)))


def write_summary(out: TextIO, severities: list[str], syntax_errors: int, files: int, partly: int,
                  language: str) -> None:
    """The last line: how many problems of each kind (the ``severities`` of the findings and
    the number of syntax errors) in how many ``files`` checked, or that all passed; and how
    many files were analyzed only in ``partly`` (the time box)."""
    counts: dict[str, int] = {}
    for severity in severities:
        counts[severity] = counts.get(severity, 0) + 1
    if syntax_errors:
        counts["syntax error"] = syntax_errors
    total = sum(counts.values())
    files_text = say("text.file" if files == 1 else "text.files", language, n=files)
    if total:
        separator = "、" if language == "zh-CN" else ", "
        detail = separator.join(say(COUNTED[kind][n == 1], language, n=n) for kind, n in sorted(counts.items()))
        problems = say("text.problem" if total == 1 else "text.problems", language, n=total)
        out.write(say("text.found", language, problems=problems, detail=detail, files=files_text))
    else:
        out.write(say("text.all-passed", language, files=files_text))
    if partly:
        out.write(say("text.partly-one" if partly == 1 else "text.partly", language, n=partly))


def quiet_broken_pipe() -> None:
    """Point stdout at /dev/null so that the interpreter's own flush at exit raises nothing
    (Python's documented way to end quietly when the reader of a pipe went away)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)
