"""`check(source, path, config)`: the one call the CLI and the language server share.

It parses once with the stdlib ``ast`` (libcst is for fixes only), survives
syntax errors by blanking the top-level block that holds the error and parsing
again (so the other blocks still get their findings), runs the engine under a
time box, then applies ``# graphlife: ignore[...]`` comments, ``select`` /
``ignore`` and severity overrides.
"""

from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass, field, replace

from graphlife.config import Config
from graphlife.findings import Finding

#: Files larger than this are not analyzed (a clear message instead).
MAX_SOURCE_BYTES = 5_000_000
#: The engine's time box per file, in seconds; what is not reached is skipped.
DEFAULT_TIME_BUDGET = 10.0
#: How many syntax errors we blank out before giving up on a file.
MAX_SYNTAX_REPAIRS = 20

_IGNORE_COMMENT = re.compile(r"#\s*graphlife\s*:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)


@dataclass(frozen=True)
class SyntaxProblem:
    """A syntax error: where, and what the parser said."""

    line: int
    column: int
    message: str


@dataclass
class CheckResult:
    """Findings plus what stopped parts of the file from being analyzed."""

    findings: list[Finding] = field(default_factory=list)
    syntax_errors: list[SyntaxProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # time box hit, file too big, ...


def check(source: str, path: str | None = None, config: Config | None = None) -> list[Finding]:
    """The findings for one file, sorted by position."""
    return check_source(source, path, config).findings


def check_source(
    source: str,
    path: str | None = None,
    config: Config | None = None,
    *,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> CheckResult:
    """Like :func:`check`, also telling about syntax errors and skipped work."""
    from graphlife.analysis.interpreter import analyze_module  # noqa: PLC0415 (keeps import light)
    from graphlife.rules import all_rules  # noqa: PLC0415

    config = config or Config()
    result = CheckResult()
    if not config.enable:
        return result
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        result.notes.append(f"file is larger than {MAX_SOURCE_BYTES // 1_000_000} MB; not analyzed")
        return result
    if "\x00" in source:
        result.notes.append("file contains NUL bytes (binary?); not analyzed")
        return result

    tree, result.syntax_errors = parse_tolerant(source)
    if tree is None:
        return result

    rules = [rule for rule in all_rules() if config.is_enabled(rule.code)]
    deadline = time.monotonic() + time_budget
    findings, engine_notes = analyze_module(tree, source, rules, deadline=deadline)
    result.notes.extend(engine_notes)

    lines = source.splitlines()
    kept: list[Finding] = []
    for finding in findings:
        if _ignored_by_comment(finding, lines):
            continue
        severity = config.severity_for(finding.code, finding.severity)
        if severity is None:
            continue
        kept.append(replace(finding, severity=severity) if severity != finding.severity else finding)
    kept.sort(key=lambda f: (f.span.line, f.span.column, f.code))
    result.findings = kept
    return result


def parse_tolerant(source: str) -> tuple[ast.Module | None, list[SyntaxProblem]]:
    """Parse, blanking top-level blocks with syntax errors so the rest still parses."""
    errors: list[SyntaxProblem] = []
    lines = source.splitlines(keepends=True)
    for _ in range(MAX_SYNTAX_REPAIRS + 1):
        try:
            return ast.parse("".join(lines)), errors
        except SyntaxError as exc:
            line = exc.lineno or 1
            errors.append(SyntaxProblem(line, exc.offset or 1, exc.msg or "invalid syntax"))
            start, end = _top_level_block(lines, line)
            if start >= end:
                return None, errors
            for index in range(start, end):
                lines[index] = "\n" if lines[index].endswith("\n") else ""
        except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
            errors.append(SyntaxProblem(1, 1, f"cannot parse: {exc}"))
            return None, errors
    return None, errors


def _top_level_block(lines: list[str], error_line: int) -> tuple[int, int]:
    """0-based [start, end) of the top-level block that holds ``error_line``.

    A block starts at a line that begins in column 0 with code (not a comment,
    not a closing bracket) and runs to the next such line.
    """

    def starts_block(text: str) -> bool:
        return bool(text) and not text[0].isspace() and text[0] not in "#)]}" and text.strip() != ""

    index = min(max(error_line - 1, 0), len(lines) - 1) if lines else 0
    if not lines:
        return 0, 0
    start = index
    while start > 0 and not starts_block(lines[start]):
        start -= 1
    end = index + 1
    while end < len(lines) and not starts_block(lines[end]):
        end += 1
    return start, end


def _ignored_by_comment(finding: Finding, lines: list[str]) -> bool:
    """``# graphlife: ignore`` or ``# graphlife: ignore[GL101, GL2]`` on the finding's first line."""
    if finding.span.line - 1 >= len(lines):
        return False
    match = _IGNORE_COMMENT.search(lines[finding.span.line - 1])
    if not match:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    wanted = [c.strip().upper() for c in codes.split(",") if c.strip()]
    return any(finding.code.startswith(code) for code in wanted)

