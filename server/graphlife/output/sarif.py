"""SARIF 2.1.0 (the OASIS standard GitHub code scanning reads): one run, the rules that
could fire with their documentation, a result per finding and per syntax error, and the
notes (a file analyzed only in part, a notebook not checked, an unreadable file) as tool
execution notifications, so that a viewer can say a clean result is incomplete.

Columns are counted in code points (``columnKind``), as graphlife counts them; a result in
a notebook names its cell in the message and in its properties, and its lines are the cell's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from graphlife.output.paths import artifact_uri
from graphlife.output.report import shown_message

if TYPE_CHECKING:
    from graphlife.output.report import RunResult

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}
SYNTAX_ERROR_RULE = "syntax-error"


def write_sarif(result: RunResult, out: TextIO) -> None:
    json.dump(sarif_log(result), out, indent=2)
    out.write("\n")


def sarif_log(result: RunResult) -> dict[str, Any]:
    rules, index_of = _rules(result)
    results = [_finding_result(finding, index_of) for finding in result.findings()]
    results += [_syntax_error_result(error, index_of) for error in result.syntax_errors()]
    notifications = [_notification(note.path, note.message, note.level) for note in result.notes]
    driver: dict[str, Any] = {"name": "graphlife", "version": result.version, "semanticVersion": result.version,
                              "rules": rules}
    if result.language != "en":
        driver["language"] = result.language  # the language of the rules' texts (SARIF's toolComponent.language)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            **({"language": result.language} if result.language != "en" else {}),  # of the results' messages
            "tool": {"driver": driver},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "invocations": [{
                "executionSuccessful": not any(note.level == "error" for note in result.notes),
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    }


def _rules(result: RunResult) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every rule (a viewer shows the documentation of any result's rule), plus the
    syntax-error pseudo-rule when a file had one."""
    from graphlife.rules import all_rules  # noqa: PLC0415 - the catalog, with each rule's documentation

    rules: list[dict[str, Any]] = []
    for rule in all_rules():
        doc = rule.doc.in_language(result.language)
        rules.append({
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": doc.summary},
            "help": {"text": f"{doc.summary} (`graphlife rules {rule.code}` explains it)",
                     "markdown": rule.markdown(result.language)},
            "defaultConfiguration": {"level": LEVELS[rule.severity.value]},
            "properties": {"tags": ["pytorch", "autograd"]},
        })
    if result.syntax_errors():
        rules.append({
            "id": SYNTAX_ERROR_RULE,
            "name": SYNTAX_ERROR_RULE,
            "shortDescription": {"text": "A part of the file does not parse; it was not analyzed."},
            "defaultConfiguration": {"level": "error"},
        })
    return rules, {rule["id"]: index for index, rule in enumerate(rules)}


def _location(path: str, line: int, column: int, end_line: int | None = None,
              end_column: int | None = None) -> dict[str, Any]:
    uri, relative = artifact_uri(path)
    artifact: dict[str, Any] = {"uri": uri}
    if relative:
        artifact["uriBaseId"] = "%SRCROOT%"
    region: dict[str, Any] = {"startLine": max(line, 1), "startColumn": max(column, 1)}
    if end_line is not None and end_column is not None and (end_line, end_column) > (line, column):
        region.update(endLine=end_line, endColumn=end_column)
    return {"physicalLocation": {"artifactLocation": artifact, "region": region}}


def _in_cell(data: dict[str, Any], text: str) -> tuple[str, int, int | None]:
    """The message, the line and the end line: a notebook's are its cell's."""
    if "cell" not in data:
        return text, data["line"], data.get("end_line")
    shift = data["line"] - data["cell_line"]
    end = data.get("end_line")
    return f"cell {data['cell']}: {text}", data["cell_line"], end - shift if end is not None else None


def _finding_result(finding: dict[str, Any], index_of: dict[str, int]) -> dict[str, Any]:
    text, line, end_line = _in_cell(finding, shown_message(finding))
    result: dict[str, Any] = {
        "ruleId": finding["code"],
        "ruleIndex": index_of[finding["code"]],
        "level": LEVELS[finding["severity"]],
        "message": {"text": text},
        "locations": [_location(finding["path"], line, finding["column"], end_line, finding["end_column"])],
    }
    related = []
    for number, place in enumerate(finding["related"]):
        if "path" not in place:
            continue
        place_text, place_line, place_end = _in_cell(place, shown_message(place))
        location = _location(place["path"], place_line, place["column"], place_end, place["end_column"])
        related.append({"id": number, **location, "message": {"text": place_text}})
    if related:
        result["relatedLocations"] = related
    if "cell" in finding:
        result["properties"] = {"cell": finding["cell"]}
    return result


def _syntax_error_result(error: dict[str, Any], index_of: dict[str, int]) -> dict[str, Any]:
    text, line, _ = _in_cell({**error, "end_line": None}, error["message"])
    return {
        "ruleId": SYNTAX_ERROR_RULE,
        "ruleIndex": index_of[SYNTAX_ERROR_RULE],
        "level": "error",
        "message": {"text": f"syntax error (this part was not analyzed): {text}"},
        "locations": [_location(error["path"], line, error["column"])],
    }


def _notification(path: str | None, message: str, level: str) -> dict[str, Any]:
    notification: dict[str, Any] = {"level": level, "message": {"text": message}}
    if path is not None:
        location = _location(path, 1, 1)
        del location["physicalLocation"]["region"]
        notification["locations"] = [location]
    return notification
