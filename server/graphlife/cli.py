"""`graphlife check|fix|lsp|explain|rules`: thin shells over the shared engine.

Exit status of ``check``: 0 with no findings, 1 with findings (or syntax
errors), 2 on a usage error or a file that cannot be read (the other files are
still checked).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from graphlife import __version__
from graphlife.config import Config, config_for_path
from graphlife.project.walk import walk_files
from graphlife.text_lines import source_lines, source_lines_keepends

if TYPE_CHECKING:
    from graphlife.lsp.notebooks import JoinedCell
    from graphlife.project.provider import ProjectModules
    from graphlife.project.result_cache import ResultCache
    from graphlife.project.sources import SourceCache



@dataclass
class FileReport:
    """What checking one file produced, in a picklable form for worker processes."""

    path: str
    findings: list[dict] = field(default_factory=list)
    syntax_errors: list[tuple[int, int, str]] = field(default_factory=list)
    #: For a notebook: the (cell, line in the cell) of each syntax error, in the same order.
    syntax_error_cells: list[tuple[int, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
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


def iter_python_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """The ``.py`` files under ``paths`` (sorted) and the paths that do not exist."""
    files: list[str] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file() or (path.exists() and not path.is_dir()):  # a pipe or device: its read says why not
            files.append(str(path))
        elif path.is_dir():
            files.extend(walk_files(str(path), (".py", ".ipynb")))
        else:
            missing.append(raw)
    return files, missing


def read_source(path: str) -> str:
    """Decode a regular file as Python does (PEP 263 cookie, else UTF-8); raise ValueError with a
    reason (:func:`graphlife.source_files.read_source_file`)."""
    from graphlife.source_files import read_source_file  # noqa: PLC0415

    return read_source_file(path).text


def _check_one(args: tuple[str, Config, str] | tuple[str, Config, str, bool]) -> FileReport:
    path, base_config, mode = args[:3]
    use_cache = len(args) > 3 and bool(args[3])
    from graphlife.checker import check_source, project_modules  # noqa: PLC0415

    report = FileReport(path=path)
    if path.endswith(".ipynb"):
        return _check_notebook(path, base_config, report)
    from graphlife.source_files import read_source_file  # noqa: PLC0415

    try:
        read = read_source_file(path)
    except (OSError, ValueError) as exc:
        report.read_error = str(exc)
        return report
    source, report.encoding = read.text, read.encoding
    config = config_for_path(base_config, path)
    cached = _cached_report(path, source, config) if use_cache and mode == "check" else None
    if cached is not None:
        return cached
    report.notes.extend(config.problems)
    modules = project_modules(path, config, _shared_sources())
    result = check_source(source, path, config, modules=modules)
    report.lines = source_lines(source)
    report.findings = [f.to_json(path) for f in result.findings]
    for other in {f.span.path for f in result.findings} - {None}:
        report.other_lines[str(other)] = modules.lines_of(str(other)) or []
    report.notes.extend(f"cannot analyze {where} (imported): {reason}" for where, reason in modules.unreadable.items())
    report.syntax_errors = [(e.line, e.column, e.message) for e in result.syntax_errors]
    report.notes.extend(result.notes)
    if mode in ("fix", "diff") and result.findings and not result.syntax_errors:
        from graphlife.fixes import fix_source  # noqa: PLC0415

        report.original_source = source
        report.fixed_source = fix_source(source, path, config)
    elif mode in ("fix", "diff") and result.syntax_errors:
        report.notes.append("not fixed: the file has a syntax error")
    if use_cache and mode == "check" and not any("time box" in note for note in result.notes):
        _store_report(report, source, config, modules)
    return report


# -- the cache of results on disk (:mod:`graphlife.project.result_cache`) -------------------------

#: What a cached report keeps (the rest is the same on every run, or made again from the source).
_CACHED_FIELDS = ("findings", "syntax_errors", "notes", "other_lines")


@functools.cache
def _result_cache(folder: str) -> ResultCache:
    from graphlife.project.result_cache import ResultCache  # noqa: PLC0415

    return ResultCache(Path(folder))


def _cache_keys(path: str, source: str, config: Config) -> tuple[ResultCache, str, str]:
    """The cache for ``path`` (at its project's root), the hash of its text, and the settings
    key; the current folder and the spelling of ``path`` are part of it, as findings in other
    files spell their paths like it (relative to the current folder, or absolute)."""
    from graphlife.project.result_cache import default_cache_folder, settings_key, text_hash  # noqa: PLC0415

    cache = _result_cache(str(default_cache_folder(path)))
    return cache, text_hash(source), f"{settings_key(config)}:{os.getcwd()}:{path}"


def _from_cache(path: str, base_config: Config) -> FileReport | None:
    """The cached report of a Python file (not a notebook), or ``None`` to check it."""
    if path.endswith(".ipynb"):
        return None
    try:
        source = read_source(path)
    except (OSError, ValueError):
        return None  # the check reports why it cannot be read
    return _cached_report(path, source, config_for_path(base_config, path))


def _cached_report(path: str, source: str, config: Config) -> FileReport | None:
    """The report of an earlier run, when the file, every module it imported and the settings
    are unchanged."""
    cache, text, settings = _cache_keys(path, source, config)
    hit = cache.lookup(path, text, settings)
    if hit is None or not isinstance(hit.payload, dict):
        return None
    try:
        kept = {name: hit.payload[name] for name in _CACHED_FIELDS}
        report = FileReport(path=path, lines=source_lines(source), **kept)
        errors = kept["syntax_errors"]
        report.syntax_errors = [(int(line), int(column), str(message)) for line, column, message in errors]
    except (KeyError, TypeError, ValueError):
        return None
    return report


def _store_report(report: FileReport, source: str, config: Config, modules: ProjectModules) -> None:
    cache, text, settings = _cache_keys(report.path, source, config)
    payload = {name: getattr(report, name) for name in _CACHED_FIELDS}
    cache.store(report.path, text, settings, modules.dependencies(), payload, folders=modules.folders_searched())
    for warning in cache.warnings():
        if warning not in _WARNED:
            _WARNED.add(warning)
            report.notes.append(warning)


_WARNED: set[str] = set()


@functools.cache
def _shared_sources() -> SourceCache:
    """The parsed files of this process, shared by the checks of all its files: a module that
    many files import is read and parsed once."""
    from graphlife.project.sources import SourceCache  # noqa: PLC0415

    return SourceCache()


_SEVERITY_RANK = {"error": 0, "warning": 1, "information": 2, "hint": 3}


def merge_project_findings(reports: list[FileReport]) -> list[FileReport]:
    """Each finding under the file it is in, once. Checking ``train.py`` reports a bug it
    reaches in ``layers.py``; so may checking ``eval.py``: one finding per statement and rule,
    the strongest severity (the strongest evidence) deciding. A file that was not checked
    itself gets a report of its own."""
    by_path = {report.path: report for report in reports}
    merged: dict[str, dict[tuple, dict]] = {}
    order: list[str] = []
    for report in reports:
        for finding in report.findings:
            where = finding.get("path", report.path)
            if where not in by_path:
                by_path[where] = FileReport(path=where, checked=False, lines=report.other_lines.get(where, []))
                order.append(where)
            key = (finding["line"], finding["column"], finding["end_line"], finding["end_column"], finding["code"],
                   finding.get("cell"))
            kept = merged.setdefault(where, {}).get(key)
            if kept is None or _SEVERITY_RANK[finding["severity"]] < _SEVERITY_RANK[kept["severity"]]:
                merged[where][key] = finding
    result = [*reports, *(by_path[path] for path in sorted(order))]
    for report in result:
        found = merged.get(report.path, {})
        report.findings = sorted(found.values(), key=lambda f: (f["line"], f["column"], f["code"]))
    return result


def _check_notebook(path: str, base_config: Config, report: FileReport) -> FileReport:
    """A notebook's code cells, analyzed together in cell order; findings point into their cell."""
    from graphlife.checker import check_source  # noqa: PLC0415
    from graphlife.lsp.notebooks import CellText, cell_relative_lines, join_cells  # noqa: PLC0415
    from graphlife.source_files import check_readable  # noqa: PLC0415

    try:
        check_readable(path)
        with open(path, encoding="utf-8") as handle:
            notebook = json.load(handle)  # a notebook nested too deeply raises RecursionError: caught
        # Cells are numbered by their place in the notebook, markdown cells included, as the
        # editor shows them (and as the language server names them).
        code = [
            (number, c) for number, c in enumerate(notebook.get("cells", []), start=1) if c.get("cell_type") == "code"
        ]
        cells = [
            CellText(uri=str(number), version=None, number=number,
                     text="".join(c["source"]) if isinstance(c.get("source"), list) else str(c.get("source", "")))
            for number, c in code
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        report.read_error = f"not a readable notebook: {exc}"
        return report
    source, placed = join_cells(cells)
    config = config_for_path(base_config, path)
    result = check_source(source, path, config)
    report.notes.extend(config.problems + tuple(result.notes))

    def segment_for_line(line: int) -> JoinedCell | None:
        for cell in reversed(placed):
            if line > cell.line_offset:
                return cell
        return None

    def locate(line: int) -> tuple[int, int]:
        cell = segment_for_line(line)
        return (cell.number, line - cell.line_offset) if cell is not None else (1, line)

    report.lines = source_lines(source)
    for finding in result.findings:
        data = finding.to_json(path)
        data["message"] = cell_relative_lines(data["message"], segment_for_line)  # "line 48" -> "line 3 (cell 6)"
        data["cell"], data["cell_line"] = locate(finding.line)
        for related in data["related"]:
            related["cell"], related["cell_line"] = locate(related["line"])
            if "message" in related:
                related["message"] = cell_relative_lines(related["message"], segment_for_line)
        report.findings.append(data)
    report.syntax_errors = [(e.line, e.column, e.message) for e in result.syntax_errors]
    report.syntax_error_cells = [locate(e.line) for e in result.syntax_errors]
    return report


class Painter:
    """ANSI colours, only when writing to a terminal (and NO_COLOR is unset)."""

    def __init__(self, stream: TextIO) -> None:
        self.enabled = hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("NO_COLOR")

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text


SEVERITY_COLOURS = {"error": "1;31", "warning": "1;33", "information": "1;34", "hint": "2"}


def render_text(reports: list[FileReport], out: TextIO) -> None:
    """`path:line:col: CODE severity: message`, the source line with the span marked, a summary."""
    paint = Painter(out)
    counts: dict[str, int] = {}
    for report in reports:
        for index, (line, column, message) in enumerate(report.syntax_errors):
            if report.syntax_error_cells:
                cell, cell_line = report.syntax_error_cells[index]
                where = f"cell {cell}:{cell_line}"
            else:
                where = str(line)
            out.write(f"{paint(report.path, '1')}:{where}:{column}: {paint('syntax error', '1;31')}: {message}\n")
        for finding in report.findings:
            severity = finding["severity"]
            counts[severity] = counts.get(severity, 0) + 1
            where = f"cell {finding['cell']}:{finding['cell_line']}" if "cell" in finding else str(finding["line"])
            head = f"{paint(report.path, '1')}:{where}:{finding['column']}: "
            code = paint(finding["code"], "1")
            out.write(f"{head}{code} {paint(severity, SEVERITY_COLOURS.get(severity, '0'))}: {finding['message']}\n")
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
    total = sum(counts.values())
    files = sum(1 for report in reports if report.checked)
    syntax = sum(len(report.syntax_errors) for report in reports)
    if syntax:
        counts["syntax error"] = syntax
        total += syntax
    if total:
        detail = ", ".join(f"{n} {s}{'s' if n != 1 and s != 'information' else ''}" for s, n in sorted(counts.items()))
        out.write(
            f"\nFound {total} problem{'s' if total != 1 else ''} ({detail})"
            f" in {files} file{'s' if files != 1 else ''}.\n"
        )
    else:
        out.write(f"All checks passed ({files} file{'s' if files != 1 else ''}).\n")


def _run_check(args: argparse.Namespace, mode: str) -> int:
    files, missing = iter_python_files(args.paths)
    status = 0
    for raw in missing:
        print(f"graphlife: {raw}: no such file or directory", file=sys.stderr)
        status = 2
    base = Config()
    overrides = {}
    if args.select:
        overrides["select"] = args.select.split(",")
    if args.ignore:
        overrides["ignore"] = args.ignore.split(",")
    if overrides:
        base = base.merged(overrides, "command line")
        for problem in base.problems:
            print(f"graphlife: {problem}", file=sys.stderr)
        base = Config(select=base.select, ignore=base.ignore)
    use_cache = mode == "check" and not args.no_cache
    # Files whose results are in the cache are answered here: a project checked again
    # unchanged starts no worker process and analyzes nothing.
    known = {path: report for path in files if (report := _from_cache(path, base)) is not None} if use_cache else {}
    jobs = [(path, base, mode, use_cache) for path in files if path not in known]
    if jobs:
        load_engine()
    if len(jobs) > 3 and (os.cpu_count() or 1) > 1:
        # Imported only here: a process pool costs a check of one file more start-up
        # time than the check itself.
        from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415

        with ProcessPoolExecutor() as pool:
            fresh = list(pool.map(_check_one, jobs, chunksize=4))
    else:
        fresh = [_check_one(job) for job in jobs]
    by_path = {report.path: report for report in fresh} | known
    reports = [by_path[path] for path in files]
    for report in reports:
        if report.read_error:
            print(f"graphlife: {report.path}: cannot read: {report.read_error}", file=sys.stderr)
            status = 2
        for note in report.notes:
            print(f"graphlife: {report.path}: {note}", file=sys.stderr)
    readable = merge_project_findings([r for r in reports if not r.read_error])
    if mode in ("fix", "diff") and not _apply_fixes(readable, mode):
        status = 2
    if args.format == "json":
        payload = {
            "version": __version__,
            "findings": [f for r in readable for f in r.findings],
            # a block with a syntax error is not analyzed: say so (the exit status is 1 for it)
            "syntax_errors": [
                {"path": r.path, "line": line, "column": column, "message": message,
                 **(
                     {"cell": r.syntax_error_cells[index][0], "cell_line": r.syntax_error_cells[index][1]}
                     if r.syntax_error_cells
                     else {}
                 )}
                for r in readable for index, (line, column, message) in enumerate(r.syntax_errors)
            ],
        }
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif mode != "diff":
        render_text(readable, sys.stdout)
    found = any(r.findings or r.syntax_errors for r in readable)
    if status == 0 and found:
        status = 1
    return status


def _apply_fixes(reports: list[FileReport], mode: str) -> bool:
    """Print or write the fixes; ``False`` when a fix could not be written (said on stderr)."""
    import difflib  # noqa: PLC0415

    from graphlife.source_files import write_fixed_source  # noqa: PLC0415

    failed = False
    for report in reports:
        if report.fixed_source is None or report.original_source is None:
            continue  # nothing was fixed (or the file could not be read)
        if report.fixed_source == report.original_source:
            continue
        if mode == "diff":
            sys.stdout.writelines(
                difflib.unified_diff(
                    source_lines_keepends(report.original_source),
                    source_lines_keepends(report.fixed_source),
                    fromfile=report.path,
                    tofile=report.path,
                )
            )
        else:
            try:
                write_fixed_source(report.path, report.fixed_source, report.encoding)
            except (OSError, ValueError) as exc:  # the file is as it was; the others go on
                print(f"graphlife: {report.path}: cannot write the fix: {exc}", file=sys.stderr)
                report.fixed_source = None
                failed = True
                continue
            print(f"graphlife: fixed {report.path}", file=sys.stderr)
    # Re-check after writing so the printed findings are what remains.
    if mode == "fix":
        for index, report in enumerate(reports):
            if report.fixed_source is not None:
                reports[index] = _check_one((report.path, Config(), "check"))
    return not failed


def _run_rules(args: argparse.Namespace) -> int:
    from graphlife.rules import all_rules, rule_by_code  # noqa: PLC0415

    if args.code:
        rule = rule_by_code(args.code.upper())
        if rule is None:
            print(f"graphlife: unknown rule {args.code}", file=sys.stderr)
            return 2
        print(rule.markdown())
        return 0
    for rule in all_rules():
        print(f"{rule.code}  {rule.name:<40} {rule.severity.value:<12} {rule.doc.summary}")
    return 0


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, sized to the terminal as argparse sizes it, without
    ``shutil``: argparse makes a formatter for every argument it is given and imports
    ``shutil`` (with ``zlib``, ``bz2`` and ``lzma`` behind it) for the terminal width, 2 ms of
    the start-up of a command that usually prints no help at all."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            width = terminal_columns() - 2  # what argparse does with shutil's answer
        super().__init__(prog, indent_increment, max_help_position, width)


def terminal_columns(fallback: int = 80) -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS``, else the terminal of stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            stdout = sys.__stdout__
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or fallback


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphlife", description="PyTorch autograd graph-lifetime checker.",
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"graphlife {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser = functools.partial(sub.add_parser, formatter_class=HelpFormatter)

    def add_check_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="+", help="files and folders to check")
        p.add_argument("--format", choices=["text", "json"], default="text")
        p.add_argument("--select", help="comma-separated codes or prefixes to run (e.g. GL1,GL201)")
        p.add_argument("--ignore", help="comma-separated codes or prefixes to skip")
        p.add_argument("--no-cache", action="store_true",
                       help="analyze every file again (results are otherwise kept in .graphlife_cache/ at the "
                            "project root and reused while the file, the modules it imports and the settings "
                            "are unchanged)")

    check_p = add_parser("check", help="report graph-lifetime bugs")
    add_check_options(check_p)
    check_p.add_argument("--fix", action="store_true", help="apply the preferred fix of each finding in place")
    check_p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff instead")
    fix_p = add_parser("fix", help="same as `check --fix`")
    add_check_options(fix_p)
    fix_p.add_argument("--diff", action="store_true", help="print a unified diff instead of writing")
    lsp_p = add_parser("lsp", help="start the language server (stdio)")
    lsp_p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (for debugging)")
    explain_p = add_parser("explain", help="explain an autograd error traceback (stdin or a file)")
    explain_p.add_argument("file", nargs="?", help="a file with the traceback; stdin when omitted")
    rules_p = add_parser("rules", help="list the rules, or explain one")
    rules_p.add_argument("code", nargs="?")
    return parser


@functools.cache
def load_engine() -> None:
    """Import the engine and its rules with the cycle collector off, then freeze what they made.

    Why: start-up makes about 17,000 objects the collector tracks (the modules, classes and
    functions of the engine and the rules) that live as long as the process. Every collection during
    start-up walks them again and frees nothing, and so does the one at exit: together
    about a tenth of `graphlife check` of a small file. ``gc.freeze`` moves them out of
    the collector's sight (reference counting still frees what they drop); worker
    processes forked by a folder check inherit them frozen. Done once per process.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        from graphlife.checker import run_checks  # noqa: F401, PLC0415
        from graphlife.rules import all_rules  # noqa: PLC0415

        all_rules()
        gc.freeze()
    finally:
        if collecting:
            gc.enable()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.command == "check":
        mode = "diff" if args.diff else "fix" if args.fix else "check"
        return _run_check(args, mode)  # it loads the engine when a file is to be analyzed
    if args.command == "fix":
        load_engine()
        return _run_check(args, "diff" if args.diff else "fix")
    if args.command == "lsp":
        from graphlife.lsp.server import start  # noqa: PLC0415

        start(tcp=args.tcp)
        return 0
    if args.command == "explain":
        from graphlife.debug.traceback_explain import main as explain_main  # noqa: PLC0415

        return explain_main([args.file] if args.file else [])
    if args.command == "rules":
        return _run_rules(args)
    parser.error(f"unknown command {args.command}")  # exits with status 2
