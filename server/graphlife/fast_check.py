"""``graphlife check FILE...`` answered from the cache of results, before the command line loads.

Why: a check of a file already checked, unchanged, is the common run of a pre-commit hook
or an editor's "check on save", and its cost is start-up. The full command line
(:mod:`graphlife.cli_full`) imports ``argparse``, ``json``, ``pathlib``, ``dataclasses``,
``typing`` and ``enum`` before it reads a record, which alone cost more than three times
a bare ``python -c pass``. This module answers the plainest command from the record with
what the interpreter has loaded anyway (``os``, ``sys``, ``marshal``) and three small
modules of graphlife that import nothing else: the record's reader
(:mod:`graphlife.project.cache_record`), the choice of language (:mod:`graphlife.i18n`)
and the text format's writer (:mod:`graphlife.output.text_render`).

What it answers: ``check`` followed by one or more paths of existing regular ``.py`` files,
each spelled as the full command line spells it, and nothing else (no option at all, no
folder, no standard input, no notebook); each file's record must be whole, of this Python
and this graphlife, for this text, this current folder, this spelling and this language,
made with the settings a check with no options has, with every ``pyproject.toml`` a
settings search looks at and every file and folder the analysis read still as it was (the
same stat). Anything else, or anything it cannot tell, returns ``None`` before a byte is
printed, and the full command line runs; a record whose inputs were only touched is for
the full command line too, which reads them again and renews the record.

What it prints is what the full command line prints for the same run: the same notes on
standard error, the same text (written by the same functions), the same colours, the same
exit status.
"""

from __future__ import annotations

import os
import stat
import sys

from graphlife import i18n
from graphlife.output.text_render import SEVERITY_RANK, Painter, quiet_broken_pipe, write_report, write_summary
from graphlife.project.cache_record import (
    cache_folder,
    default_settings_hold,
    inputs_unchanged,
    is_record_of,
    read_record,
    record_path,
)
from graphlife.project.digests import text_digest
from graphlife.project.limits import MAX_SOURCE_BYTES

#: What the summary's note counts as a file analyzed in part (as the full command line does).
_TIME_BOX = "time box"

#: Characters ``str.splitlines`` breaks at but Python does not (:mod:`graphlife.text_lines`).
_NOT_LINE_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


class _Report:
    """What :func:`graphlife.output.text_render.write_report` reads of a file's report."""

    __slots__ = ("findings", "lines", "notes", "path", "syntax_error_cells", "syntax_errors")

    def __init__(self, path: str, lines: list[str], findings: list[dict], syntax_errors: list[tuple[int, int, str]],
                 notes: list[str]) -> None:
        self.path = path
        self.lines = lines
        self.findings = findings
        self.syntax_errors = syntax_errors
        self.syntax_error_cells: list[tuple[int, int]] = []
        self.notes = notes


def answer(arguments: list[str]) -> int | None:
    """The exit status of ``graphlife check *arguments``, printed from the cache; ``None``
    (nothing printed) when the full command line must run."""
    if os.name != "posix" or not arguments or len(set(arguments)) != len(arguments):
        return None
    if any(not _plain_path(raw) for raw in arguments):
        return None
    try:
        language = i18n.from_environment()
        cwd = os.getcwd()
        reports = []
        for raw in arguments:
            report = _from_record(raw, cwd, language)
            if report is None:
                return None
            reports.append(report)
    except Exception:  # noqa: BLE001 - whatever went wrong, the full command line knows what to say
        return None
    return _print(reports, language)


def _plain_path(raw: str) -> bool:
    """A path to a Python file as the full command line spells it (``str(Path(raw))``): not
    an option, no empty or ``.`` part, no trailing separator."""
    if raw.startswith("-") or not raw.endswith(".py"):
        return False
    parts = raw.split("/")
    if raw.startswith("/"):
        parts = parts[1:]
    return all(part not in ("", ".") for part in parts)


def _from_record(path: str, cwd: str, language: str) -> _Report | None:
    """The report of ``path`` kept in its record, when the record holds for this run."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
        return None
    with open(path, "rb") as handle:
        data = handle.read(MAX_SOURCE_BYTES + 1)
    # Python's decoding without a BOM or a coding cookie is strict UTF-8; anything else (and
    # a NUL byte, which the full command line reports) is left to it.
    if len(data) > MAX_SOURCE_BYTES or b"\x00" in data or data.startswith(b"\xef\xbb\xbf") or b"coding" in data:
        return None
    source = data.decode("utf-8")
    if any(char in source for char in _NOT_LINE_BREAKS):
        return None
    entry = os.path.abspath(path)
    record = read_record(record_path(cache_folder(path), entry))
    if record is None or not is_record_of(record, entry, text_digest(source)) \
            or not default_settings_hold(record, path, cwd, language) or not inputs_unchanged(record):
        return None
    payload = record["payload"]
    if type(payload) is not dict:
        return None
    findings, errors, notes, other_lines = (payload["findings"], payload["syntax_errors"], payload["notes"],
                                            payload["other_lines"])
    if type(findings) is not list or type(notes) is not list or type(other_lines) is not dict \
            or not all(type(finding) is dict and finding.get("path", path) == path for finding in findings) \
            or not all(type(note) is str for note in notes):
        return None  # a finding in another file is reported under that file: the full command line merges them
    syntax_errors = [(int(line), int(column), str(message)) for line, column, message in errors]
    return _Report(path, source.splitlines(), _merged(findings), syntax_errors, notes)


def _merged(findings: list[dict]) -> list[dict]:
    """The findings of one file each once, the strongest severity deciding, in order
    (:func:`graphlife.cli_full.merge_project_findings` for a file whose findings are its own)."""
    merged: dict[tuple, dict] = {}
    for finding in findings:
        key = (finding["line"], finding["column"], finding["end_line"], finding["end_column"], finding["code"],
               finding.get("cell"))
        kept = merged.get(key)
        if kept is None or SEVERITY_RANK[finding["severity"]] < SEVERITY_RANK[kept["severity"]]:
            merged[key] = finding
    return sorted(merged.values(), key=lambda f: (f["line"], f["column"], f["code"]))


def _print(reports: list[_Report], language: str) -> int:
    """Write the run as ``graphlife check`` writes it in the text format; its exit status."""
    out = sys.stdout
    colour = hasattr(out, "isatty") and out.isatty() and not os.environ.get("NO_COLOR")
    findings = [finding for report in reports for finding in report.findings]
    syntax_errors = sum(len(report.syntax_errors) for report in reports)
    try:
        for report in reports:
            for note in report.notes:
                print(f"graphlife: {report.path}: {note}", file=sys.stderr)
        paint = Painter(bool(colour))
        for report in reports:
            write_report(report, out, paint, True, language)
        partly = sum(1 for report in reports for note in report.notes if _TIME_BOX in note)
        write_summary(out, [finding["severity"] for finding in findings], syntax_errors, len(reports), partly,
                      language)
        out.flush()
    except BrokenPipeError:  # `graphlife check ... | head`: the reader has what it wanted
        quiet_broken_pipe()
    failing = syntax_errors or any(SEVERITY_RANK[f["severity"]] <= SEVERITY_RANK["warning"] for f in findings)
    return 1 if failing else 0
