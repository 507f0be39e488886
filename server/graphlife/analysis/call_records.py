"""What a call analyzed apart did, as data: the record the call hands back, and its mark in a log.

Why a module of its own: a call run apart (:mod:`graphlife.analysis.isolation`) and the
language server's cache of units and calls (:mod:`graphlife.analysis.unit_cache`) both
read and write these records, and the engine's protocols
(:mod:`graphlife.analysis.engine_api`) name them; kept below all three, the record is
data every one of them imports and none of them owns.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass
from typing import Protocol

from graphlife.analysis.rule_api import LogMark, ReportArgs
from graphlife.analysis.values import Value


class Reopen(enum.Enum):
    """What a replay answers for a call whose run apart was undone (it returned a graph)."""

    OPEN = "open"


#: The call's run apart was undone: inline it.
OPEN = Reopen.OPEN


@dataclass
class CallRecord:
    """What a call run apart did: what it reported (and the calls it ran apart in turn), the code
    it read, the functions it inlined, and what it hands back to its caller."""

    reports: list[ReportArgs | LogMark]
    touched: dict[int, ast.AST]
    inlined: set[int]
    result: Value | Reopen
    path_ends: bool
    create_graph_in: bool
    create_graph_out: bool
    writes_in: dict[int, ast.AST]  # the caller's writes under ``no_grad`` it saw (kept: their ids stay theirs)
    writes_added: dict[int, ast.AST]


class RecordedCall(Protocol):
    """A call the unit cache keeps (its ``CallEntry``), as far as a log of reports needs it."""

    record: CallRecord


@dataclass
class Nested(LogMark):
    """In a recorded log of reports: a call run apart (its unit cache entry) and, at replay, all
    it reported. The enclosing unit or call stays valid when only that call's code changed: the
    cache runs the call again alone and keeps the rest if it hands back the same."""

    entry: RecordedCall


def same_outcome(old: CallRecord, new: CallRecord) -> bool:
    """Does the caller see the same thing from both runs of a call (all but the reports)?"""
    return (old.result == new.result and old.path_ends == new.path_ends and old.create_graph_out == new.create_graph_out
            and old.writes_added.keys() == new.writes_added.keys())


def flatten(record: CallRecord) -> tuple[list[ReportArgs], dict[int, ast.AST], set[int]]:
    """A recorded call's reports, read code and inlined functions, with those of the calls it ran
    apart (as recorded: the same version of the file)."""
    reports: list[ReportArgs] = []
    touched, inlined = dict(record.touched), set(record.inlined)
    for item in record.reports:
        if isinstance(item, Nested):
            nested = flatten(item.entry.record)
            reports.extend(nested[0])
            touched.update(nested[1])
            inlined.update(nested[2])
        elif isinstance(item, tuple):
            reports.append(item)
    return reports, touched, inlined
