"""Calls that take no graph in and give none back, analyzed apart from their caller.

Why: a script's module body usually reaches every function of the file
(``if __name__ == "__main__": main()``, or one ``main_k()`` per experiment). The
engine inlines them all into one unit, so after an edit anywhere the language
server had to run the whole call tree again. A call that can neither see nor
hand back anything with a graph is independent of everything around it: run
apart, its findings are a function of its code and of the plain values it was
given, and the unit cache (:mod:`graphlife.analysis.unit_cache`) replays them
while that code and those values are unchanged. An edit in one experiment then
costs that experiment.

A call is run apart when, where it is made:

- no loop is running, in the unit or in the inlined calls it is made from (what a
  loop carries from one iteration into the call is state);
- every argument, and every name of the caller the callee can see, holds no
  tensor, module, optimizer or container: numbers, strings, ``None``, torch
  names, functions and classes of the file, values the engine does not know;
- the callee is a plain function (not a generator, not bound to an object);
- its result is discarded (``main()``, ``run_experiment(3)`` as a statement), or
  the call is made from the unit's own code (not from inside another inlined call).

It runs on a fresh state, a fresh graph store and fresh rule data. When its result
is discarded, or is a plain value (``None``, a number, a string, a tuple of them),
or it never returns, nothing it made is reachable afterwards: the rules decide
what they held pending for it right there (a ``unit_end`` event on the state after
the call, with the caller's names), and the caller goes on with its own state and
the plain value (unknown when discarded). Otherwise (``model = build()``) the run
apart is undone and the call is inlined as usual. Only calls from the unit's own
code are tried that way, so the wasted run stays rare, and the language server's
cache remembers it (the call is then inlined at once while its code is unchanged).
Whether a call is run apart depends only on the call and its values, never on what
happened to other calls: a replay gives what a run gives.

The call runs in a run state of its own (:mod:`graphlife.analysis.run_state`): where
the caller is, the names it sees and the facts it carries in, with its own graph store,
ids and rule data. What crosses back is written out when it returns: whether it never
returns, whether a ``backward(create_graph=True)`` ran, and the statements on the way to
an in-place write made with gradients off (the run state's ``no_grad_writes``, which
GL104's fix reads: the callee sees the caller's, and what it adds stays). When the run
apart is undone, the caller's run state was never touched; only what belongs to the
whole file (findings, the functions inlined, the count of backwards) is given back.

For the language server, a call run apart is a unit of its own: its caller's record keeps
the call (a :class:`~graphlife.analysis.call_records.Nested` mark), and after an edit in
the callee only, the cache runs it again alone and replays the caller when the call hands
back the same (:func:`~graphlife.analysis.call_records.same_outcome`); see
:mod:`graphlife.analysis.unit_cache`.
"""

from __future__ import annotations

import ast

from graphlife.analysis.call_records import OPEN, CallRecord, Nested, RecordedCall, Reopen, flatten
from graphlife.analysis.engine_api import EngineParts
from graphlife.analysis.events import UnitEndEvent
from graphlife.analysis.modules import is_namespace_key
from graphlife.analysis.rule_api import LogMark, ReportArgs
from graphlife.analysis.run_state import RunState
from graphlife.analysis.state import State
from graphlife.analysis.values import (
    UNKNOWN,
    ClassRef,
    ContextVal,
    FunctionRef,
    HeapRef,
    ImportedName,
    NoneValue,
    Number,
    QualName,
    TupleVal,
    Unknown,
    Value,
)

#: Tests turn this off to compare with everything inlined (the findings must be the same).
ENABLED = True


def holds_no_graph(value: Value) -> bool:
    """Can nothing with a graph (tensor, module, container) be reached from ``value``?"""
    if isinstance(value, (Unknown, NoneValue, Number, QualName, ContextVal, ClassRef, ImportedName)):
        return True
    if isinstance(value, TupleVal):
        return all(holds_no_graph(item) for item in value.items)
    if isinstance(value, FunctionRef):
        return value.bound_self is None and all(holds_no_graph(held) for _, held in value.closure)
    return False


def plain_result(value: Value) -> bool:
    """A returned value that refers to nothing the callee made, nor to code: safe to hand back
    from a run apart and to replay later. An unknown value is not: the engine may have lost a
    graph in it (the rules then follow it by name into the caller)."""
    if isinstance(value, (NoneValue, Number, QualName, ContextVal)):
        return True
    if isinstance(value, TupleVal):
        return all(plain_result(item) for item in value.items)
    return False


def discarded(interp: EngineParts, site: ast.AST) -> bool:
    """Is the call a statement of its own, its result going nowhere (``main()``)?"""
    parent = interp.parents.get(id(site))
    return isinstance(parent, ast.Expr) and parent.value is site


def may_isolate(interp: EngineParts, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State,
                site: ast.AST) -> bool:
    """Is this call independent of everything around it (see the module's docstring)?"""
    run = interp.run_state
    if not run.emitting:
        return False  # a quiet evaluation (the table of module names): no rule sees it, nothing to keep
    if run.in_loop() or run.checkpoints:
        return False  # a checkpointed function's calls send events about its region
    if run.frames and not discarded(interp, site):
        return False
    if func.bound_self is not None or interp.is_generator(func.node):
        return False
    if not all(holds_no_graph(value) for value in args) or not all(holds_no_graph(value) for value in kwargs.values()):
        return False
    local = interp.local_names(func.node)
    return all(
        _namespace_holds_no_graph(value, state) if is_namespace_key(name) else holds_no_graph(value)
        for name, value in state.env.items() if name not in local
    )


def _namespace_holds_no_graph(value: Value, state: State) -> bool:
    """An imported module's namespace (what its body computed: the callee may read it) holds
    nothing with a graph: numbers, names, functions and classes only."""
    if not isinstance(value, HeapRef) or value.oid not in state.heap:
        return True
    return all(holds_no_graph(item) for item in state.heap[value.oid].attrs.values())


def call_isolated(interp: EngineParts, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State,
                  site: ast.AST) -> Value | None:
    """The call's result, run apart (or replayed by the unit cache); ``None`` when the callee
    returned something with a graph: the caller then inlines it."""
    cache = interp.unit_cache
    unused = discarded(interp, site)
    if cache is not None:
        replayed = cache.replay_call(interp, func, args, kwargs, state, site)
        if replayed is OPEN:
            return None  # the run apart it stands for was undone: inline the call
        if replayed is not None:
            return replayed
    caller = interp.run_state
    undo = None if unused else _Undo(interp)
    call_log: list[ReportArgs | LogMark] = []
    apart = State(env=dict(state.env), grad_enabled=state.grad_enabled, inference_mode=state.inference_mode,
                  grad_assumed=state.grad_assumed)
    log, interp.reporter.log = interp.reporter.log, call_log
    run = _run_apart(caller, func.node)
    result: Value = UNKNOWN
    kept = False
    try:
        with interp.swapped_run_state(run):
            result = interp.inline_call(func, args, kwargs, apart, site)
            if unused or plain_result(result) or (result is UNKNOWN and run.path_ends):
                # Nothing of the callee's world leaks; a discarded value is unknown (only a grad-mode
                # switch returned to a bare statement is looked at), so that a replay outlives a new one.
                result = result if plain_result(result) and (not unused or isinstance(result, ContextVal)) else UNKNOWN
                # Nothing the callee made is reachable from here on: the rules judge it now.
                interp.emit(UnitEndEvent(stmt=interp.current_stmt(), state=apart, unit=run.current_unit))
                interp.reporter.raised = False
                kept = True
    finally:
        interp.reporter.log = log
        if not kept and undo is not None:
            undo.restore(interp)
    writes_in = dict(caller.no_grad_writes)  # the caller's writes it saw (kept: their ids stay theirs)
    touched = run.touched if run.touched is not None else {}
    if not kept:
        undone = CallRecord(reports=[], touched=touched, inlined=set(), result=OPEN, path_ends=False,
                            create_graph_in=caller.create_graph_seen, create_graph_out=caller.create_graph_seen,
                            writes_in=writes_in, writes_added={})
        if cache is not None:
            cache.record_call(interp, func, args, kwargs, state, site, undone)  # not worth trying again
        return None
    record = CallRecord(
        reports=call_log, touched=touched, inlined=run.unit_inlined if run.unit_inlined is not None else set(),
        result=result, path_ends=run.path_ends, create_graph_in=caller.create_graph_seen,
        create_graph_out=run.create_graph_seen, writes_in=writes_in,
        writes_added={key: stmt for key, stmt in run.no_grad_writes.items() if key not in caller.no_grad_writes},
    )
    entry = cache.record_call(interp, func, args, kwargs, state, site, record) if cache is not None else None
    _carry_out(caller, log, record, entry)
    return result


def _run_apart(caller: RunState, callee: ast.AST) -> RunState:
    """The run state of a call run apart: where the caller is (no loop runs there), what it sees
    and the facts it carries in, with a graph, ids and rule data of its own and the callee's code
    as the first it read."""
    return RunState(
        stmt_stack=list(caller.stmt_stack), frames=list(caller.frames), call_stack=list(caller.call_stack),
        current_unit=caller.current_unit, globals=caller.globals, emitting=caller.emitting,
        create_graph_seen=caller.create_graph_seen, next_id=0, no_grad_writes=dict(caller.no_grad_writes),
        touched={id(callee): callee}, unit_inlined=set(),
    )


def _carry_out(caller: RunState, log: list[ReportArgs | LogMark] | None, record: CallRecord,
               entry: RecordedCall | None) -> None:
    """What the caller keeps of a call run apart: its path end, the ``create_graph`` fact and the
    writes it made under ``no_grad``; for the enclosing recording (a unit, or a call run apart),
    the call itself, whose entry has its reports and the code it read, or without an entry (code
    outside the known regions) its reports and reads, made the enclosing one's."""
    caller.path_ends = record.path_ends
    caller.create_graph_seen = record.create_graph_out
    caller.no_grad_writes.update(record.writes_added)
    if log is not None and entry is not None:
        log.append(Nested(entry))
        return
    reports, touched, inlined = flatten(record)
    if log is not None:
        log.extend(reports)
    if caller.touched is not None:
        caller.touched.update(touched)
    if caller.unit_inlined is not None:
        caller.unit_inlined.update(inlined)


def replay(interp: EngineParts, entry: RecordedCall, reports: list[ReportArgs], inlined: set[int]) -> Value | Reopen:
    """Redo what a recorded call did to the interpreter: its reports (moved to their lines, and
    with those of the calls it ran apart), the functions it inlined, the facts it hands back.
    :data:`~graphlife.analysis.call_records.OPEN` for a call whose run apart had to be undone:
    it is inlined."""
    record = entry.record
    if record.result is OPEN:
        return OPEN
    log, interp.reporter.log = interp.reporter.log, None
    try:
        for rule, span, message, severity, related, fixes in reports:
            interp.reporter.report(rule, span, message, severity=severity, related=related, fixes=fixes)
    finally:
        interp.reporter.log = log
    if log is not None:
        log.append(Nested(entry))  # the enclosing recording keeps the call, not its reports
    interp.reporter.raised = False
    interp.inlined.update(record.inlined)
    interp.inlined.update(inlined)
    run = interp.run_state
    run.create_graph_seen = record.create_graph_out
    run.no_grad_writes.update(record.writes_added)
    run.path_ends = record.path_ends
    return record.result


class _Undo:
    """What a call run apart may change of the file's own facts (not of the caller's run state,
    which it does not touch), kept to be given back when the run apart is undone."""

    def __init__(self, interp: EngineParts) -> None:
        reporter = interp.reporter
        self.findings, self.seen, self.raised = list(reporter.findings), set(reporter._seen), reporter.raised
        self.inlined = set(interp.inlined)
        self.backward_count = interp.backward_count

    def restore(self, interp: EngineParts) -> None:
        """Everything the undone run reported and noted, forgotten."""
        reporter = interp.reporter
        reporter.findings[:] = self.findings
        reporter._seen = self.seen
        reporter.raised = self.raised
        interp.inlined = self.inlined
        interp.backward_count = self.backward_count
