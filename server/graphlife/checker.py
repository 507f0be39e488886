"""`check(source, path, config)`: the one call the CLI and the language server share.

It parses once with the stdlib ``ast`` (libcst is for fixes only), survives
syntax errors by leaving out the top-level blocks that do not parse (so the
other blocks still get their findings), runs the engine under a
time box, then applies the comments that silence findings (``# graphlife: ignore[...]``,
``# noqa: GL101``, a file-level ``# graphlife: noqa``: :mod:`graphlife.suppression`),
``select`` / ``ignore`` and severity overrides.
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from graphlife.analysis import skipped_notes as skipped
from graphlife.config import Config
from graphlife.findings import Finding
from graphlife.project.limits import MAX_SOURCE_BYTES
from graphlife.suppression import FileSuppression, file_suppression, is_suppressed
from graphlife.text_lines import source_lines

if TYPE_CHECKING:
    from collections.abc import Callable

    from graphlife.analysis.modules import ModuleProvider
    from graphlife.analysis.tree_index import TreeIndex
    from graphlife.analysis.unit_cache import UnitCache
    from graphlife.project.provider import ProjectModules
    from graphlife.project.sources import SourceCache

#: The engine's time box per file, in seconds; what is not reached is skipped.
DEFAULT_TIME_BUDGET = 10.0


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
    modules: ModuleProvider | None = None,
) -> CheckResult:
    """Like :func:`check`, also telling about syntax errors and skipped work. With ``modules``
    (:func:`project_modules`), the file's imports of the user's other modules are followed,
    and findings in those files come back too, naming their file (``Span.path``)."""
    return run_checks(source, config, time_budget, parse_tolerant, modules=modules, path=path)


def project_modules(path: str | None, config: Config, sources: SourceCache | None = None) -> ProjectModules:
    """The modules of the user's project as seen from ``path`` (its folder first, then the
    project root, a ``src`` folder and the configured ``src`` roots), read through ``sources``
    (shared between checks of one run, so that each file is parsed once)."""
    from graphlife.project.provider import ProjectModules  # noqa: PLC0415 (keeps import light)

    return ProjectModules(path, config.src, sources=sources)


if TYPE_CHECKING:
    #: How the pipeline parses: the tree (``None`` when nothing parses), the syntax problems, and
    #: optionally the tree's index when the parser built one.
    Parse = Callable[
        [str],
        tuple[ast.Module | None, list[SyntaxProblem]]
        | tuple[ast.Module | None, list[SyntaxProblem], TreeIndex],
    ]


def run_checks(
    source: str, config: Config | None, time_budget: float, parse: Parse, unit_cache: UnitCache | None = None,
    *, modules: ModuleProvider | None = None, path: str | None = None,
) -> CheckResult:
    """The one pipeline behind :func:`check_source` and the language server's incremental
    checker (:mod:`graphlife.incremental`): they differ only in how they parse (``parse``
    returns the tree, the syntax problems and optionally the tree's index) and in the
    engine's unit cache.

    A finding in another file of the project honours that file's ``# graphlife: ignore``
    comments, and carries no fix: a fix edits the file checked (the other file's own check
    offers it when it finds the bug itself)."""
    from graphlife.analysis.interpreter import analyze_module  # noqa: PLC0415 (keeps import light)
    from graphlife.rules import all_rules  # noqa: PLC0415

    config = config or Config()
    result = CheckResult()
    if not config.enable:
        return result
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        result.notes.append(skipped.TOO_LARGE(megabytes=MAX_SOURCE_BYTES // 1_000_000))
        return result
    if "\x00" in source:
        result.notes.append(skipped.NUL_BYTES())
        return result

    parsed = parse(source)
    tree, result.syntax_errors = parsed[0], parsed[1]
    index = parsed[2] if len(parsed) > 2 else None
    if tree is None:
        return result

    rules = [rule for rule in all_rules() if config.is_enabled(rule.code)]
    if unit_cache is not None:
        unit_cache.begin_rules(tuple(rule.code for rule in rules))
    deadline = time.monotonic() + time_budget
    lines = source_lines(source)
    findings, engine_notes = analyze_module(tree, source, rules, deadline=deadline, index=index, unit_cache=unit_cache,
                                            lines=lines, modules=modules, path=path)
    result.notes.extend(engine_notes)

    kept: list[Finding] = []
    whole_files: dict[str | None, FileSuppression] = {
        None: file_suppression(lines) if "graphlife" in source else file_suppression([])
    }
    for finding in findings:
        where = finding.span.path
        if where is not None:
            other_lines = modules.lines_of(where) if modules is not None else None
            if other_lines is None:
                continue
            if where not in whole_files:
                whole_files[where] = file_suppression(other_lines)
            if is_suppressed(finding.code, finding.span.line, other_lines, whole_files[where]):
                continue
            finding = replace(finding, fixes=())
        elif is_suppressed(finding.code, finding.span.line, lines, whole_files[None]):
            continue
        severity = config.severity_for(finding.code, finding.severity)
        if severity is None:
            continue
        kept.append(replace(finding, severity=severity) if severity != finding.severity else finding)
    kept.sort(key=lambda f: (f.span.path is not None, f.span.path or "", f.span.line, f.span.column, f.code))
    result.findings = kept
    return result


def parse_tolerant(source: str) -> tuple[ast.Module | None, list[SyntaxProblem]]:
    """Parse; on a syntax error, parse top-level block by block and leave out the blocks that
    do not parse (each reported with its own error), so the rest of the file still gets its
    findings. The language server cuts blocks the same way (:mod:`graphlife.analysis.blocks`)."""
    from graphlife.analysis.blocks import parse_tolerant as parse_blocks  # noqa: PLC0415

    tree, errors = parse_blocks(source)
    return tree, [SyntaxProblem(line, column, message) for line, column, message in errors]
