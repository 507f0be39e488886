"""``json``: one document with the findings, the syntax errors and the notes; ``json-lines``:
one JSON object a line (findings, then syntax errors as ``"code": null`` objects), for tools
that stream. A note (a file analyzed only in part, a notebook not checked) is part of the
document, so a consumer of JSON learns that a clean result may be incomplete."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from graphlife.output.report import RunResult


def notes_json(result: RunResult) -> list[dict[str, Any]]:
    return [{**({"path": note.path} if note.path is not None else {}), "level": note.level, "message": note.message}
            for note in result.notes]


def write_json(result: RunResult, out: TextIO) -> None:
    if result.statistics:
        from graphlife.output.statistics import write_statistics_json  # noqa: PLC0415

        write_statistics_json(result, out)
        return
    payload = {
        "version": result.version,
        "findings": result.findings(),
        # a block with a syntax error is not analyzed: say so (the exit status is 1 for it)
        "syntax_errors": result.syntax_errors(),
        "notes": notes_json(result),
    }
    json.dump(payload, out, indent=2)
    out.write("\n")


def write_json_lines(result: RunResult, out: TextIO) -> None:
    if result.statistics:
        for row in _statistics_rows(result):
            out.write(json.dumps(row) + "\n")
        return
    for finding in result.findings():
        out.write(json.dumps(finding) + "\n")
    for error in result.syntax_errors():
        out.write(json.dumps({**error, "code": None, "name": "syntax-error", "severity": "error"}) + "\n")


def _statistics_rows(result: RunResult) -> list[dict[str, object]]:
    from graphlife.output.statistics import statistics_json  # noqa: PLC0415

    return statistics_json(result)
