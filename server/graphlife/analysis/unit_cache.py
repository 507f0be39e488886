"""What each unit of a file reported, replayed after an edit that did not touch the code it read.

A unit is what the engine analyzes from scratch: the module body (with every
function it calls inlined), and each function that nothing inlined, analyzed
alone with unknown arguments. A unit's findings depend only on

- the code it executed: its own region (a top-level block, or a method of a
  class: :mod:`graphlife.analysis.regions`), and the regions of every function
  it inlined and every class it instantiated or looked a method up in
  (recorded through :meth:`Interpreter.touch`); for the module body also every
  top-level statement that is not a definition;
- the file's definitions table: top-level imports, simple assignments, the
  names of functions and classes and the bases of classes, and which of those
  names are bound again somewhere (``TreeIndex.rebound``);
- one fact carried from earlier units: whether a ``backward(create_graph=True)``
  was seen (a later ``.grad`` then has a graph of its own);
- for a method analyzed alone, the ``self`` it starts from. The code its build read
  (``__init__`` and what it calls) is kept apart from the unit's own: while it is
  unchanged, so is the build; when it changed, the ``self`` is built again (once per class)
  and the unit is replayed if it prints the same as the recorded one in what the unit read of
  it: the attributes of the instance it looked up (and which of them hold a tensor, when it
  asked), with what they lead to, and the rest of the build
  (:mod:`graphlife.analysis.self_reads`, :mod:`graphlife.analysis.self_print`), its lines in an
  edited method moved through the lines the edit kept.

While all of those are unchanged, the cache replays the unit's reports (each
``Reporter.report`` call in order, so the de-duplication across units happens
as in a full run), moves every line they mention by how much its region moved
(spans, and the ``Line`` arguments of a ``Message``: lines are never parsed out
of text), and marks the functions the unit inlined, exactly as running it would. A report
that mentions a line outside the block and method regions the unit read, or
regions that changed order, makes the cache run the unit again. The language server's
tests compare this against a full analysis on every edit they make.

A call analyzed apart (:mod:`graphlife.analysis.isolation`) has an entry of its own. Inside
a unit that runs again, it is replayed the same way when it is made from the same code
(the same call expression, statements and inlined calls around it) with the same values
(arguments, the caller's names with the file's functions and classes by name, the
gradient mode, the writes made under ``no_grad`` so far) and the code it read is
unchanged. Its caller's record (a unit's, or another such call's) holds it as a
:class:`~graphlife.analysis.call_records.Nested` mark, not as its reports, and does not count the callee's
code as read: when only that code changed, replaying the caller runs the call again
alone, with the values and in the context it was recorded with (the caller being
unchanged, they are the same), and keeps the caller's replay if the call hands back the
same result, path end, ``create_graph`` fact and ``no_grad`` writes; otherwise the
caller runs. A script whose module body runs one experiment after another, or whose
``main()`` does, then re-runs only the edited experiment.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, TypeVar

from graphlife.analysis import isolation
from graphlife.analysis.blocks import Block, ParsedFile
from graphlife.analysis.call_records import CallRecord, Nested, RecordedCall, Reopen, same_outcome
from graphlife.analysis.engine_api import EngineParts, Timeout
from graphlife.analysis.regions import Region, RegionMap
from graphlife.analysis.rule_api import LogMark, ReportArgs, Reporter
from graphlife.analysis.run_state import CallFrame, RunState
from graphlife.analysis.self_cache import BuiltSelf
from graphlife.analysis.self_print import LineMap, Place, Print, SplitPrints, print_of, same_prints
from graphlife.analysis.self_reads import Reads
from graphlife.analysis.state import State
from graphlife.analysis.unseen_writes import attribute_write_names
from graphlife.analysis.values import ClassRef, FunctionRef, TupleVal, Value
from graphlife.findings import Line, Message, Span

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_MODULE = "module"  # the module body's entry (its tree is a new object in every version)

#: A unit's entry: the module body's (``"module"``), or a function's place in its region.
UnitKey = str | tuple[Region, int, int]
#: A region read, as recorded: its first and last line then, and the region.
Read = tuple[int, int, Region]
#: The regions a build of ``self`` read, and the functions it inlined located (``None``: not all
#: in known regions).
_BuildReads = tuple[list[Region] | None, list[tuple[Region, int, int]] | None]
#: Where a region went in this version, and how its lines moved (``None``: they did not).
Moved = Callable[[Region], tuple[Region, LineMap | None] | None]
#: The statements running at each depth, the calls of the inlined calls around, their functions' keys.
CallContext = tuple[tuple[ast.stmt, ...], tuple[ast.Call | None, ...], tuple[int, ...]]
#: A state's grad mode: enabled, inference mode, enabled only by assumption.
GradFlags = tuple[bool | None, bool | None, bool]


class Unmappable(Exception):
    """A recorded line is not in a block the unit read: run the unit again."""


@dataclass
class UnitEntry:
    statement_blocks: list[Block] | None  # the module body's: its top-level statements, in order
    definitions: int  # the definitions generation it was recorded under
    definition_reads: int | None  # and the table's reads generation (functions only)
    create_graph_in: bool
    create_graph_out: bool
    reports: list[ReportArgs | LogMark]
    inlined: list[tuple[Region, int, int]]  # the functions it inlined, located in their regions
    reads: list[Read]  # (first line, last line, region) when recorded; its own first
    #: The code read to build the ``self`` it started from (not by the unit itself), the functions
    #: that build inlined, and the build's print (``None``: not one build, or one without a print).
    #: While that code is unchanged, so is the build; when it changed, the unit is replayed if
    #: this version builds a ``self`` of the same print (:mod:`graphlife.analysis.self_print`).
    self_reads: list[Read]
    self_inlined: list[tuple[Region, int, int]]
    self_print: Print | None
    #: The attributes of its ``self`` the unit read (:mod:`graphlife.analysis.self_reads`); ``None``:
    #: the whole ``self``, and ``self_print`` is its print. Otherwise ``self_print`` is the print of
    #: those the instance held and ``self_base`` that of the rest, and ``self_absent`` the names
    #: read that it did not hold (:class:`~graphlife.analysis.self_print.SplitPrints`).
    self_keys: frozenset[str] | None = None
    self_base: Print | None = None
    self_absent: tuple[str, ...] = ()
    #: The classes whose attributes of its ``self`` the unit asked for (``self_reads.items_of_class``):
    #: which attributes hold one is in ``self_print``.
    self_kinds: frozenset[type] = frozenset()


@dataclass
class CallEntry:
    """A call run apart (:mod:`graphlife.analysis.isolation`): what it was given and what it did."""

    site: ast.AST  # the call expression (kept: identity says the caller's code is the same)
    callee: ast.FunctionDef | ast.AsyncFunctionDef
    #: The statements running at each depth and the inlined calls the call is made from (the
    #: depth left for inlining, and what reports may point at); kept, compared by identity.
    context: CallContext
    frames: list[CallFrame]  # the inlined calls it is made from, to run it again alone
    callee_top_level: bool  # a function of the module (found by name when its block was edited)
    unit: ast.AST | None
    args: list[Value]
    kwargs: dict[str, Value]
    env: dict[str, object]  # the caller's names the callee could see (see ``_env_key``)
    env_values: dict[str, Value]  # the caller's names as they were (plain values), to run it again
    globals_names: frozenset[str]  # the module's definitions bound when it was called
    flags: GradFlags
    definitions: int
    writes_in: dict[int, ast.AST]
    record: CallRecord
    reads: list[Read]


#: Calls recorded per call site: a site runs more than once in a unit only through ``try``.
_CALLS_PER_SITE = 4


class UnitCache:
    """One document's unit results, kept between versions (the language server owns one per file)."""

    def __init__(self) -> None:
        self.entries: dict[UnitKey, UnitEntry] = {}
        self.version = 0
        self.rules_key: tuple[object, ...] = ()
        self._definitions_key: tuple[object, ...] | None = None
        self.definitions = 0  # bumped whenever the definitions table changes
        self.definition_reads = 0  # bumped whenever the code the table read changes
        self.regions = RegionMap()
        self._statement_blocks: list[Block] = []
        self._definition_reads: list[Region] | None = None
        self.calls: dict[int, list[CallEntry]] = {}
        #: The names of the module's definitions bound when a call was made, shared by the calls
        #: that saw the same table (see ``_globals_names``).
        self._shared_globals_names: tuple[dict[str, Value], int, frozenset[str]] | None = None
        self.replayed = 0
        self.ran = 0
        self.calls_replayed = 0
        self.calls_ran = 0
        #: Units replayed with a ``self`` built again from edited code of the same print.
        self.selves_matched = 0
        self._prints: dict[int, tuple[BuiltSelf, Print | None]] = {}  # per build of this version
        self._splits: dict[int, tuple[BuiltSelf, SplitPrints | None]] = {}  # likewise
        #: The regions a build of this version read, and the functions it inlined located (likewise).
        self._built_reads: dict[int, tuple[BuiltSelf, _BuildReads | None]] = {}
        #: This version's build for the methods whose records share an old build's print, by that
        #: print's identity and the ``create_graph`` fact (see ``_current_build``).
        self._builds: dict[tuple[int, bool], tuple[Print, BuiltSelf]] = {}
        self._successors: dict[int, tuple[Region, LineMap] | None] = {}  # per old region, this version
        self._compared: dict[tuple[int, int], tuple[Print, Print, bool]] = {}  # prints compared, this version

    # -- one version --------------------------------------------------------------------
    def begin_rules(self, rules_key: tuple[object, ...]) -> None:
        """The enabled rules (their hooks make the reports): another set forgets every unit."""
        if rules_key != self.rules_key:
            self.entries.clear()
            self.calls.clear()
            self.rules_key = rules_key

    def begin(self, parsed: ParsedFile) -> None:
        """Prepare for analyzing ``parsed``; forget what cannot be valid any more."""
        self.version += 1
        self.replayed = self.ran = self.calls_replayed = self.calls_ran = self.selves_matched = 0
        self._prints = {}
        self._splits = {}
        self._built_reads = {}
        self._builds = {}
        self._successors = {}
        self._compared = {}
        self.regions.update(parsed.blocks, parsed.index.parents, parsed.tree, self.version)
        self._statement_blocks = [
            block for block in parsed.blocks if any(not isinstance(stmt, _DEFINITIONS) for stmt in block.statements)
        ]
        definitions_key = (tuple(_definitions_key(block) for block in parsed.blocks), _rebound_key(parsed),
                           parsed.index.declared_global, _attribute_writes_key(parsed.blocks))
        if definitions_key != self._definitions_key:
            self._definitions_key = definitions_key
            self.definitions += 1
        for key, entry in list(self.entries.items()):
            if key != _MODULE and entry.reads[0][2].seen != self.version:
                del self.entries[key]  # its function was edited or removed
        for site, calls in list(self.calls.items()):
            calls[:] = [call for call in calls if all(region.seen == self.version for _, _, region in call.reads)]
            if not calls:
                del self.calls[site]

    def read_definitions(self, interp: EngineParts) -> None:
        """Build the definitions table the functions analyzed alone start from, noting the code
        it read (``name = SomeClass.method`` reads the class): that code is part of the table."""
        run = interp.run_state
        saved = run.touched
        touched: dict[int, ast.AST] = {}
        run.touched = touched
        try:
            interp.module_names()
        finally:
            run.touched = saved
        regions = [self.regions.region_of(node) for node in touched.values()]
        complete = None not in regions
        found = sorted({id(region): region for region in regions if region is not None}.values(),
                       key=lambda r: (r.start, r.key))
        if not complete or self._definition_reads is None or not _same_objects(found, self._definition_reads):
            self._definition_reads = found if complete else None
            self.definition_reads += 1

    def _key(self, unit: ast.AST) -> UnitKey | None:
        if isinstance(unit, ast.Module):
            return _MODULE
        region = self.regions.region_of(unit)
        return region.locate(unit) if region is not None and isinstance(unit, ast.stmt) else None

    def run(self, engine: EngineParts, unit: ast.AST, run: Callable[[], None],
            current_self: Callable[[], object] | None = None) -> None:
        """Replay ``unit`` if nothing it read changed, else run it and record it.
        ``current_self``: builds (or finds) this version's ``self`` the unit starts from, and
        does what building it does to the run (a method analyzed alone)."""
        interp = engine
        key = self._key(unit)
        entry = self.entries.get(key) if key is not None else None
        if entry is not None and self._valid(entry, interp):
            if all(region.seen == self.version for _, _, region in entry.self_reads) and \
                    self._reads_valid(entry.reads + entry.self_reads):
                if self._replay(interp, entry, entry.reads + entry.self_reads,
                                [*entry.inlined, *entry.self_inlined], None):
                    return
            elif current_self is not None and self._replay_with_new_self(interp, entry, current_self):
                return
        self._record(interp, unit, key, run)

    def _replay(self, interp: EngineParts, entry: UnitEntry, reads: list[Read],
                inlined_located: list[tuple[Region, int, int]], moved: Moved | None,
                log: list[ReportArgs | LogMark] | None = None) -> bool:
        """Report what ``entry`` recorded at this version's lines (``moved``: how regions that
        changed moved; ``log``: its reports already moved there); ``False`` (nothing done) when
        that cannot be."""
        expanded: tuple[list[ReportArgs], set[int]] | None
        try:
            if log is None:
                expanded = self._expand(entry.reports, reads, interp, moved)
            else:
                expanded = self._expand(log, reads, interp, moved, move=False)
            inlined = [self._current_function(located) for located in inlined_located]
        except Unmappable:
            expanded = None
        if expanded is None:
            return False
        reports, nested_inlined = expanded
        for rule, span, message, severity, related, fixes in reports:
            interp.reporter.report(rule, span, message, severity=severity, related=related, fixes=fixes)
        interp.inlined.update(id(node) for node in inlined)
        interp.inlined.update(nested_inlined)
        interp.run_state.create_graph_seen = entry.create_graph_out
        self.replayed += 1
        return True

    def _replay_with_new_self(self, interp: EngineParts, entry: UnitEntry,
                              current_self: Callable[[], object]) -> bool:
        """The unit's own code is unchanged, the code its ``self`` was built from is not: build
        this version's ``self`` and replay the unit if it prints the same as the recorded one
        (then the entry is written again as if recorded now)."""
        if entry.self_print is None:
            return False
        for _, _, region in entry.self_reads:
            if region.seen != self.version and self._successor(region) is None:
                return False  # code the build read is gone, or is not one method that moved
        if not self._reads_valid(entry.reads + entry.self_reads, self._moved):
            return False
        built = self._current_build(interp, entry, current_self)
        if built is None:
            return False
        found, base, absent = self._prints_for(interp, built, entry.self_keys, entry.self_kinds)
        if found is None or not self._same_built(entry, found, base, absent):
            return False
        reads = entry.reads + entry.self_reads
        try:
            log = [item if isinstance(item, Nested) or not isinstance(item, tuple)
                   else self._moved_report(item, reads, self._moved) for item in entry.reports]
        except Unmappable:
            return False
        located = _once_per_build(self._built_reads, built, lambda: self._build_reads(built))
        self_reads, self_inlined = located if located is not None else (None, None)
        if self_reads is None or self_inlined is None:
            return False
        if not self._replay(interp, entry, reads, entry.inlined, self._moved, log):
            return False
        self.selves_matched += 1
        entry.reports = log
        entry.reads = [(region.start, region.end, region) for _, _, region in entry.reads]
        entry.self_reads = [(region.start, region.end, region) for region in self_reads]
        entry.self_inlined = self_inlined
        entry.self_print = found
        entry.self_base = base
        entry.self_absent = absent
        return True

    def _build_reads(self, built: BuiltSelf) -> _BuildReads:
        """The regions ``built`` read, and the functions it inlined located (once per build)."""
        return self._regions_read(built.touched), self._located(built.touched, built.inlined)

    def _current_build(self, interp: EngineParts, entry: UnitEntry,
                       current_self: Callable[[], object]) -> BuiltSelf | None:
        """This version's ``self`` for ``entry`` (``current_self`` builds or finds it, and does
        what building it does to the run, as a run does).

        The methods whose records started from one build (one print object: :meth:`_print_of`,
        :meth:`_split_of`) are of one class with one name for ``self``: with the same
        ``create_graph`` fact they get one build now too, and asking for it again would only redo
        what it did to the run (mark the functions it inlined, note its ``zero_grad``
        statements, end the path when it never returns: the same each time, and the replayed
        unit's record sets the rest). So it is asked once per such group and version: finding
        it cost each of DeepSpeed-sized class's 450 methods a copy of the module's names and of
        the built state."""
        run = interp.run_state
        create_graph = run.create_graph_seen
        old = entry.self_base if entry.self_keys is not None else entry.self_print
        key = (id(old), create_graph)
        known = self._builds.get(key)
        if known is not None and known[0] is old:
            return known[1]
        try:
            built = current_self()
        finally:
            run.create_graph_seen = create_graph  # the unit's own start (the build's is in its print)
        if not isinstance(built, BuiltSelf):
            return None
        if old is not None:
            self._builds[key] = (old, built)
        return built

    def _prints_for(self, interp: EngineParts, built: BuiltSelf, keys: frozenset[str] | None,
                    kinds: frozenset[type] = frozenset()) -> tuple[Print | None, Print | None, tuple[str, ...]]:
        """The print of ``built`` for a unit that read the attributes ``keys`` of its instance
        (``None``: all of them) and asked which hold a value of each class of ``kinds``, the
        base that goes with it, and the names read that the instance does not hold."""
        if keys is None:
            return self._print_of(interp, built), None, ()
        split = self._split_of(interp, built)
        if split is None or split.base is None:
            return None, None, ()
        try:
            part = split.part(keys, kinds)
        except Exception:  # noqa: BLE001 - a value the walk cannot print: no print, the unit runs
            return None, None, ()
        return (None, None, ()) if part is None else (part[0], split.base, part[1])

    def _same_built(self, entry: UnitEntry, found: Print, base: Print | None, absent: tuple[str, ...]) -> bool:
        if entry.self_print is None:
            return False
        if entry.self_keys is None:
            return self._same_prints(entry.self_print, found)
        if entry.self_base is None or base is None or entry.self_absent != absent:
            return False
        return self._same_prints(entry.self_base, base) and self._same_prints(entry.self_print, found)

    def _same_prints(self, old: Print, new: Print) -> bool:
        """``same_prints``, once per pair of prints in a version (the methods of a class share them)."""
        key = (id(old), id(new))
        known = self._compared.get(key)
        if known is not None and known[0] is old and known[1] is new:
            return known[2]
        same = same_prints(old, new, self._successor)
        self._compared[key] = (old, new, same)
        return same

    def _moved(self, region: Region) -> tuple[Region, LineMap | None] | None:
        if region.seen == self.version:
            return region, None
        return self._successor(region)

    def _successor(self, region: Region) -> tuple[Region, LineMap] | None:
        """The region an edited method's old region became: this version's only method of its
        class and name, with its lines matched to the old ones."""
        key = id(region)
        if key in self._successors:
            return self._successors[key]
        found: tuple[Region, LineMap] | None = None
        name = getattr(region.node, "name", None)
        if region.key[0] == "method" and region.mappable and isinstance(name, str):
            current = self.regions.methods_named(str(region.key[1]), name)
            if len(current) == 1 and current[0] is not region:
                found = current[0], LineMap(region, current[0])
        self._successors[key] = found
        return found

    def _print_of(self, interp: EngineParts, built: BuiltSelf) -> Print | None:
        """The print of a build of this version (made once per build)."""
        return _once_per_build(self._prints, built,
                               lambda: print_of(built, self._locator(), interp.run_state.graph.nodes))

    def _split_of(self, interp: EngineParts, built: BuiltSelf) -> SplitPrints | None:
        """The prints by attributes read of a build of this version (its base made once per build)."""
        return _once_per_build(self._splits, built,
                               lambda: SplitPrints(built, self._locator(), interp.run_state.graph.nodes))

    def _locator(self) -> Callable[[ast.AST], Place | None]:
        """Where a node of this version is (:data:`~graphlife.analysis.self_print.Place`)."""
        places: dict[int, Place | None] = {}

        def locate(node: ast.AST) -> Place | None:
            key = id(node)
            if key not in places:
                region = self.regions.region_of(node)
                line = getattr(node, "lineno", None)
                if region is None or region.seen != self.version or not isinstance(line, int):
                    places[key] = None
                else:
                    end = getattr(node, "end_lineno", None) or line
                    places[key] = (region, line - region.start, end - region.start,
                                   getattr(node, "col_offset", -1), getattr(node, "end_col_offset", None) or -1)
            return places[key]

        return locate

    def _regions_read(self, touched: dict[int, ast.AST]) -> list[Region] | None:
        """The regions of the code noted as read, by first line (``None``: some outside them)."""
        read: dict[int, Region] = {}
        for node in touched.values():
            region = self.regions.region_of(node)
            if region is None:
                return None
            read[id(region)] = region
        return sorted(read.values(), key=lambda region: region.start)

    def _located(self, touched: dict[int, ast.AST], inlined: set[int]) -> list[tuple[Region, int, int]] | None:
        """The functions inlined, located in their regions (``None``: one cannot be)."""
        located = []
        for node in touched.values():
            if id(node) in inlined and isinstance(node, ast.stmt):
                region = self.regions.region_of(node)
                if region is None:
                    return None
                located.append(region.locate(node))
        return located if len(located) == len(inlined) else None

    # -- recording ------------------------------------------------------------------------
    def _record(self, interp: EngineParts, unit: ast.AST, key: UnitKey | None, run: Callable[[], None]) -> None:
        self.ran += 1
        state = interp.run_state
        create_graph_in = state.create_graph_seen
        reports: list[ReportArgs | LogMark] = []
        touched: dict[int, ast.AST] = {}
        inlined: set[int] = set()
        built: list[object] = []
        saved = state.touched, state.unit_inlined, interp.reporter.log, state.self_built
        state.touched, state.unit_inlined, interp.reporter.log, state.self_built = touched, inlined, reports, built
        try:
            run()
        finally:
            state.touched, state.unit_inlined, interp.reporter.log, state.self_built = saved
        builds = [item for item in built if isinstance(item, BuiltSelf)]
        self_reads = [item for item in built if isinstance(item, Reads)]
        if saved[0] is not None:  # a unit inside another's record (never so today): reads are that one's
            for build in builds:
                saved[0].update(build.touched)
        if key is None:
            return
        self_touched: dict[int, ast.AST] = {}
        self_inlined_ids: set[int] = set()
        for build in builds:
            self_touched.update(build.touched)
            self_inlined_ids |= build.inlined
        self_regions = self._regions_read(self_touched)
        self_inlined = self._located(self_touched, self_inlined_ids)
        if self_regions is None or self_inlined is None:
            return
        self_keys = self_reads[0].keys() if len(builds) == 1 and len(self_reads) == 1 else None
        self_kinds = self_reads[0].classes() if self_keys is not None else frozenset()
        self_print, self_base, self_absent = (self._prints_for(interp, builds[0], self_keys, self_kinds)
                                              if len(builds) == 1 else (None, None, ()))
        read: dict[int, Region] = {}
        own = None
        if isinstance(key, str):
            for block in self._statement_blocks:
                for block_region in block.regions or ():  # the region map gave every block its regions
                    read[id(block_region)] = block_region
        else:
            own = key[0]
            read[id(own)] = own
        located = []
        for node in touched.values():
            region = self.regions.region_of(node)
            if region is None:
                return  # read code outside the known regions: do not cache this unit
            read[id(region)] = region
            if id(node) in inlined and isinstance(node, ast.stmt):
                located.append(region.locate(node))
        if len(located) != len(inlined):
            return
        ordered = sorted(read.values(), key=lambda region: region.start)
        if own is not None:
            ordered.remove(own)
            ordered.insert(0, own)  # the unit's own region first: it keeps the entry alive
        self.entries[key] = UnitEntry(
            statement_blocks=list(self._statement_blocks) if key == _MODULE else None,
            definitions=self.definitions,
            definition_reads=None if key == _MODULE else self.definition_reads,
            create_graph_in=create_graph_in,
            create_graph_out=state.create_graph_seen,
            reports=reports,
            inlined=located,
            reads=[(region.start, region.end, region) for region in ordered],
            self_reads=[(region.start, region.end, region) for region in self_regions],
            self_inlined=self_inlined,
            self_print=self_print,
            self_keys=self_keys,
            self_base=self_base,
            self_absent=self_absent,
            self_kinds=self_kinds,
        )

    # -- replaying ------------------------------------------------------------------------
    def _valid(self, entry: UnitEntry, interp: EngineParts) -> bool:
        if entry.definitions != self.definitions or entry.create_graph_in != interp.run_state.create_graph_seen:
            return False
        if entry.definition_reads is not None and entry.definition_reads != self.definition_reads:
            return False
        if entry.statement_blocks is not None and not _same_objects(entry.statement_blocks, self._statement_blocks):
            return False  # the module body gained, lost or changed a statement
        return self._reads_valid(entry.reads)

    def _reads_valid(self, reads: list[Read], moved: Moved | None = None) -> bool:
        """Every region read is still here, unchanged (or, with ``moved``, where it went), and in
        the same order."""
        previous_old = previous_new = 0
        seen: set[int] = set()
        for old_start, _, region in sorted(reads, key=lambda read: read[0]):
            if id(region) in seen:
                continue  # read by the unit and by its `self`'s build
            seen.add(id(region))
            now = region
            if region.seen != self.version:
                where = moved(region) if moved is not None else None
                if where is None:
                    return False
                now = where[0]
            if not region.mappable:
                continue
            if old_start <= previous_old or now.start <= previous_new:
                return False  # code changed order: comparisons of lines across it may differ
            previous_old, previous_new = old_start, now.start
        return True

    # -- calls run apart ------------------------------------------------------------------
    def replay_call(self, engine: EngineParts, func: FunctionRef, args: list[Value], kwargs: dict[str, Value],
                    state: State, site: ast.AST) -> Value | Reopen | None:
        """The result of a call run apart, replayed when it was made from the same code with the
        same values and nothing it read changed; :data:`~graphlife.analysis.call_records.OPEN`
        when that run had to be undone; ``None`` to run it."""
        interp = engine
        for entry in self.calls.get(id(site), ()):
            expanded = self._replayable(entry, interp, func, args, kwargs, state, site)
            if expanded is not None:
                self.calls_replayed += 1
                return isolation.replay(interp, entry, *expanded)  # or OPEN: inline it
        self.calls_ran += 1
        return None

    def _replayable(self, entry: CallEntry, interp: EngineParts, func: FunctionRef, args: list[Value],
                    kwargs: dict[str, Value], state: State, site: ast.AST) -> tuple[list[ReportArgs], set[int]] | None:
        record = entry.record
        if entry.site is not site or entry.callee is not func.node or entry.definitions != self.definitions:
            return None
        if not _same_context(entry.context, _context(interp)):
            return None
        if entry.flags != _flags(state) or record.create_graph_in != interp.run_state.create_graph_seen:
            return None
        writes = interp.run_state.no_grad_writes
        if entry.writes_in.keys() != writes.keys() or entry.args != args or entry.kwargs != kwargs:
            return None
        if not self._code_unchanged(entry, interp):
            return None
        if entry.env != _env_key(state.env, interp.local_names(func.node)):
            return None
        try:
            return self._expand(record.reports, entry.reads, interp)
        except Unmappable:
            return None

    def _code_unchanged(self, entry: CallEntry, interp: EngineParts) -> bool:
        """The code a recorded call read (not counting the calls it ran apart) is still the same."""
        if entry.definitions != self.definitions or not self._reads_valid(entry.reads):
            return False
        # The recorded nodes are kept alive by the entry, so an id in this version's tree is theirs.
        parents = interp.parents
        if any(id(node) not in parents for node in entry.record.touched.values()):
            return False  # a method of a class parsed again: another object, maybe other code
        return all(id(stmt) in parents for stmt in entry.record.writes_added.values())

    def _expand(self, log: list[ReportArgs | LogMark], reads: list[Read],
                interp: EngineParts, moved: Moved | None = None,
                move: bool = True) -> tuple[list[ReportArgs], set[int]] | None:
        """The reports of a recorded log at their current lines (``move``: they are not yet),
        with those of the calls it ran apart (replayed, or run again alone when their own code
        changed), and the functions those calls inlined; ``None`` when a call run again hands
        back something else (the enclosing unit or call must run). Raises :class:`Unmappable`."""
        reports: list[ReportArgs] = []
        inlined: set[int] = set()
        for item in log:
            if isinstance(item, Nested):
                nested = self._nested(item, interp)
                if nested is None:
                    return None
                reports.extend(nested[0])
                inlined.update(nested[1])
            elif isinstance(item, tuple):
                reports.append(self._moved_report(item, reads, moved) if move else item)
        return reports, inlined

    def _nested(self, marker: Nested, interp: EngineParts) -> tuple[list[ReportArgs], set[int]] | None:
        entry = marker.entry
        if not isinstance(entry, CallEntry):
            return None  # only this cache makes the marks it reads
        if self._code_unchanged(entry, interp):
            expanded: tuple[list[ReportArgs], set[int]] | None
            try:
                expanded = self._expand(entry.record.reports, entry.reads, interp)
            except Unmappable:
                expanded = None
            if expanded is not None:
                self.calls_replayed += 1
                return expanded[0], expanded[1] | entry.record.inlined
        node = self._current_callee(entry, interp)
        if node is None or not self._context_current(entry, interp):
            return None
        try:
            new = self._rerun_alone(interp, entry, node)  # counted as a call run
        except Timeout:
            raise
        except Exception:  # noqa: BLE001 - an engine bug: the caller runs, as in a full check
            return None
        if new is None or not same_outcome(entry.record, new.record):
            return None
        marker.entry = new
        expanded = self._expand(new.record.reports, new.reads, interp)
        return (expanded[0], expanded[1] | new.record.inlined) if expanded is not None else None

    def _rerun_alone(self, interp: EngineParts, entry: CallEntry,
                     node: ast.FunctionDef | ast.AsyncFunctionDef) -> CallEntry | None:
        """Run a recorded call again with the values and in the context it was recorded with (its
        caller is replayed, so both are the same), ``node`` being the callee's code now. Its
        reports are kept for the caller's replay, not reported. The new entry, or ``None``."""
        if isinstance(node, ast.AsyncFunctionDef) or interp.is_generator(node):
            return None  # no longer a call that can run apart
        table = interp.definitions_table()
        if not entry.globals_names <= table.keys():
            return None
        statements, _, call_stack = entry.context
        grad_enabled, inference_mode, grad_assumed = entry.flags
        run = RunState(
            stmt_stack=list(statements), frames=list(entry.frames), call_stack=list(call_stack),
            current_unit=entry.unit,
            globals={name: table[name] for name in entry.globals_names},  # the definitions bound before the call
            create_graph_seen=entry.record.create_graph_in, no_grad_writes=dict(entry.writes_in),
        )
        state = State(env=dict(entry.env_values), grad_enabled=grad_enabled, inference_mode=inference_mode,
                      grad_assumed=grad_assumed)
        reporter, interp.reporter = interp.reporter, Reporter()  # what it reports is for the caller's replay
        try:
            with interp.swapped_run_state(run):
                result = isolation.call_isolated(interp, FunctionRef(node=node, key=id(node)), list(entry.args),
                                                 dict(entry.kwargs), state, entry.site)
        finally:
            interp.reporter = reporter
        if result is None:
            return None
        return next((new for new in self.calls.get(id(entry.site), ()) if new.callee is node), None)

    @staticmethod
    def _current_callee(entry: CallEntry, interp: EngineParts) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The callee's code now: the same node, or the file's only top-level function of its name."""
        if id(entry.callee) in interp.parents:
            return entry.callee
        if not entry.callee_top_level:
            return None
        name = entry.callee.name
        found = [stmt for stmt in interp.tree.body
                 if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name]
        return found[0] if len(found) == 1 and not interp.rebound.get(name) else None

    @staticmethod
    def _context_current(entry: CallEntry, interp: EngineParts) -> bool:
        """Everything a run alone would start from is this version's: the caller's statements and
        calls, and no function or class of an older version among the values it is given."""
        parents = interp.parents
        statements, calls, _ = entry.context
        if any(id(node) not in parents for node in (entry.site, *statements, *calls) if node is not None):
            return False
        values = [*entry.args, *entry.kwargs.values(), *entry.env_values.values()]
        return (all(_refs_current(value, parents) for value in values)
                and all(id(stmt) in parents for stmt in entry.writes_in.values()))

    def record_call(self, engine: EngineParts, func: FunctionRef, args: list[Value], kwargs: dict[str, Value],
                    state: State, site: ast.AST, record: CallRecord) -> RecordedCall | None:
        """Keep what a call run apart did, located in the regions it read and the caller's."""
        interp = engine
        read: dict[int, Region] = {}
        for node in (site, *interp.run_state.stmt_stack, *record.touched.values()):
            region = self.regions.region_of(node)
            if region is None:
                return None  # code outside the known regions: do not keep it
            read[id(region)] = region
        entry = CallEntry(
            site=site, callee=func.node, callee_top_level=interp.parents.get(id(func.node)) is interp.tree,
            context=_context(interp), frames=list(interp.run_state.frames), unit=interp.run_state.current_unit,
            args=list(args), kwargs=dict(kwargs), env=_env_key(state.env, interp.local_names(func.node)),
            env_values=dict(state.env), globals_names=self._globals_names(interp), flags=_flags(state),
            definitions=self.definitions, writes_in=dict(record.writes_in), record=record,
            reads=[(region.start, region.end, region) for region in sorted(read.values(), key=lambda r: r.start)],
        )
        calls = [call for call in self.calls.get(id(site), ()) if call.site is site]
        self.calls[id(site)] = [entry, *calls][:_CALLS_PER_SITE]
        return entry

    def _globals_names(self, interp: EngineParts) -> frozenset[str]:
        """The module's definitions bound so far, one set shared by the calls that saw the same
        (the table only grows while the module body runs: its size names its state)."""
        table = interp.run_state.globals
        shared = self._shared_globals_names
        if shared is None or shared[0] is not table or shared[1] != len(table):
            shared = self._shared_globals_names = (table, len(table), frozenset(table))
        return shared[2]

    @staticmethod
    def _current_function(located: tuple[Region, int, int]) -> ast.AST:
        region, line, column = located
        node = region.functions().get((line, column))
        if node is None:
            raise Unmappable(line)
        return node

    def _moved_report(self, report: ReportArgs, reads: list[Read], moved: Moved | None = None) -> ReportArgs:
        rule, span, message, severity, related, fixes = report
        if moved is None and all(region.start == old_start for old_start, _, region in reads):
            return report
        move = _LineMover([read for read in reads if read[2].mappable], moved)
        return (
            rule,
            move.span(span),
            move.value(message),  # a Message's Line arguments; plain text names no line
            severity,
            tuple(move.value(item) for item in related),
            tuple(move.value(fix) for fix in fixes),
        )


class _LineMover:
    """Maps a line of the recorded version to the current one, through the blocks read."""

    def __init__(self, reads: list[Read], moved: Moved | None = None) -> None:
        self.reads = reads
        self.moved = moved

    def line(self, line: int) -> int:
        for old_start, old_end, region in self.reads:
            if old_start <= line <= old_end:
                if self.moved is None:
                    return line + region.start - old_start
                where = self.moved(region)
                if where is None:
                    raise Unmappable(line)
                now, lines = where
                offset = line - old_start if lines is None else lines.line(line - old_start)
                if offset is None:
                    raise Unmappable(line)  # on a line the edit changed
                return now.start + offset
        raise Unmappable(line)

    def span(self, span: Span) -> Span:
        if span.path is not None:
            return span  # in another file of the project, which this edit did not move
        return Span(self.line(span.line), span.column, self.line(span.end_line), span.end_column)

    def value(self, value: Any) -> Any:
        if isinstance(value, Span):
            return self.span(value)
        if isinstance(value, Line):
            return value if value.path is not None else Line(self.line(value.number))
        if isinstance(value, Message):  # a str, but its Line arguments move
            return value.with_args({key: self.value(item) for key, item in value.args.items()})
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(item) for item in value)
        if is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: self.value(getattr(value, f.name)) for f in fields(value)}
            return replace(value, **changes)
        return value


def _context(interp: EngineParts) -> CallContext:
    run = interp.run_state
    return tuple(run.stmt_stack), tuple(frame.call for frame in run.frames), tuple(run.call_stack)


def _same_context(first: CallContext, second: CallContext) -> bool:
    statements, calls, keys = first
    return (keys == second[2] and _same_objects(list(statements), list(second[0]))
            and _same_objects(list(calls), list(second[1])))


def _refs_current(value: Value, parents: dict[int, ast.AST]) -> bool:
    """Does ``value`` refer only to functions and classes of this version of the file?"""
    if isinstance(value, (FunctionRef, ClassRef)):
        return id(value.node) in parents
    if isinstance(value, TupleVal):
        return all(_refs_current(item, parents) for item in value.items)
    return True


def _flags(state: State) -> GradFlags:
    return state.grad_enabled, state.inference_mode, state.grad_assumed


def _env_key(env: Mapping[str, Value], local: frozenset[str]) -> dict[str, object]:
    """The caller's names a callee sees, with the file's functions and classes by name: their
    code is in the regions a call reads when it runs them, and an edit elsewhere makes new
    nodes (and new references) for the functions it parsed again."""
    key: dict[str, object] = {}
    for name, value in env.items():
        if name in local:
            continue
        if isinstance(value, FunctionRef) and value.bound_self is None:
            key[name] = ("function", value.node.name, type(value.node).__name__)
        elif isinstance(value, ClassRef):
            key[name] = ("class", value.node.name, value.is_module, value.is_autograd_function)
        else:
            key[name] = value
    return key


def _same_objects(first: Sequence[object], second: Sequence[object]) -> bool:
    """The same objects in the same order (ids could be reused by new objects; objects cannot)."""
    return len(first) == len(second) and all(a is b for a, b in zip(first, second))


def _definitions_key(block: Block) -> tuple[object, ...]:
    """What a block adds to the definitions table (cached on the block: it never changes)."""
    key: tuple[object, ...] | None = getattr(block, "definitions_key", None)
    if key is None:
        parts: list[object] = []
        for stmt in block.statements:
            names_only = isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) or names_only:
                parts.append(ast.dump(stmt))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                parts.append(("def", stmt.name))
            elif isinstance(stmt, ast.ClassDef):
                bases = ast.Tuple(elts=stmt.bases + [k.value for k in stmt.keywords], ctx=ast.Load())
                parts.append(("class", stmt.name, ast.dump(bases)))
        key = tuple(parts)
        setattr(block, "definitions_key", key)  # noqa: B010 - a cache kept on the block
    return key


def _attribute_writes_key(blocks: Sequence[Block]) -> tuple[object, ...]:
    """The attribute names the file writes outside ``__init__`` (what a method analyzed alone
    weakens in its ``self``: :mod:`graphlife.analysis.unseen_writes`), cached on each block."""
    names: set[str] = set()
    contents: set[str] = set()
    any_name = False
    for block in blocks:
        found: tuple[frozenset[str], frozenset[str], bool] | None = getattr(block, "attribute_writes", None)
        if found is None:
            found = attribute_write_names(list(block.statements))
            setattr(block, "attribute_writes", found)  # noqa: B010 - a cache kept on the block
        names |= found[0]
        contents |= found[1]
        any_name = any_name or found[2]
    return frozenset(names), frozenset(contents), any_name


def _rebound_key(parsed: ParsedFile) -> frozenset[str]:
    counts = parsed.index.binding_counts
    names: set[str] = set()
    for stmt in parsed.tree.body:
        if isinstance(stmt, _DEFINITIONS):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in stmt.names)
    return frozenset(name for name in names if counts.get(name, 0) > 1)


_Made = TypeVar("_Made")


def _once_per_build(kept: dict[int, tuple[BuiltSelf, _Made | None]], built: BuiltSelf,
                    make: Callable[[], _Made | None]) -> _Made | None:
    """What ``make`` gives for ``built``, made once per build and kept in ``kept`` (by the build's
    identity, checked: an id is reused once its build is gone); ``None`` when a value the walk
    cannot print made it fail (then the methods run)."""
    known = kept.get(id(built))
    if known is not None and known[0] is built:
        return known[1]
    found: _Made | None
    try:
        found = make()
    except Exception:  # noqa: BLE001 - a value the walk cannot print: no print, the methods run
        found = None
    kept[id(built)] = (built, found)
    return found
