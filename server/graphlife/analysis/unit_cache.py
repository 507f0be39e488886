"""What each unit of a file reported, replayed after an edit that did not touch the code it read.

A unit is what the engine analyzes from scratch: the module body (with every
function it calls inlined), and each function that nothing inlined, analyzed
alone with unknown arguments. A unit's findings depend only on

- the code it executed: its own top-level block, and the blocks of every
  function it inlined and every class it instantiated or looked a method up in
  (recorded through :meth:`Interpreter.touch`); for the module body also every
  top-level statement that is not a definition;
- the file's definitions table: top-level imports, simple assignments, the
  names of functions and classes and the bases of classes, and which of those
  names are bound again somewhere (``TreeIndex.rebound``);
- one fact carried from earlier units: whether a ``backward(create_graph=True)``
  was seen (a later ``.grad`` then has a graph of its own).

While all of those are unchanged, the cache replays the unit's reports (each
``Reporter.report`` call in order, so the de-duplication across units happens
as in a full run), moves every line they mention by how much its block moved,
and marks the functions the unit inlined, exactly as running it would. A report
that mentions a line in a block the unit did not record as read, or blocks
that changed order, makes the cache run the unit again. The language server's
tests compare this against a full analysis on every edit they make.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Callable

from graphlife.analysis.blocks import Block, ParsedFile
from graphlife.findings import Span

_LINE_MENTION = re.compile(r"\b(line )(\d+)")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_MODULE = "module"  # the module body's entry (its tree is a new object in every version)


class Unmappable(Exception):
    """A recorded line is not in a block the unit read: run the unit again."""


@dataclass
class UnitEntry:
    unit: ast.AST
    statement_blocks: list[Block] | None  # the module body's: its top-level statements, in order
    definitions: int  # the definitions generation it was recorded under
    definition_reads: int | None  # and the table's reads generation (functions only)
    create_graph_in: bool
    create_graph_out: bool
    reports: list[tuple]
    inlined: set[int]
    reads: list[tuple[int, int, Block]]  # (first line, last line, block) when recorded, in file order


class UnitCache:
    """One document's unit results, kept between versions (the language server owns one per file)."""

    def __init__(self) -> None:
        self.entries: dict[int, UnitEntry] = {}
        self.version = 0
        self.rules_key: tuple = ()
        self._definitions_key: tuple | None = None
        self.definitions = 0  # bumped whenever the definitions table changes
        self.definition_reads = 0  # bumped whenever the code the table read changes
        self._block_of_statement: dict[int, Block] = {}
        self._parents: dict[int, ast.AST] = {}
        self._statement_blocks: list[Block] = []
        self._definition_reads: list[Block] | None = None
        self.replayed = 0
        self.ran = 0

    # -- one version --------------------------------------------------------------------
    def begin_rules(self, rules_key: tuple) -> None:
        """The enabled rules (their hooks make the reports): another set forgets every unit."""
        if rules_key != self.rules_key:
            self.entries.clear()
            self.rules_key = rules_key

    def begin(self, parsed: ParsedFile) -> None:
        """Prepare for analyzing ``parsed``; forget what cannot be valid any more."""
        self.version += 1
        self.replayed = self.ran = 0
        for block in parsed.blocks:
            block.seen = self.version
        self._block_of_statement = {id(stmt): block for block in parsed.blocks for stmt in block.statements}
        self._parents = parsed.index.parents
        self._statement_blocks = [
            block for block in parsed.blocks if any(not isinstance(stmt, _DEFINITIONS) for stmt in block.statements)
        ]
        key = (tuple(_definitions_key(block) for block in parsed.blocks), _rebound_key(parsed))
        if key != self._definitions_key:
            self._definitions_key = key
            self.definitions += 1
        for key, entry in list(self.entries.items()):
            own = entry.reads[0][2] if entry.reads and key != _MODULE else None
            if own is not None and getattr(own, "seen", -1) != self.version:
                del self.entries[key]  # its function was edited or removed

    def read_definitions(self, interp) -> None:
        """Build the definitions table the functions analyzed alone start from, noting the code
        it read (``name = SomeClass.method`` reads the class): that code is part of the table."""
        saved, interp.touched = interp.touched, {}
        try:
            interp.module_names()
            touched = interp.touched
        finally:
            interp.touched = saved
        found = {id(block): block for block in map(self.block_of, touched.values()) if block is not None}
        blocks = sorted(found.values(), key=lambda block: block.start)
        complete = all(self.block_of(node) is not None for node in touched.values())
        if not complete or self._definition_reads is None or not _same_blocks(blocks, self._definition_reads):
            self._definition_reads = blocks if complete else None
            self.definition_reads += 1

    def run(self, interp, unit: ast.AST, run: Callable[[], None]) -> None:
        """Replay ``unit`` if nothing it read changed, else run it and record it."""
        key = _MODULE if isinstance(unit, ast.Module) else id(unit)
        entry = self.entries.get(key)
        if entry is not None and (key == _MODULE or entry.unit is unit) and self._valid(entry, interp):
            try:
                reports = [self._moved_report(report, entry.reads) for report in entry.reports]
            except Unmappable:
                reports = None
            if reports is not None:
                for rule, span, message, severity, related, fixes in reports:
                    interp.reporter.report(rule, span, message, severity=severity, related=related, fixes=fixes)
                interp.inlined.update(entry.inlined)
                interp.create_graph_seen = entry.create_graph_out
                self.replayed += 1
                return
        self._record(interp, unit, run)

    # -- recording ------------------------------------------------------------------------
    def _record(self, interp, unit: ast.AST, run: Callable[[], None]) -> None:
        self.ran += 1
        create_graph_in = interp.create_graph_seen
        reports: list[tuple] = []
        saved = interp.touched, interp.unit_inlined, interp.reporter.log
        interp.touched, interp.unit_inlined, interp.reporter.log = {}, set(), reports
        try:
            run()
            touched, inlined = interp.touched, interp.unit_inlined
        finally:
            interp.touched, interp.unit_inlined, interp.reporter.log = saved
        own = self.block_of(unit) if not isinstance(unit, ast.Module) else None
        read = {id(block): block for block in ([own] if own is not None else [])}
        if isinstance(unit, ast.Module):
            read.update((id(block), block) for block in self._statement_blocks)
        for node in touched.values():
            block = self.block_of(node)
            if block is None:
                return  # read code outside the known blocks: do not cache this unit
            read[id(block)] = block
        ordered = sorted(read.values(), key=lambda block: block.start)
        if own is not None:
            ordered.remove(own)
            ordered.insert(0, own)  # the unit's own block first: it keeps the entry alive
        elif isinstance(unit, ast.Module) and not ordered:
            return
        self.entries[_MODULE if isinstance(unit, ast.Module) else id(unit)] = UnitEntry(
            unit=unit,
            statement_blocks=list(self._statement_blocks) if isinstance(unit, ast.Module) else None,
            definitions=self.definitions,
            definition_reads=None if isinstance(unit, ast.Module) else self.definition_reads,
            create_graph_in=create_graph_in,
            create_graph_out=interp.create_graph_seen,
            reports=reports,
            inlined=set(inlined),
            reads=[(block.start, block.end, block) for block in ordered],
        )

    def block_of(self, node: ast.AST) -> Block | None:
        current = node
        while True:
            block = self._block_of_statement.get(id(current))
            if block is not None:
                return block
            parent = self._parents.get(id(current))
            if parent is None:
                return None
            current = parent

    # -- replaying ------------------------------------------------------------------------
    def _valid(self, entry: UnitEntry, interp) -> bool:
        if entry.definitions != self.definitions or entry.create_graph_in != interp.create_graph_seen:
            return False
        if entry.definition_reads is not None and entry.definition_reads != self.definition_reads:
            return False
        if entry.statement_blocks is not None and not _same_blocks(entry.statement_blocks, self._statement_blocks):
            return False  # the module body gained, lost or changed a statement
        previous_old = previous_new = 0
        for old_start, _, block in sorted(entry.reads, key=lambda read: read[0]):
            if getattr(block, "seen", -1) != self.version:
                return False
            if old_start <= previous_old or block.start <= previous_new:
                return False  # blocks changed order: comparisons of lines across them may differ
            previous_old, previous_new = old_start, block.start
        return True

    def _moved_report(self, report: tuple, reads: list[tuple[int, int, Block]]) -> tuple:
        rule, span, message, severity, related, fixes = report
        if all(block.start == old_start for old_start, _, block in reads):
            return report
        move = _LineMover(reads)
        return (
            rule,
            move.span(span),
            _LINE_MENTION.sub(lambda match: match.group(1) + str(move.line(int(match.group(2)))), message),
            severity,
            tuple(move.value(item) for item in related),
            tuple(move.value(fix) for fix in fixes),
        )


class _LineMover:
    """Maps a line of the recorded version to the current one, through the blocks read."""

    def __init__(self, reads: list[tuple[int, int, Block]]) -> None:
        self.reads = reads

    def line(self, line: int) -> int:
        for old_start, old_end, block in self.reads:
            if old_start <= line <= old_end:
                return line + block.start - old_start
        raise Unmappable(line)

    def span(self, span: Span) -> Span:
        return Span(self.line(span.line), span.column, self.line(span.end_line), span.end_column)

    def value(self, value: Any) -> Any:
        if isinstance(value, Span):
            return self.span(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(item) for item in value)
        if is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: self.value(getattr(value, f.name)) for f in fields(value)}
            return replace(value, **changes)
        return value


def _same_blocks(first: list[Block], second: list[Block]) -> bool:
    """The same block objects in the same order (ids could be reused by new blocks; objects cannot)."""
    return len(first) == len(second) and all(a is b for a, b in zip(first, second))


def _definitions_key(block: Block) -> tuple:
    """What a block adds to the definitions table (cached on the block: it never changes)."""
    key = getattr(block, "definitions_key", None)
    if key is None:
        parts = []
        for stmt in block.statements:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                parts.append(ast.dump(stmt))
            elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
                parts.append(ast.dump(stmt))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                parts.append(("def", stmt.name))
            elif isinstance(stmt, ast.ClassDef):
                parts.append(("class", stmt.name, ast.dump(ast.Tuple(elts=stmt.bases + [k.value for k in stmt.keywords], ctx=ast.Load()))))
        key = block.definitions_key = tuple(parts)
    return key


def _rebound_key(parsed: ParsedFile) -> frozenset[str]:
    counts = parsed.index.binding_counts
    names = set()
    for stmt in parsed.tree.body:
        if isinstance(stmt, _DEFINITIONS):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in stmt.names)
    return frozenset(name for name in names if counts.get(name, 0) > 1)
