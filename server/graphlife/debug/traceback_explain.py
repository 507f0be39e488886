"""`graphlife explain`: an autograd error after the fact, from its traceback.

A traceback of ``loss.backward()`` ends inside torch; the line to fix is in the
user's own files. This finds those frames, names the rule that explains torch's
message (the table in :mod:`graphlife.debug.messages`), and runs the static
checker on each user file, printing the rule's explanation next to whatever
static finding sits on the faulting line. It never imports torch.

Exit status: 0 when the error is an autograd error graphlife explains, 1 when
the traceback holds some other error, 2 when no traceback could be read.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphlife.debug.messages import classify
from graphlife.findings import MessageTemplate, localized
from graphlife.text_lines import source_lines

if TYPE_CHECKING:
    from graphlife.findings import Finding

_FRAME_RE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_EXC_RE = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)|[A-Za-z_][\w.]*\.[A-Za-z_]\w*): ?(?P<msg>.*)$"
)
_LIBRARY_PARTS = ("site-packages", "dist-packages", f"{os.sep}lib{os.sep}python", "<frozen", "<string>")


@dataclass
class Frame:
    """One ``File "...", line N, in f`` entry of a traceback."""

    path: str
    line: int
    func: str

    @property
    def is_user(self) -> bool:
        """The user's own code: a file that exists and is not a library or the interpreter's."""
        if any(part in self.path for part in _LIBRARY_PARTS):
            return False
        return os.path.isfile(self.path)


@dataclass
class ParsedTraceback:
    """The last traceback in a text: its frames and the exception it ended with."""

    frames: list[Frame] = field(default_factory=list)
    exc_type: str | None = None
    message: str | None = None


def parse_traceback(text: str) -> ParsedTraceback:
    """Frames and exception of the *last* traceback in ``text`` (chained ones come earlier)."""
    result = ParsedTraceback()
    frames: list[Frame] = []
    for raw in text.splitlines():
        line = raw.rstrip("\n")
        if line.startswith("Traceback (most recent call last)"):
            frames = []
            continue
        m = _FRAME_RE.match(line)
        if m:
            frames.append(Frame(m.group("path"), int(m.group("line")), (m.group("func") or "").strip()))
            continue
        if not line.startswith((" ", "\t")):
            e = _EXC_RE.match(line)
            if e and frames:
                result.frames = frames
                result.exc_type = e.group("type")
                result.message = e.group("msg")
    return result


def static_findings(path: str) -> tuple[list[Finding], str | None, list[str]]:
    """The checker's findings for one file; an engine failure reads as "none" plus a note."""
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except OSError as exc:
        return [], f"cannot read: {exc}", []
    try:
        from graphlife.checker import check_source, project_modules  # noqa: PLC0415
        from graphlife.config import Config  # noqa: PLC0415

        # Its imports of the user's other modules are followed: the in-place op that makes
        # this backward raise may be in the model's file.
        findings = check_source(source, path, modules=project_modules(path, Config())).findings
        return findings, None, source_lines(source)
    except Exception as exc:  # noqa: BLE001 - a checker bug must not hide the explanation
        return [], f"the checker failed: {type(exc).__name__}: {exc}", source_lines(source)


def findings_on_line(findings: list[Finding], line: int) -> list[Finding]:
    """The findings of a file that sit on ``line``, and those in other files whose story
    passes through it (the backward that the bug elsewhere makes raise)."""
    here = [f for f in findings if f.span.path is None and f.span.line <= line <= f.span.end_line]
    here += [f for f in findings if f.span.path is not None
             and any(r.span.path is None and r.span.line == line for r in f.related)]
    return here


NO_TRACEBACK = MessageTemplate("explain.no-traceback", "graphlife explain: no Python traceback found in the input.",
                               zh_cn="graphlife explain：输入中没有找到 Python 的 traceback。")
NOT_EXPLAINED = MessageTemplate("explain.not-explained", "This is not one of the autograd errors graphlife explains.",
                                zh_cn="这不是 graphlife 能解释的自动求导错误。")
NO_USER_FRAME = MessageTemplate(
    "explain.no-user-frame", "No frame of the traceback is in a file found here (all are library frames).",
    zh_cn="traceback 中没有一帧位于这里能找到的文件中（全部是库的帧）。")
FAULTING = MessageTemplate("explain.faulting", "{where} in {function} (faulting line)",
                           zh_cn="{where}，{function} 中（出错的行）")
CALLED_FROM = MessageTemplate("explain.called-from", "{where} in {function} (called from)",
                              zh_cn="{where}，{function} 中（调用处）")
STATIC_FINDING = MessageTemplate("explain.static-finding",
                                 "    static finding {code} {name}{agrees}{elsewhere}: {message}",
                                 zh_cn="    静态检查结果 {code} {name}{agrees}{elsewhere}：{message}")
SAME_RULE = MessageTemplate("explain.same-rule", " (the same rule)", zh_cn="（同一条规则）")
ELSEWHERE = MessageTemplate("explain.elsewhere", " in {path}:{line}", zh_cn="，位于 {path}:{line}")
NONE_ON_LINE = MessageTemplate("explain.none-on-line", "    no static finding on this line",
                               zh_cn="    这一行没有静态检查结果")
IN_FILE = MessageTemplate("explain.in-file", "    {code} elsewhere in {path}, line {line}: {message}",
                          zh_cn="    {code} 在别处：{path} 第 {line} 行：{message}")
IN_THIS_FILE = MessageTemplate("explain.in-this-file", "    {code} elsewhere in this file, line {line}: {message}",
                               zh_cn="    {code} 在别处：本文件第 {line} 行：{message}")
WHY_FIX = MessageTemplate("explain.why-fix", "**{code} {name}**\n\nWhy: {why}\n\nFix: {fix}",
                          zh_cn="**{code} {name}**\n\n原因：{why}\n\n修复：{fix}")


def _rule_text(code: str, item: dict, language: str = "en") -> str:
    """The rule's own documentation when the rule module exists, else the table's short form."""
    try:
        from graphlife.rules import rule_by_code  # noqa: PLC0415

        rule = rule_by_code(code)
    except Exception:  # noqa: BLE001
        rule = None
    if rule is not None:
        return rule.markdown(language)
    texts = item.get(language, item) if language != "en" else item  # the table's own translation, if any
    return WHY_FIX(code=code, name=item["name"], why=texts.get("why", item["why"]),
                   fix=texts.get("fix", item["fix"])).in_language(language)


def explain_text(text: str, language: str = "en") -> tuple[int, str]:
    """The report for a traceback text in ``language`` (torch's message as torch wrote it), and
    the exit status."""
    def say(message: str) -> str:
        return localized(message, language)

    tb = parse_traceback(text)
    if tb.message is None:
        return 2, say(NO_TRACEBACK())
    out = [f"{tb.exc_type}: {tb.message}", ""]
    item = classify(tb.message)
    if item is None:
        out.append(say(NOT_EXPLAINED()))
    else:
        out += [_rule_text(item["code"], item, language), ""]
    user_frames = [f for f in tb.frames if f.is_user]
    if not user_frames:
        out.append(say(NO_USER_FRAME()))
    cache: dict[str, tuple] = {}
    for index, frame in enumerate(reversed(user_frames)):
        heading = FAULTING if index == 0 else CALLED_FROM
        if frame.path not in cache:
            cache[frame.path] = static_findings(frame.path)
        findings, note, lines = cache[frame.path]
        text_line = lines[frame.line - 1].strip() if 0 < frame.line <= len(lines) else ""
        out.append(say(heading(where=f"{frame.path}:{frame.line}", function=frame.func)))
        if text_line:
            out.append(f"    {text_line}")
        if note:
            out.append(f"    ({note})")
        here = findings_on_line(findings, frame.line)
        for finding in here:
            agrees = SAME_RULE() if item and finding.code == item["code"] else ""
            elsewhere = ELSEWHERE(path=finding.span.path, line=finding.span.line) if finding.span.path is not None \
                else ""
            out.append(say(STATIC_FINDING(code=finding.code, name=finding.name, agrees=agrees, elsewhere=elsewhere,
                                          message=finding.message)))
        if not here and not note:
            out.append(say(NONE_ON_LINE()))
            others = [f for f in findings if item and f.code == item["code"]]
            for finding in others[:3]:
                if finding.span.path is not None:
                    told = IN_FILE(code=finding.code, path=finding.span.path, line=finding.span.line,
                                   message=finding.message)
                else:
                    told = IN_THIS_FILE(code=finding.code, line=finding.span.line, message=finding.message)
                out.append(say(told))
    return (0 if item else 1), "\n".join(out)


def main(argv: list[str] | None = None, language: str = "en") -> int:
    """``graphlife explain [FILE]``: read the traceback from FILE (or stdin, or ``-``), explained
    in ``language``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) > 1:
        print("usage: graphlife explain [TRACEBACK_FILE]", file=sys.stderr)
        return 2
    try:
        if argv and argv[0] != "-":
            with open(argv[0], encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        else:
            text = sys.stdin.read()
    except OSError as exc:
        print(f"graphlife explain: {exc}", file=sys.stderr)
        return 2
    status, report = explain_text(text, language)
    print(report)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
