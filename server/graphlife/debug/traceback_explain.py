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


def _rule_text(code: str, item: dict) -> str:
    """The rule's own documentation when the rule module exists, else the table's short form."""
    try:
        from graphlife.rules import rule_by_code  # noqa: PLC0415

        rule = rule_by_code(code)
    except Exception:  # noqa: BLE001
        rule = None
    if rule is not None:
        return rule.markdown()
    return f"**{code} {item['name']}**\n\nWhy: {item['why']}\n\nFix: {item['fix']}"


def explain_text(text: str) -> tuple[int, str]:
    """The report for a traceback text, and the exit status."""
    tb = parse_traceback(text)
    if tb.message is None:
        return 2, "graphlife explain: no Python traceback found in the input."
    out = [f"{tb.exc_type}: {tb.message}", ""]
    item = classify(tb.message)
    if item is None:
        out.append("This is not one of the autograd errors graphlife explains.")
    else:
        out += [_rule_text(item["code"], item), ""]
    user_frames = [f for f in tb.frames if f.is_user]
    if not user_frames:
        out.append("No frame of the traceback is in a file found here (all are library frames).")
    cache: dict[str, tuple] = {}
    for index, frame in enumerate(reversed(user_frames)):
        where = "faulting line" if index == 0 else "called from"
        if frame.path not in cache:
            cache[frame.path] = static_findings(frame.path)
        findings, note, lines = cache[frame.path]
        text_line = lines[frame.line - 1].strip() if 0 < frame.line <= len(lines) else ""
        out.append(f"{frame.path}:{frame.line} in {frame.func} ({where})")
        if text_line:
            out.append(f"    {text_line}")
        if note:
            out.append(f"    ({note})")
        here = findings_on_line(findings, frame.line)
        for finding in here:
            agrees = " (the same rule)" if item and finding.code == item["code"] else ""
            elsewhere = f" in {finding.span.path}:{finding.span.line}" if finding.span.path is not None else ""
            out.append(f"    static finding {finding.code} {finding.name}{agrees}{elsewhere}: {finding.message}")
        if not here and not note:
            out.append("    no static finding on this line")
            others = [f for f in findings if item and f.code == item["code"]]
            for finding in others[:3]:
                place = f"in {finding.span.path}, line" if finding.span.path is not None else "in this file, line"
                out.append(f"    {finding.code} elsewhere {place} {finding.span.line}: {finding.message}")
    return (0 if item else 1), "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """``graphlife explain [FILE]``: read the traceback from FILE (or stdin, or ``-``)."""
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
    status, report = explain_text(text)
    print(report)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
