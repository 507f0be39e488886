"""The text formats: ``text`` (full: each finding with its source line marked and its
related places) and ``concise`` (``path:line:col: CODE severity: message``, one a line).
Both end with a summary unless ``--quiet``; ``--statistics`` prints the counts instead."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from graphlife.findings import MessageTemplate
from graphlife.output.report import shown_message

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
        _write_report(report, out, paint, excerpts, result.language)
    if not result.quiet:
        _write_summary(result, out)


def _write_report(report: FileReport, out: TextIO, paint: Painter, excerpts: bool, language: str) -> None:
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
            here = LINE(n=related["line"]).in_language(language)
            where = f"{related['path']}:{related['line']}" if elsewhere else here
            out.write(NOTE(where=where, message=shown_message(related)).in_language(language))


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
    language = result.language
    files_text = (FILE if files == 1 else FILES)(n=files)
    if total:
        separator = "、" if language == "zh-CN" else ", "
        detail = separator.join(_COUNTED[kind][n == 1](n=n).in_language(language) for kind, n in sorted(counts.items()))
        problems = (PROBLEM if total == 1 else PROBLEMS)(n=total)
        out.write(FOUND(problems=problems, detail=detail, files=files_text).in_language(language))
    else:
        out.write(ALL_PASSED(files=files_text).in_language(language))
    if partly:
        out.write((PARTLY_ONE if partly == 1 else PARTLY)(n=partly).in_language(language))


# The words of the text formats, in English and Chinese (the findings bring their own).
LINE = MessageTemplate("text.line", "line {n}", zh_cn="第 {n} 行")
NOTE = MessageTemplate(
    "text.note", "        = note: {where}: {message}\n",
    zh_cn="        = 说明：{where}：{message}\n")
FOUND = MessageTemplate("text.found", "\nFound {problems} ({detail}) in {files}.\n",
                        zh_cn="\n发现 {problems}（{detail}），共检查 {files}。\n")
ALL_PASSED = MessageTemplate("text.all-passed", "All checks passed ({files}).\n", zh_cn="全部检查通过（{files}）。\n")
PROBLEM = MessageTemplate("text.problem", "{n} problem", zh_cn="{n} 个问题")
PROBLEMS = MessageTemplate("text.problems", "{n} problems", zh_cn="{n} 个问题")
FILE = MessageTemplate("text.file", "{n} file", zh_cn="{n} 个文件")
FILES = MessageTemplate("text.files", "{n} files", zh_cn="{n} 个文件")
PARTLY_ONE = MessageTemplate(
    "text.partly-one", "{n} file was analyzed only in part (the time box); see the notes above.\n",
                             zh_cn="有 {n} 个文件只分析了一部分（超出了时间限制）；见上面的说明。\n")
PARTLY = MessageTemplate("text.partly", "{n} files were analyzed only in part (the time box); see the notes above.\n",
                         zh_cn="有 {n} 个文件只分析了一部分（超出了时间限制）；见上面的说明。\n")
#: Each kind of problem counted in the summary: (more than one, exactly one).
_COUNTED = {
    "error": (MessageTemplate("text.errors", "{n} errors", zh_cn="{n} 个错误"),
              MessageTemplate("text.error", "{n} error", zh_cn="{n} 个错误")),
    "warning": (MessageTemplate("text.warnings", "{n} warnings", zh_cn="{n} 个警告"),
                MessageTemplate("text.warning", "{n} warning", zh_cn="{n} 个警告")),
    "information": (MessageTemplate("text.information", "{n} information", zh_cn="{n} 条信息"),
                    MessageTemplate("text.information-one", "{n} information", zh_cn="{n} 条信息")),
    "hint": (MessageTemplate("text.hints", "{n} hints", zh_cn="{n} 个提示"),
             MessageTemplate("text.hint", "{n} hint", zh_cn="{n} 个提示")),
    "syntax error": (MessageTemplate("text.syntax-errors", "{n} syntax errors", zh_cn="{n} 个语法错误"),
                     MessageTemplate("text.syntax-error", "{n} syntax error", zh_cn="{n} 个语法错误")),
}
