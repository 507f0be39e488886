"""`graphlife check|fix|lsp|explain|run|rules`: thin shells over the shared engine.

This is the whole command line; :mod:`graphlife.cli` (the ``graphlife`` command's entry
point) first lets :mod:`graphlife.fast_check` answer a plain ``graphlife check FILE...``
from the cache of results, and comes here for everything else.

Exit status of ``check``: 0 when nothing at or above ``--fail-on`` (default: warning;
information never fails by default) was found, 1 with such findings (or syntax errors),
2 on a usage error (an unknown rule code included) or a file that cannot be read (the
other files are still checked). ``--exit-zero`` turns 1 into 0.

What is printed is one module per format (:mod:`graphlife.output`); which files are
checked is :mod:`graphlife.discovery`; the settings of the command line are
:mod:`graphlife.cli_settings`.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from graphlife import __version__
from graphlife.cli_language import add_language_option, chosen_language
from graphlife.config import CommandLineSettings, Config, config_for_path
from graphlife.findings import localized
from graphlife.output.report import SEVERITY_RANK, FileReport, Note, RunResult, exit_status
from graphlife.output.text_render import quiet_broken_pipe
from graphlife.text_lines import source_lines, source_lines_keepends

if TYPE_CHECKING:
    from graphlife.lsp.notebooks import JoinedCell
    from graphlife.project.provider import ProjectModules
    from graphlife.project.result_cache import ResultCache
    from graphlife.project.sources import SourceCache

#: The name a file read from standard input is reported under without ``--stdin-filename``.
STDIN_NAME = "-"


def read_source(path: str) -> str:
    """Decode a regular file as Python does (PEP 263 cookie, else UTF-8); raise ValueError with a
    reason (:func:`graphlife.source_files.read_source_file`)."""
    from graphlife.source_files import read_source_file  # noqa: PLC0415

    return read_source_file(path).text


#: One file to check: its path, its settings, the mode (check, fix, diff), whether the cache
#: of results is used, its text when it was not read from the path (standard input), and
#: whether the fixes that change behaviour are applied too (``--unsafe-fixes``), and the
#: language of the messages (:mod:`graphlife.i18n`).
Job = tuple[str, Config, str, bool, str | None, bool, str]


def _check_one(job: Job) -> FileReport:
    path, config, mode, use_cache, text, unsafe, language = job
    from graphlife.checker import check_source, project_modules  # noqa: PLC0415

    report = FileReport(path=path, settings_problems=list(config.problems))
    if path.endswith(".ipynb"):
        return _check_notebook(path, config, report, text, mode, unsafe, language)
    from graphlife.source_files import read_source_file  # noqa: PLC0415

    if text is None:
        try:
            read = read_source_file(path)
        except (OSError, ValueError) as exc:
            report.read_error = str(exc)
            return report
        source, report.encoding = read.text, read.encoding
    else:
        source = text
    cached = _cached_report(path, source, config, language) if use_cache and mode == "check" else None
    if cached is not None:
        return cached
    modules = project_modules(path if text is None else os.path.abspath(path), config, _shared_sources())
    result = check_source(source, path, config, modules=modules)
    report.lines = source_lines(source)
    report.findings = [f.to_json(path, language) for f in result.findings]
    for other in {f.span.path for f in result.findings} - {None}:
        report.other_lines[str(other)] = modules.lines_of(str(other)) or []
    report.notes.extend(f"cannot analyze {where} (imported): {reason}" for where, reason in modules.unreadable.items())
    report.syntax_errors = [(e.line, e.column, e.message) for e in result.syntax_errors]
    report.notes.extend(result.notes)
    if mode in ("fix", "diff") and result.findings and not result.syntax_errors:
        from graphlife.fixes import fix_source  # noqa: PLC0415

        report.original_source = source
        abs_path = path if text is None else os.path.abspath(path)
        report.fixed_source = fix_source(source, path, config, unsafe=unsafe,  # judged in the finding's project
                                         modules=lambda: project_modules(abs_path, config, _shared_sources()))
    elif mode in ("fix", "diff") and result.syntax_errors:
        report.notes.append("not fixed: the file has a syntax error")
    if use_cache and mode == "check" and not any("time box" in note for note in result.notes):
        _store_report(report, source, config, modules, language)
    return report


# -- the cache of results on disk (:mod:`graphlife.project.result_cache`) -------------------------

#: What a cached report keeps (the rest is the same on every run, or made again from the source).
_CACHED_FIELDS = ("findings", "syntax_errors", "notes", "other_lines")


@functools.cache
def _result_cache(folder: str) -> ResultCache:
    from graphlife.project.result_cache import ResultCache  # noqa: PLC0415

    return ResultCache(Path(folder))


def _cache_keys(path: str, source: str, config: Config, language: str) -> tuple[ResultCache, str, str]:
    """The cache for ``path`` (at its project's root), the hash of its text, and the settings
    key; the current folder and the spelling of ``path`` are part of it, as findings in other
    files spell their paths like it (relative to the current folder, or absolute)."""
    from graphlife.project.result_cache import default_cache_folder, settings_key, text_hash  # noqa: PLC0415

    cache = _result_cache(str(default_cache_folder(path)))
    key = f"{settings_key(config)}:{os.getcwd()}:{path}"
    return cache, text_hash(source), key if language == "en" else f"{key}:{language}"  # the messages it keeps


def _from_cache(path: str, config: Config, language: str) -> FileReport | None:
    """The cached report of a Python file (not a notebook), or ``None`` to check it."""
    if path.endswith(".ipynb"):
        return None
    try:
        source = read_source(path)
    except (OSError, ValueError):
        return None  # the check reports why it cannot be read
    report = _cached_report(path, source, config, language)
    if report is not None:
        report.settings_problems = list(config.problems)
    return report


def _cached_report(path: str, source: str, config: Config, language: str) -> FileReport | None:
    """The report of an earlier run, when the file, every module it imported and the settings
    are unchanged."""
    cache, text, settings = _cache_keys(path, source, config, language)
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


def _store_report(report: FileReport, source: str, config: Config, modules: ProjectModules, language: str) -> None:
    cache, text, settings = _cache_keys(report.path, source, config, language)
    payload = {name: getattr(report, name) for name in _CACHED_FIELDS}
    cache.store(report.path, text, settings, modules.dependencies(), payload, folders=modules.folders_searched(),
                default_settings=_default_settings(report.path, config, language))
    for warning in cache.warnings():
        if warning not in _WARNED:
            _WARNED.add(warning)
            report.notes.append(warning)


def _default_settings(path: str, config: Config, language: str) -> tuple[str, str, str] | None:
    """What the record says for :mod:`graphlife.fast_check` when its settings are the ones a
    check of ``path`` with no settings on the command line has (the defaults: no
    ``[tool.graphlife]`` applies), so that a plain ``graphlife check`` may be answered from it
    without reading any settings; ``None`` otherwise (flags, ``--isolated``, a settings file)."""
    if config != Config() or config_for_path(Config(), path, CommandLineSettings()) != Config():
        return None
    return os.getcwd(), path, language


_WARNED: set[str] = set()


@functools.cache
def _shared_sources() -> SourceCache:
    """The parsed files of this process, shared by the checks of all its files: a module that
    many files import is read and parsed once."""
    from graphlife.project.sources import SourceCache  # noqa: PLC0415

    return SourceCache()


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
            if kept is None or SEVERITY_RANK[finding["severity"]] < SEVERITY_RANK[kept["severity"]]:
                merged[where][key] = finding
    result = [*reports, *(by_path[path] for path in sorted(order))]
    for report in result:
        found = merged.get(report.path, {})
        report.findings = sorted(found.values(), key=lambda f: (f["line"], f["column"], f["code"]))
    return result


def _check_notebook(path: str, config: Config, report: FileReport, text: str | None = None, mode: str = "check",
                    unsafe: bool = False, language: str = "en") -> FileReport:
    """A notebook's code cells, analyzed together in cell order; findings point into their cell
    (and fixed cell by cell). Only nbformat 4 notebooks of a Python kernel are checked (a note
    says why another is not)."""
    from graphlife.checker import check_source  # noqa: PLC0415
    from graphlife.lsp.notebooks import CellText, cell_relative_lines, cell_relative_text, join_cells  # noqa: PLC0415
    from graphlife.notebook_format import why_not_checked  # noqa: PLC0415
    from graphlife.source_files import check_readable  # noqa: PLC0415

    try:
        if text is None:
            check_readable(path)
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        notebook = json.loads(text)  # a notebook nested too deeply raises RecursionError: caught
        refusal = why_not_checked(notebook)
        if refusal is not None:
            report.notes.append(refusal)
            return report
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
    result = check_source(source, path, config)
    report.notes.extend(result.notes)

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
        data = finding.to_json(path, language)
        data["message"] = cell_relative_lines(data["message"], segment_for_line)  # "line 48" -> "line 3 (cell 6)"
        if language != "en":
            data["localized_message"] = cell_relative_text(finding.message, segment_for_line, language)
        data["cell"], data["cell_line"] = locate(finding.line)
        for related in data["related"]:
            related["cell"], related["cell_line"] = locate(related["line"])
            if "message" in related:
                related["message"] = cell_relative_lines(related["message"], segment_for_line)
        for related, place in zip(data["related"], finding.related, strict=True):
            if "localized_message" in related:
                related["localized_message"] = cell_relative_text(place.message, segment_for_line, language)
        report.findings.append(data)
    report.syntax_errors = [(e.line, e.column, e.message) for e in result.syntax_errors]
    report.syntax_error_cells = [locate(e.line) for e in result.syntax_errors]
    if mode in ("fix", "diff") and result.findings and not result.syntax_errors:
        from graphlife.fixes.notebooks import fix_notebook  # noqa: PLC0415

        def join(texts: list[str]) -> tuple[str, list[int]]:
            joined, cells = join_cells([CellText(uri=str(n), version=None, number=n, text=t)
                                        for n, t in enumerate(texts, start=1)])
            return joined, [cell.line_offset for cell in cells]

        report.original_source = text
        report.fixed_source = fix_notebook(text, join, path, config, unsafe=unsafe)
    return report


def _run_check(args: argparse.Namespace, mode: str) -> int:
    """Check the files ``args`` names (or standard input) and write the findings in
    ``--output-format``; the exit status is the module docstring's."""
    from graphlife.cli_settings import RuleCatalog, UsageError, check_codes, command_line_settings  # noqa: PLC0415

    try:
        command_line = command_line_settings(args)
        stdin = _reads_stdin(args)
    except UsageError as exc:
        print(f"graphlife: error: {exc}", file=sys.stderr)
        return 2
    if stdin:
        return _run_check_stdin(args, mode, command_line)
    from graphlife.discovery import discover  # noqa: PLC0415

    @functools.cache
    def settings_for(folder: str) -> Config:
        return config_for_path(Config(), folder, command_line)

    files, missing = discover(args.paths, settings_for, force_exclude=args.force_exclude)
    configs = {path: config_for_path(Config(), path, command_line) for path in files}
    errors = check_codes(args, configs.items() or [(os.getcwd(), settings_for(os.getcwd()))], RuleCatalog.load())
    if errors:
        for message in errors:
            print(f"graphlife: error: {message}", file=sys.stderr)
        return 2
    notes = [Note(raw, "no such file or directory", "error") for raw in missing]
    if not files and not missing:  # an all-clear that checked nothing would mislead a CI log
        notes.append(Note(None, "no Python files or notebooks found under the given paths (after exclusions)"))
    use_cache = mode == "check" and not args.no_cache
    # Files whose results are in the cache are answered here: a project checked again
    # unchanged starts no worker process and analyzes nothing.
    language = chosen_language(args)
    known = {path: report for path in files if (report := _from_cache(path, configs[path], language)) is not None} \
        if use_cache else {}
    unsafe = bool(getattr(args, "unsafe_fixes", False))
    jobs: list[Job] = [(path, configs[path], mode, use_cache, None, unsafe, language)
                       for path in files if path not in known]
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
    return _finish(args, mode, reports, notes, configs)


def _reads_stdin(args: argparse.Namespace) -> bool:
    """``graphlife check -`` (or ``--stdin-filename NAME`` without paths) reads standard input."""
    if "-" in args.paths and len(args.paths) > 1:
        from graphlife.cli_settings import UsageError  # noqa: PLC0415

        raise UsageError("`-` (standard input) cannot be checked together with other paths")
    if not args.paths and not args.stdin_filename:
        from graphlife.cli_settings import UsageError  # noqa: PLC0415

        raise UsageError("give the files or folders to check (or `-` for standard input)")
    return args.paths in ([], ["-"])


def _run_check_stdin(args: argparse.Namespace, mode: str, command_line: CommandLineSettings) -> int:
    """Check the text of standard input as the file ``--stdin-filename`` (its settings, its
    folder's modules, a notebook when it ends in ``.ipynb``). With ``--fix`` the fixed text
    is written to standard output, and what remains is reported on standard error."""
    from graphlife.cli_settings import RuleCatalog, check_codes  # noqa: PLC0415
    from graphlife.source_files import decode_source  # noqa: PLC0415

    name = args.stdin_filename or STDIN_NAME
    where = args.stdin_filename or os.path.join(os.getcwd(), STDIN_NAME)
    config = config_for_path(Config(), where, command_line)
    errors = check_codes(args, [(where, config)], RuleCatalog.load())
    for message in errors:
        print(f"graphlife: error: {message}", file=sys.stderr)
    if errors:
        return 2
    if args.force_exclude and args.stdin_filename:
        from graphlife.discovery import left_out  # noqa: PLC0415

        if left_out(args.stdin_filename, False, config):
            if mode == "fix":
                sys.stdout.buffer.write(sys.stdin.buffer.read())
            return 0
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8") if name.endswith(".ipynb") else decode_source(data).text
    except (ValueError, UnicodeDecodeError) as exc:
        print(f"graphlife: {name}: cannot read: {exc}", file=sys.stderr)
        return 2
    load_engine()
    unsafe = bool(getattr(args, "unsafe_fixes", False))
    language = chosen_language(args)
    report = _check_one((name, config, "diff" if mode == "fix" else mode, False, text, unsafe, language))
    if mode != "fix":
        return _finish(args, mode, [report], [], {name: config})
    fixed = report.fixed_source if report.fixed_source is not None else text
    try:
        sys.stdout.write(fixed)
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_broken_pipe()
    remaining = _check_one((name, config, "check", False, fixed, False, language))
    result = _result(args, [remaining], [], colour=False)
    from graphlife.output import write  # noqa: PLC0415

    write("concise", result, sys.stderr)
    return exit_status(result, args.fail_on, False) if not args.exit_zero else 0


def _result(args: argparse.Namespace, reports: list[FileReport], notes: list[Note], colour: bool) -> RunResult:
    """The run's findings (each once, under its own file) and its notes, for the formats."""
    problems: dict[str, None] = {}
    for report in reports:
        if report.read_error:
            notes.append(Note(report.path, f"cannot read: {report.read_error}", "error"))
        notes.extend(Note(report.path, note) for note in report.notes)
        problems.update(dict.fromkeys(report.settings_problems))
    notes.extend(Note(None, problem) for problem in problems)  # once per run, however many files
    readable = merge_project_findings([r for r in reports if not r.read_error])
    return RunResult(version=__version__, reports=readable, notes=notes, statistics=args.statistics,
                     quiet=args.quiet, colour=colour, language=chosen_language(args))


def _finish(args: argparse.Namespace, mode: str, reports: list[FileReport], notes: list[Note],
            configs: dict[str, Config]) -> int:
    """Report, write fixes or the diff, print in the chosen format; the exit status."""
    from graphlife.output import write  # noqa: PLC0415

    out: TextIO = sys.stdout
    if args.output_file:
        try:
            out = open(args.output_file, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            print(f"graphlife: error: --output-file {args.output_file}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    colour = (out is sys.stdout and hasattr(out, "isatty") and out.isatty() and not os.environ.get("NO_COLOR")
              and args.output_format in ("text", "full", "concise"))
    result = _result(args, reports, notes, colour)
    failed_write = False
    try:
        if not args.silent:
            for note in result.notes:  # also in the machine formats; here for the person at the terminal
                if note.level == "error" or not args.quiet:
                    where = f"{note.path}: " if note.path is not None else ""
                    print(f"graphlife: {where}{localized(note.message, result.language)}", file=sys.stderr)
        if mode in ("fix", "diff"):
            failed_write = not _apply_fixes(result.reports, mode, configs, out, chosen_language(args))
        if not args.silent and not (mode == "diff" and args.output_format in ("text", "full")):
            write(args.output_format, result, out)
        out.flush()
    except BrokenPipeError:  # `graphlife check ... | head`: the reader has what it wanted
        quiet_broken_pipe()
    finally:
        if out is not sys.stdout:
            out.close()
    read_error = any(note.level == "error" for note in result.notes)
    status = exit_status(result, args.fail_on, read_error or failed_write)
    return 0 if status == 1 and args.exit_zero else status


def _apply_fixes(reports: list[FileReport], mode: str, configs: dict[str, Config], out: TextIO,
                 language: str = "en") -> bool:
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
            out.writelines(
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
                reports[index] = _check_one((report.path, configs.get(report.path, Config()), "check", False, None,
                                             False, language))
    return not failed


def _run_rules(args: argparse.Namespace) -> int:
    from graphlife.rules import all_rules, rule_by_code  # noqa: PLC0415

    if args.code:
        rule = rule_by_code(args.code.upper())
        if rule is None:
            print(f"graphlife: unknown rule {args.code}", file=sys.stderr)
            return 2
        print(rule.markdown(chosen_language(args)))
        return 0
    language = chosen_language(args)
    for rule in all_rules():
        print(f"{rule.code}  {rule.name:<40} {rule.severity.value:<12} {rule.doc.in_language(language).summary}")
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


class _VersionAction(argparse.Action):
    """``--version`` / ``-V``: graphlife's version and the torch its op table was measured
    with (read only when asked: the table is large)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and the torch version the op table was measured with")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        sys.stdout.write(f"{version_text()}\n")
        parser.exit()


def version_text() -> str:
    from importlib import resources  # noqa: PLC0415

    try:
        table = json.loads(resources.files("graphlife").joinpath("data/saved_tensors.json").read_text("utf-8"))
        torch = f" (op table measured with torch {table['torch_version']})"
    except (OSError, ValueError, KeyError, TypeError):
        torch = " (op table: not found)"
    return f"graphlife {__version__}{torch}"


#: What ``--output-format`` offers (``--format`` is its older spelling).
OUTPUT_FORMATS = ("text", "full", "concise", "json", "json-lines", "sarif", "github", "junit")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphlife", description="PyTorch autograd graph-lifetime checker.",
                                     formatter_class=HelpFormatter)
    parser.add_argument("-V", "--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser = functools.partial(sub.add_parser, formatter_class=HelpFormatter)

    def add_check_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="*", help="files and folders to check; `-` reads standard input")
        p.add_argument("--output-format", "--format", dest="output_format", choices=OUTPUT_FORMATS, default="text",
                       help="text (the default: each finding with its source line), concise (one line each), json, "
                            "json-lines, sarif (GitHub code scanning), github (Actions annotations), junit")
        p.add_argument("-o", "--output-file", metavar="PATH", help="write the output to this file")
        selection = p.add_argument_group("rule selection (as in ruff: flags win over settings files; "
                                          "a flag given twice adds up)")
        selection.add_argument("--select", action="append", metavar="CODES",
                               help="codes or prefixes to run, comma-separated (e.g. GL1,GL201); replaces the "
                                    "settings' selection")
        selection.add_argument("--extend-select", action="append", metavar="CODES",
                               help="codes or prefixes to run on top of the settings' selection")
        selection.add_argument("--ignore", action="append", metavar="CODES", help="codes or prefixes to skip")
        files = p.add_argument_group("file selection")
        files.add_argument("--exclude", action="append", metavar="PATTERNS",
                           help="gitignore-style patterns a folder walk leaves out, replacing the defaults")
        files.add_argument("--extend-exclude", action="append", metavar="PATTERNS",
                           help="patterns to leave out on top of the defaults")
        files.add_argument("--force-exclude", action="store_true",
                           help="leave out excluded files even when named on the command line (for pre-commit)")
        files.add_argument("--no-respect-gitignore", action="store_true",
                           help="check what .gitignore ignores too")
        files.add_argument("--stdin-filename", metavar="PATH",
                           help="the name of the file read from standard input (its settings and report name)")
        settings = p.add_argument_group("settings")
        settings.add_argument("--config", action="append", metavar="PATH|KEY=VALUE",
                              help="a pyproject.toml to use instead of the discovered ones, or one TOML setting "
                                   "(e.g. \"ignore = ['GL205']\") over all others")
        settings.add_argument("--isolated", action="store_true", help="read no settings file")
        status = p.add_argument_group("exit status and output")
        status.add_argument("--fail-on", choices=("error", "warning", "information"), default="warning",
                            help="the least severity that fails the run (default: warning; information never "
                                 "fails unless asked)")
        status.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings fail the run")
        status.add_argument("--statistics", action="store_true", help="print how many findings of each rule")
        status.add_argument("-q", "--quiet", action="store_true",
                            help="print the findings only (no summary, no notes on standard error)")
        status.add_argument("-s", "--silent", action="store_true",
                            help="print nothing; the exit status still says what was found")
        add_language_option(p)
        p.add_argument("--no-cache", action="store_true",
                       help="analyze every file again (results are otherwise kept in .graphlife_cache/ at the "
                            "project root and reused while the file, the modules it imports and the settings "
                            "are unchanged)")

    check_p = add_parser("check", help="report graph-lifetime bugs")
    add_check_options(check_p)
    check_p.add_argument("--fix", action="store_true", help="apply the preferred fix of each finding in place")
    check_p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff instead")
    check_p.add_argument("--unsafe-fixes", action="store_true",
                         help="with --fix or --diff, also apply fixes that change memory or what trains")
    fix_p = add_parser("fix", help="same as `check --fix`")
    add_check_options(fix_p)
    fix_p.add_argument("--diff", action="store_true", help="print a unified diff instead of writing")
    fix_p.add_argument("--unsafe-fixes", action="store_true",
                       help="also apply fixes that change memory or what trains (retain_graph=True, ...)")
    lsp_p = add_parser("lsp", help="start the language server (stdio)")
    lsp_p.add_argument("--stdio", action="store_true", help="talk over standard input and output (the default)")
    lsp_p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (for debugging)")
    explain_p = add_parser("explain", help="explain an autograd error traceback (stdin or a file)")
    explain_p.add_argument("file", nargs="?", help="a file with the traceback; stdin when omitted")
    add_language_option(explain_p)
    # `run` is dispatched before parsing (the program's own options follow it); listed for --help.
    add_parser("run", help="run a Python program, explaining autograd errors (graphlife run --help)", add_help=False)
    rules_p = add_parser("rules", help="list the rules, or explain one")
    rules_p.add_argument("code", nargs="?")
    add_language_option(rules_p)
    return parser


def missing_extra(modules: tuple[str, ...], what: str) -> str | None:
    """A message naming the extra to install when one of ``modules`` is not installed."""
    import importlib.util  # noqa: PLC0415

    absent = [name for name in modules if importlib.util.find_spec(name) is None]
    if not absent:
        return None
    return (f"{what} needs {', '.join(absent)}, which `pip install graphlife` leaves out: "
            "install `graphlife[lsp]` (pip install 'graphlife[lsp]')")


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
    if argv[:1] == ["run"]:
        from graphlife.runtime.launcher import main as run_main  # noqa: PLC0415 - start-up time of other commands

        return run_main(argv[1:])
    try:
        return _main(argv)
    except BrokenPipeError:  # `graphlife rules | head`: the reader has what it wanted
        quiet_broken_pipe()
        return 0


def _main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.command in ("check", "fix"):
        mode = "check" if args.command == "check" else "fix"
        if args.diff:
            mode = "diff"
        elif args.command == "check" and args.fix:
            mode = "fix"
        problem = missing_extra(("libcst",), "fixing") if mode != "check" else None
        if problem:
            print(f"graphlife: error: {problem}", file=sys.stderr)
            return 2
        return _run_check(args, mode)  # it loads the engine when a file is to be analyzed
    if args.command == "lsp":
        problem = missing_extra(("pygls", "lsprotocol", "libcst"), "the language server")
        if problem:
            print(f"graphlife: error: {problem}", file=sys.stderr)
            return 2
        from graphlife.lsp.server import start  # noqa: PLC0415

        start(tcp=args.tcp)
        return 0
    if args.command == "explain":
        from graphlife.debug.traceback_explain import main as explain_main  # noqa: PLC0415

        return explain_main([args.file] if args.file else [], chosen_language(args))
    if args.command == "rules":
        return _run_rules(args)
    parser.error(f"unknown command {args.command}")  # exits with status 2
