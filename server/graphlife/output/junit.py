"""JUnit XML for CI dashboards: a test suite per checked file, a failing test case per
finding or syntax error, and one passing case for a clean file (so the dashboard counts
what was checked). Notes are the suite's ``system-err``."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO
from xml.etree import ElementTree

from graphlife.output.paths import display_path
from graphlife.output.report import shown_message

if TYPE_CHECKING:
    from graphlife.output.report import RunResult


def write_junit(result: RunResult, out: TextIO) -> None:
    root = ElementTree.Element("testsuites", name="graphlife")
    notes_by_path: dict[str | None, list[str]] = {}
    for note in result.notes:
        notes_by_path.setdefault(note.path, []).append(note.message)
    total = failures = 0
    for report in result.reports:
        path = display_path(report.path)
        suite = ElementTree.SubElement(root, "testsuite", name=path)
        cases = 0
        for error in report.syntax_error_dicts():
            case = ElementTree.SubElement(suite, "testcase", name=f"syntax error at line {error['line']}",
                                          classname=path, file=path, line=str(error["line"]))
            failure = ElementTree.SubElement(case, "failure", message=error["message"], type="syntax-error")
            failure.text = f"{path}:{error['line']}:{error['column']}: syntax error: {error['message']}"
            cases += 1
        for finding in report.findings:
            where = f"cell {finding['cell']}:{finding['cell_line']}" if "cell" in finding else str(finding["line"])
            case = ElementTree.SubElement(
                suite, "testcase", name=f"{finding['code']} {finding['name']} at {where}:{finding['column']}",
                classname=path, file=path, line=str(finding["line"]))
            failure = ElementTree.SubElement(case, "failure", message=shown_message(finding),
                                             type=f"{finding['code']} {finding['severity']}")
            failure.text = f"{path}:{where}:{finding['column']}: {finding['code']} {finding['severity']}: " \
                           f"{shown_message(finding)}"
            cases += 1
        failed = cases
        if not cases:
            ElementTree.SubElement(suite, "testcase", name="no problems", classname=path, file=path)
            cases = 1
        notes = notes_by_path.get(report.path)
        if notes:
            ElementTree.SubElement(suite, "system-err").text = "\n".join(notes)
        suite.set("tests", str(cases))
        suite.set("failures", str(failed))
        suite.set("errors", "0")
        total += cases
        failures += failed
    reported = {report.path for report in result.reports}
    run_notes = [f"{path}: {message}" if path is not None else message
                 for path, messages in notes_by_path.items() if path not in reported for message in messages]
    if run_notes:
        ElementTree.SubElement(root, "system-err").text = "\n".join(run_notes)
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    ElementTree.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ElementTree.tostring(root, encoding="unicode"))
    out.write("\n")
