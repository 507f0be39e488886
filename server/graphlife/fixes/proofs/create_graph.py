"""The proof behind GL204's quick fix: ``root.backward(create_graph=True)`` becomes
``torch.autograd.grad(root, inputs, create_graph=True)``.

What the rewrite changes at run time, and only that: the gradients of the leaves the
backward reaches are *returned* instead of being added to their ``.grad``. The fix is
offered only when the engine's events show that no part of the program can tell the
difference. Per evaluation of the backward (loops are unrolled twice, a helper is
analyzed once per call) the events that follow it are kept, and at the end of the
unit they are judged:

1. Replaced reads. The ``.grad`` reads in the statements after the backward in its
   block that run before any other backward, ``step()`` or ``zero_grad`` (the
   *window*) read leaves that the backward reaches on every path and whose ``.grad``
   was empty before it (set to None or zeroed, or a tensor the program created that
   no backward reached yet). Such a read sees exactly the gradient the backward
   computed, so it is replaced by the returned gradient. Receivers are either one
   name bound to a known leaf (``x.grad``) or the variable of a comprehension over a
   list of leaves (``p.grad for p, v in zip(params, vs)``), in which case the list
   itself is differentiated and the comprehension walks the returned gradients.
2. Every other use of the ``.grad`` of a leaf the backward reached -- another read,
   an optimizer ``step()`` over it, ``zero_grad(set_to_none=False)`` that would leave
   zeros in one program and None in the other -- must come after that ``.grad`` was
   reset on every path (``zero_grad()`` or ``.grad = None`` in a statement that runs
   after the backward whenever the backward ran: a later sibling, in straight-line
   code, of the statement that led to it). A leaf never reset is fine at the end of
   the module: nothing reads it any more.
3. Or, when the step *does* need the gradients (an input-gradient penalty trained
   together with the loss), the next backward in the same block, ``penalty.backward()``,
   becomes ``(loss + penalty).backward()``: every leaf then ends with the same
   ``.grad`` as before (``d loss + d penalty``), so nothing after it can tell. Offered
   when nothing but the replaced reads happens in between, ``loss`` still holds the
   same tensor there, and no later backward goes through ``loss``'s graph again (the
   merged backward frees it).

What the events cannot show is ruled out by reading the code: every ``.grad``
access, ``backward``, ``step`` and ``zero_grad`` call in the code that runs (the
module body and every function that is not dead code) must have been interpreted
with known values (an event), and the file must not call the torch functions that
read gradients behind the engine's back (``clip_grad_norm_``, ``GradScaler.unscale_``)
or register gradient hooks. Functions analyzed alone (their callers unknown) never
get the fix. The residual assumption is the engine's own: code outside the file does
not read ``.grad``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from graphlife.analysis.events import (
    BackwardEvent,
    GradReadEvent,
    StepEvent,
    UnitEndEvent,
    ZeroGradEvent,
)
from graphlife.analysis.rule_api import RuleContext
from graphlife.analysis.semantics.names import scope_nodes
from graphlife.analysis.state import State
from graphlife.analysis.torch_api import param_storages
from graphlife.analysis.values import (
    HeapObject,
    HeapRef,
    TensorVal,
    Tri,
    TupleVal,
    Value,
)
from graphlife.findings import FixRecipe, MessageTemplate, Severity, Span
from graphlife.fixes.proofs.calls import callee_name
from graphlife.recipes import AutogradGrad

#: ``.grad`` statuses (``State.grads``) that mean the gradient is None or zero.
CLEARED = frozenset({"zeroed", "zeroed_none", "zeroed_after_backward"})
#: Statuses that certainly hold a tensor (``zero_grad(set_to_none=False)`` zeroes it in both programs).
HOLDS_TENSOR = frozenset({"zeroed", "acc", "acc_stepped", "acc_stale"})
#: torch functions that read or change ``.grad`` without an engine event, and gradient hooks.
UNMODELED_GRAD_USERS = frozenset({
    "clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_", "unscale_",
    "register_hook", "register_post_accumulate_grad_hook", "register_backward_hook",
    "register_full_backward_hook", "register_full_backward_pre_hook",
})
#: Calls that touch ``.grad`` and that the engine turns into events when it knows the receiver.
EVENT_CALLS = frozenset({"backward", "step", "zero_grad"})
#: Events kept per unit before the proof gives up (a huge file is not worth it).
MAX_LOG = 20_000

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

#: The events the proof follows, by kind: "read" (a `.grad` read), "step", "zero", "backward", "grad".
EntryKind = Literal["read", "step", "zero", "backward", "grad"]
GradEvent = BackwardEvent | GradReadEvent | StepEvent | ZeroGradEvent
#: A finding as the rule reports it once the proof is done: (span, message, severity).
PendingReport = tuple[Span, str, Severity]
#: Names the proof follows -> their value; ``("list", name)`` -> the leaves a list holds;
#: ``"__heap__"`` -> the list objects (in a read's snapshot).
Snapshot = dict[object, object]


# --------------------------------------------------------------------------- records


@dataclass
class Entry:
    """One event after a candidate backward started, with what the proof needs of its state."""

    seq: int
    kind: EntryKind
    node: ast.AST
    storages: frozenset[int] | None = None  # None: unknown
    stack: tuple[ast.stmt, ...] = ()
    leaf: Tri = None
    set_to_none: Tri = None
    may: frozenset[int] = frozenset()
    env: Snapshot = field(default_factory=dict)  # names the proof follows -> value (and list objects)
    tensor: Value | None = None


@dataclass
class Candidate:
    """A ``.grad`` read after the backward that the fix could replace."""

    node: ast.Attribute
    receiver: str
    sequence: str | None = None  # the list a comprehension variable walks


@dataclass
class Instance:
    """One evaluation of the backward."""

    start: int
    stack: tuple[ast.stmt, ...]
    leaves: frozenset[int]
    must_leaves: frozenset[int]
    may: frozenset[int]
    statuses: dict[int, str | None]
    env: Snapshot
    heap: dict[int, HeapObject | None]
    module_unit: bool
    partial: bool
    report: PendingReport


@dataclass
class Site:
    """One ``.backward(create_graph=True)`` statement, with what the fix would edit."""

    stmt: ast.Expr
    call: ast.Call
    root: ast.expr
    candidates: dict[int, Candidate]
    merge_call: ast.Call | None
    instances: list[Instance] = field(default_factory=list)

    @property
    def root_name(self) -> str | None:
        return self.root.id if isinstance(self.root, ast.Name) else None

    def followed_names(self) -> set[str]:
        names = {c.receiver for c in self.candidates.values() if c.sequence is None}
        names |= {c.sequence for c in self.candidates.values() if c.sequence is not None}
        if self.root_name:
            names.add(self.root_name)
        return names


class Tracker:
    """The events of one unit, for the sites whose fix is being proven (GL204's unit state)."""

    def __init__(self) -> None:
        self.seq = 0
        self.sites: dict[int, Site] = {}
        self.log: list[Entry] = []
        self.overflow = False
        self.seen: set[int] = set()  # ids of nodes the engine made an event of in this unit
        self._calls_unmodeled: bool | None = None

    # -- recording ---------------------------------------------------------------------
    def active(self) -> bool:
        return bool(self.sites)

    def add(self, entry: Entry) -> None:
        if len(self.log) >= MAX_LOG:
            self.overflow = True
            return
        self.log.append(entry)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def snapshot_env(self, state: State) -> tuple[Snapshot, dict[int, HeapObject | None]]:
        env: Snapshot = {}
        heap: dict[int, HeapObject | None] = {}
        for site in self.sites.values():
            for name in site.followed_names():
                value = state.env.get(name)
                env[name] = value
                if isinstance(value, HeapRef):
                    heap[value.oid] = state.heap.get(value.oid)
        return env, heap

    # -- the file, read once -----------------------------------------------------------
    def calls_unmodeled(self, ctx: RuleContext) -> bool:
        """Does the file call an unmodeled gradient user or register a gradient hook (or read
        ``grad`` through ``getattr``)?

        The proof reads the whole file (here and in :func:`_program_is_visible`), so the
        unit notes that it read every definition: the language server's unit cache then
        runs it again after any edit, as a full analysis would see it."""
        if self._calls_unmodeled is None:
            self._calls_unmodeled = any(
                callee_name(call) in UNMODELED_GRAD_USERS
                or (callee_name(call) in ("getattr", "setattr", "delattr")
                    and any(isinstance(a, ast.Constant) and a.value == "grad" for a in call.args))
                for call in ctx.file_calls()
            )
        return self._calls_unmodeled


def tracker(ctx: RuleContext) -> Tracker:
    """The running unit's tracker (the rule's unit state, like every rule's pending findings)."""
    return ctx.unit_state(Tracker)


# --------------------------------------------------------------------------- sites


def new_site(ctx: RuleContext, event: BackwardEvent) -> Site | None:
    """The site of a create-graph backward whose shape the fix handles, else ``None``."""
    stmt, call = event.stmt, event.call
    if not (isinstance(stmt, ast.Expr) and stmt.value is call and isinstance(call.func, ast.Attribute)
            and call.func.attr == "backward" and not call.args and len(call.keywords) == 1):
        return None
    keyword = call.keywords[0]
    if keyword.arg != "create_graph" or not (isinstance(keyword.value, ast.Constant) and keyword.value.value is True):
        return None
    if not _in_module_unit(ctx, ctx.running_statements()):
        return None  # a function analyzed alone: its callers, and what they do with .grad, are unknown
    located = _block_of(ctx, stmt)
    if located is None:
        return None
    block, index = located
    if tracker(ctx).calls_unmodeled(ctx):
        return None
    following = block[index + 1:]
    candidates: dict[int, Candidate] = {}
    for later in following:
        for node in scope_nodes([later]):
            if isinstance(node, ast.Attribute) and node.attr == "grad" and isinstance(node.ctx, ast.Load) \
                    and not _is_callee(ctx, node):
                candidate = _candidate(ctx, node, later)
                if candidate is not None:
                    candidates[id(node)] = candidate
    if not candidates:
        return None
    return Site(stmt=stmt, call=call, root=call.func.value, candidates=candidates,
                merge_call=_merge_candidate(following, call.func.value))


def _candidate(ctx: RuleContext, node: ast.Attribute, stmt: ast.stmt) -> Candidate | None:
    if not isinstance(node.value, ast.Name):
        return None
    name = node.value.id
    current = ctx.parent(node)
    while current is not None and current is not stmt:
        if isinstance(current, _COMPREHENSIONS):
            generators = current.generators
            bound = _names_bound(generators)
            if name not in bound:
                current = ctx.parent(current)
                continue
            if len(generators) != 1 or generators[0].is_async:
                return None
            target, iterable = generators[0].target, generators[0].iter
            if isinstance(target, ast.Name) and target.id == name and isinstance(iterable, ast.Name):
                return Candidate(node, name, iterable.id)
            if (isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts)
                    and isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
                    and iterable.func.id == "zip" and not ctx.binds("zip", iterable.func) and not iterable.keywords
                    and len(iterable.args) == len(target.elts)
                    and not any(isinstance(a, ast.Starred) for a in iterable.args)):
                positions = [k for k, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name]
                chosen = iterable.args[positions[0]] if len(positions) == 1 else None
                if isinstance(chosen, ast.Name):
                    return Candidate(node, name, chosen.id)
            return None
        current = ctx.parent(current)
    return Candidate(node, name)


def _names_bound(generators: list[ast.comprehension]) -> set[str]:
    names: set[str] = set()
    for generator in generators:
        for node in ast.walk(generator.target):
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def _merge_candidate(following: list[ast.stmt], root: ast.expr) -> ast.Call | None:
    """The first statement after the backward that is ``other.backward()``, when only simple
    statements that cannot leave the block and do not rebind the root come before it."""
    if not isinstance(root, ast.Name):
        return None
    for stmt in following:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
                return call if not call.args and not call.keywords else None
        if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Pass)):
            return None
        for node in scope_nodes([stmt]):
            if isinstance(node, ast.Name) and node.id == root.id and not isinstance(node.ctx, ast.Load):
                return None
            if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
                return None
    return None


# --------------------------------------------------------------------------- events


def on_create_graph_backward(ctx: RuleContext, event: BackwardEvent, report: PendingReport) -> bool:
    """A create-graph backward: start following it. False when the fix is not possible here
    (the caller then reports at once)."""
    track = tracker(ctx)
    site = track.sites.get(id(event.call))
    if site is None:
        site = new_site(ctx, event)
        if site is None:
            return False
        track.sites[id(event.call)] = site
    graph = ctx.graph
    state = event.state
    must_leaves: set[int] = set()
    for nid in event.must:
        must_leaves |= graph.nodes[nid].leaves
    env, heap = track.snapshot_env(state)
    for candidate in site.candidates.values():
        if candidate.sequence is not None:
            env[("list", candidate.sequence)] = _list_storages(env.get(candidate.sequence), state)
    stack = ctx.running_statements()
    site.instances.append(Instance(
        start=track.next_seq(),
        stack=stack,
        leaves=frozenset(event.leaves),
        must_leaves=frozenset(must_leaves),
        may=frozenset(event.may),
        statuses={s: state.grads.get(s, (None, None))[0] for s in _all_storages(event, env, state)},
        env=env,
        heap=heap,
        module_unit=_in_module_unit(ctx, stack),
        partial=not event.may or any(graph.nodes[n].partial for n in event.may),
        report=report,
    ))
    return True


def _in_module_unit(ctx: RuleContext, stack: tuple[ast.stmt, ...]) -> bool:
    """Does the running unit start at a top-level statement (the module body, not a function
    analyzed alone)?"""
    return bool(stack) and isinstance(ctx.parent(stack[0]), ast.Module)


def _all_storages(event: BackwardEvent, env: Snapshot, state: State) -> set[int]:
    storages = set(event.leaves)
    for value in env.values():
        if isinstance(value, set):
            storages |= value
        elif isinstance(value, TensorVal) and value.storage is not None:
            storages.add(value.storage)
    return storages


def _list_storages(value: object, state: State) -> set[int] | None:
    """The leaves a list (or tuple) of leaf tensors holds; None when not such a list."""
    items: list[Value]
    if isinstance(value, HeapRef):
        obj = state.heap.get(value.oid)
        if obj is None or obj.kind != "list" or obj.elem is None:
            return None
        exact = obj.attrs.get("__items__")
        items = list(exact.items) if isinstance(exact, TupleVal) else [obj.elem]
    elif isinstance(value, TupleVal):
        items = list(value.items)
    else:
        return None
    out: set[int] = set()
    for item in items:
        if not isinstance(item, TensorVal) or item.leaf is not True or not item.requires_grad:
            return None
        storages = param_storages(item, state)
        if not storages:
            return None
        out |= storages
    return out or None


def on_event(event: GradEvent, ctx: RuleContext) -> None:
    """Every grad read, step, zero_grad and backward: noted for the proof (a hook of GL204)."""
    track = tracker(ctx)
    kind: EntryKind
    node: ast.AST
    if isinstance(event, GradReadEvent):
        kind, node = "read", event.expr
    elif isinstance(event, StepEvent):
        kind, node = "step", event.call
    elif isinstance(event, ZeroGradEvent):
        kind, node = "zero", event.call
    else:
        kind, node = "grad" if event.kind == "grad" else "backward", event.call
    track.seen.add(id(node))
    if not track.active():
        return
    state = event.state
    entry = Entry(seq=track.next_seq(), kind=kind, node=node, stack=ctx.running_statements())
    if isinstance(event, GradReadEvent):
        tensor = event.tensor
        entry.tensor = tensor
        entry.leaf = tensor.leaf
        storages = param_storages(tensor, state) if tensor.leaf is not False else frozenset()
        entry.storages = frozenset(storages) if storages or tensor.leaf is False else None
        entry.env, heap = track.snapshot_env(state)
        entry.env["__heap__"] = heap
    elif isinstance(event, StepEvent):
        entry.storages = event.storages
    elif isinstance(event, ZeroGradEvent):
        entry.storages = event.storages
        entry.set_to_none = event.set_to_none
    else:
        entry.may = frozenset(event.may)
        entry.env, _ = track.snapshot_env(state)
    track.add(entry)


def on_unit_end(ctx: RuleContext, event: UnitEndEvent,
                report: Callable[[Span, str, Severity, list[FixRecipe]], None]) -> None:
    """Judge every site of the unit and report its findings, with the fix where proven."""
    track = ctx.take_unit_state(Tracker)
    if track is None:
        return
    for site in track.sites.values():
        fixes = _prove(ctx, track, site)
        for span, message, severity in (i.report for i in site.instances):
            report(span, message, severity, fixes)


# --------------------------------------------------------------------------- the proof


def _prove(ctx: RuleContext, track: Tracker, site: Site) -> list[FixRecipe]:
    if track.overflow or not site.instances:
        return []
    if any(not i.module_unit or i.partial or not i.leaves for i in site.instances):
        return []
    planned = _planned_reads(track, site)
    if not planned:
        return []
    form = _form(site, planned)
    if form is None:
        return []
    for mode in ("plain", "merge") if site.merge_call is not None else ("plain",):
        outcomes = [_validate(ctx, track, site, instance, planned, mode) for instance in site.instances]
        if any(outcome is None for outcome in outcomes):
            continue
        if any(outcomes) and not _program_is_visible(ctx, track):
            continue  # gradients stay changed to the end: every use in the program must be visible
        return [_recipe(ctx, site, planned, form, merge=mode == "merge")]
    return []


def _owner(site: Site, seq: int) -> Instance | None:
    owner = None
    for instance in site.instances:
        if instance.start < seq:
            owner = instance
    return owner


def _window(track: Tracker, instance: Instance) -> list[Entry]:
    """The events from the backward up to (not including) the first one that can change a ``.grad``."""
    out = []
    for entry in track.log:
        if entry.seq <= instance.start or entry.kind == "grad":
            continue
        if entry.kind != "read":
            break
        out.append(entry)
    return out


def _planned_reads(track: Tracker, site: Site) -> set[int]:
    planned = set()
    for instance in site.instances:
        for entry in _window(track, instance):
            if id(entry.node) in site.candidates and _owner(site, entry.seq) is instance:
                planned.add(id(entry.node))
    return planned


def _form(site: Site, planned: set[int]) -> tuple[str, tuple[str, ...]] | None:
    """("single", receivers in source order) or ("sequence", (list name,))."""
    chosen = sorted((site.candidates[n] for n in planned), key=lambda c: (c.node.lineno, c.node.col_offset))
    sequences = {c.sequence for c in chosen}
    if sequences == {None}:
        names: list[str] = []
        for c in chosen:
            if c.receiver not in names:
                names.append(c.receiver)
        return "single", tuple(names)
    sequence = next(iter(sequences)) if len(sequences) == 1 else None
    if sequence is not None:
        return "sequence", (sequence,)
    return None


def _read_leaves(site: Site, instance: Instance, planned: set[int]) -> set[int] | None:
    """The leaves the replaced reads read, when each is a known leaf the backward reaches on
    every path and whose ``.grad`` was empty before it; else None."""
    leaves: set[int] = set()
    for node_id in planned:
        candidate = site.candidates[node_id]
        if candidate.sequence is None:
            value = instance.env.get(candidate.receiver)
            if not isinstance(value, TensorVal) or value.leaf is not True or value.storage is None:
                return None
            leaves.add(value.storage)
        else:
            storages = instance.env.get(("list", candidate.sequence))
            if not isinstance(storages, set):
                return None
            leaves |= storages
    if not leaves <= instance.must_leaves:
        return None
    for storage in leaves:
        status = instance.statuses.get(storage)
        if status not in CLEARED and status is not None:
            return None
    return leaves


def _validate(
    ctx: RuleContext, track: Tracker, site: Site, instance: Instance, planned: set[int], mode: str
) -> bool | None:
    """None: the fix could change what this evaluation computes. Else whether gradients the
    backward left in ``.grad`` are never reset, so the whole program must be visible.

    ``tainted``: leaves whose ``.grad`` holds a different value in the fixed program (the
    backward's gradient is missing). ``graphless``: after the merged backward every
    ``.grad`` holds the same value, but the original's still carries a graph
    (``create_graph=True``) and the fixed one does not: an optimizer step cannot tell
    (it runs without grad), a visible read might differentiate through it, so it refuses."""
    read = _read_leaves(site, instance, planned)
    if read is None:
        return None
    window = {entry.seq for entry in _window(track, instance)}
    tainted: set[int] = set(instance.leaves)
    graphless: set[int] = set()
    merged = False
    first_change = True
    for entry in track.log:
        if entry.seq <= instance.start:
            continue
        if entry.kind == "read":
            if id(entry.node) in planned:
                owner = _owner(site, entry.seq)
                if owner is not instance:
                    continue  # a later evaluation's read: its own proof covers it
                if entry.seq not in window or not _same_leaf(site.candidates[id(entry.node)], instance, entry):
                    return None
                continue
            watched = tainted | graphless
            if entry.leaf is False or not watched:
                continue
            if entry.storages is None or entry.storages & watched:
                return None
            continue
        if entry.kind == "grad":  # autograd.grad leaves .grad alone
            if merged and entry.may & instance.may:
                return None
            continue
        if mode == "merge" and first_change:
            first_change = False
            if not (entry.kind == "backward" and entry.node is site.merge_call
                    and entry.env.get(site.root_name) == instance.env.get(site.root_name)
                    and entry.env.get(site.root_name) is not None):
                return None
            graphless, tainted = tainted, set()
            merged = True
            continue
        first_change = False
        if entry.kind == "step":
            if tainted and (entry.storages is None or entry.storages & tainted):
                return None
        elif entry.kind == "zero":
            hit = tainted if entry.storages is None else entry.storages & tainted
            if hit and not _same_after_reset(entry, instance, hit):
                return None
            if entry.storages is not None and _runs_after(ctx, instance.stack, entry.stack):
                tainted -= entry.storages  # reset on every path after the backward: equal from here on
                graphless -= entry.storages
        elif merged and entry.may & instance.may:
            return None  # a later backward goes through the graph the merged backward freed
    return bool(tainted)


def _same_leaf(candidate: Candidate, instance: Instance, entry: Entry) -> bool:
    """The replaced read reads the leaf the fix differentiates: the same tensor as the name
    held at the backward, or an element of the very list (unchanged since) that was
    differentiated (the comprehension variable is bound to its elements; the engine may
    only know "one of them", so its storages are checked when it knows them)."""
    tensor = entry.tensor
    if not isinstance(tensor, TensorVal):
        return False
    if candidate.sequence is None:
        before = instance.env.get(candidate.receiver)
        return isinstance(before, TensorVal) and tensor.storage is not None and tensor.storage == before.storage
    name = candidate.sequence
    before, now = instance.env.get(name), entry.env.get(name)
    if before is None or now != before:
        return False
    heap = entry.env["__heap__"]
    if (isinstance(before, HeapRef) and isinstance(heap, dict)
            and instance.heap.get(before.oid) is not heap.get(before.oid)):
        return False  # the list changed in between
    listed = instance.env.get(("list", name))
    return entry.storages is None or (isinstance(listed, set) and entry.storages <= listed)


def _same_after_reset(entry: Entry, instance: Instance, hit: set[int] | frozenset[int]) -> bool:
    """After this reset, is each ``.grad`` in ``hit`` the same in both programs?"""
    if entry.set_to_none is True or isinstance(entry.node, ast.Attribute):
        return True  # None in both, or the same assigned value
    if entry.set_to_none is False and callee_name(entry.node) == "zero_grad":
        # zero_grad(set_to_none=False) zeroes a tensor and leaves None alone: equal only when
        # the fixed program's .grad (the one from before the backward) already held a tensor
        return all(instance.statuses.get(s) in HOLDS_TENSOR for s in hit)
    return False


def _runs_after(ctx: RuleContext, before: tuple[ast.stmt, ...], after: tuple[ast.stmt, ...]) -> bool:
    """Does the statement at the end of ``after`` run whenever the one at the end of
    ``before`` ran (and after it)? Both stacks go from the unit's top statement down
    through inlined calls. Yes when it is a later sibling, in straight-line code, of
    the statement ``before`` went through at that level, and nothing in between (or in
    that statement's own function) can leave the block."""
    level = 0
    while level < len(before) and level < len(after) and before[level] is after[level]:
        level += 1
    if level >= len(before) or len(after) != level + 1:
        return False
    if any(isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar" for stmt in before[:level]):
        return False
    located_before, located_after = _block_of(ctx, before[level]), _block_of(ctx, after[level])
    if located_before is None or located_after is None or located_before[0] is not located_after[0]:
        return False
    block, first = located_before
    last = located_after[1]
    if last <= first:
        return False
    if any(_escapes(stmt) for stmt in block[first:last]):
        return False
    for stmt in before[level + 1:]:  # functions on the way down must return normally to their caller
        func = ctx.enclosing_function(stmt)
        if func is not None and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in scope_nodes(func.body)):
            return False
    return True


def _escapes(stmt: ast.stmt) -> bool:
    """Can control leave ``stmt`` other than by finishing it (return, yield, or a
    break/continue aimed at a loop around it)?"""
    def visit(node: ast.AST, loops: int) -> bool:
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if isinstance(node, (ast.Break, ast.Continue)) and loops == 0:
            return True
        if isinstance(node, _SCOPES):
            return False
        inner = loops + 1 if isinstance(node, (ast.For, ast.While, ast.AsyncFor)) else loops
        return any(visit(child, inner) for child in ast.iter_child_nodes(node))
    return visit(stmt, 0)


def _program_is_visible(ctx: RuleContext, track: Tracker) -> bool:
    """Every ``.grad`` access and every backward/step/zero_grad call in the code that runs
    produced an event (the engine knew the values), so no use of a gradient was missed."""
    tree = ctx.read_whole_file()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _dead(ctx, node):
                continue
            pending.extend(node.body)
            continue
        if isinstance(node, ast.ClassDef):
            pending.extend(node.body)
            continue
        if isinstance(node, ast.Lambda):
            pending.append(node.body)
            continue
        if (isinstance(node, ast.Attribute) and node.attr == "grad" and id(node) not in track.seen
                and not _is_callee(ctx, node)):  # `torch.autograd.grad(...)` is a function
            return False
        if isinstance(node, ast.Call) and callee_name(node) in EVENT_CALLS and id(node) not in track.seen:
            return False
        pending.extend(ast.iter_child_nodes(node))
    return True


def _dead(ctx: RuleContext, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Never run: not inlined by this unit, and its name is used nowhere but in its own definition
    (a name read, an attribute or a string naming it)."""
    if ctx.was_inlined(func):
        return False
    name = func.name
    if name == "forward" or (name.startswith("__") and name.endswith("__")):
        return False
    return all(
        _inside(ctx, mention, func)
        for mention in ctx.mentions(name)
        if not (isinstance(mention, ast.Name) and not isinstance(mention.ctx, ast.Load))
    )


def _inside(ctx: RuleContext, node: ast.AST, func: ast.AST) -> bool:
    return any(ancestor is func for ancestor in ctx.ancestors(node))


# --------------------------------------------------------------------------- the recipe

AUTOGRAD_GRAD_TITLE = MessageTemplate(
    "fix.autograd-grad", "Get the gradients of `{what}` with `torch.autograd.grad(..., create_graph=True)`",
    zh_cn="用 `torch.autograd.grad(..., create_graph=True)` 求 `{what}` 的梯度")
AUTOGRAD_GRAD_MERGE_TITLE = MessageTemplate(
    "fix.autograd-grad-merge",
    "Get the gradients of `{what}` with `torch.autograd.grad(..., create_graph=True)` and add `{root}` to the next "
    "backward",
    zh_cn="用 `torch.autograd.grad(..., create_graph=True)` 求 `{what}` 的梯度，并把 `{root}` 加到下一次反向传播中")


def _recipe(
    ctx: RuleContext, site: Site, planned: set[int], form: tuple[str, tuple[str, ...]], *, merge: bool
) -> FixRecipe:
    kind, names = form
    reads = tuple(ctx.span(site.candidates[n].node) for n in sorted(
        planned, key=lambda n: (site.candidates[n].node.lineno, site.candidates[n].node.col_offset)))
    root = ctx.text(site.root)
    what = ", ".join(names)
    merged = ctx.span(site.merge_call) if merge and site.merge_call is not None else None
    title = AUTOGRAD_GRAD_TITLE(what=what) if merged is None else AUTOGRAD_GRAD_MERGE_TITLE(what=what, root=root)
    return AutogradGrad(title=title, backward=ctx.span(site.stmt), root=ctx.span(site.root), inputs=tuple(names),
                        sequence=kind == "sequence", reads=reads, merge=merged)


# --------------------------------------------------------------------------- helpers


def _is_callee(ctx: RuleContext, node: ast.AST) -> bool:
    parent = ctx.parent(node)
    return isinstance(parent, ast.Call) and parent.func is node


def _block_of(ctx: RuleContext, stmt: ast.stmt) -> tuple[list[ast.stmt], int] | None:
    parent = ctx.parent(stmt)
    if parent is None:
        return None
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list):
            for index, item in enumerate(block):
                if item is stmt:
                    return block, index
    return None
