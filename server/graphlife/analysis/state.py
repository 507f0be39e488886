"""The abstract state at a program point, the graph nodes, and how paths join.

Graph nodes are created once per op site *per evaluation*: a loop body that is
interpreted twice creates two generations of nodes, so "built in iteration 1,
freed by iteration 1's backward, reached again in iteration 2 through a
carried variable" is an ordinary reachability question.

Facts that must hold on every path (``freed``) are kept apart from facts that
hold on some path (``may_freed``); versions are sets of possible values.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from graphlife.analysis.cow_map import CowMap, join_dicts, join_maps
from graphlife.analysis.either_module import merge_modules
from graphlife.analysis.grad_hooks import GradHook, join_hooks
from graphlife.analysis.values import HeapObject, HeapRef, Tri, Value, join_tri, join_values


@dataclass(frozen=True)
class SavedRef:
    """A tensor a node saved for backward: its storage and the version it had then."""

    storage: int
    version: int
    what: str  # "input" | "result" | "parameter"
    desc: str = ""


@dataclass
class Node:
    """One graph node (an op evaluated once): its parents and what it saved."""

    nid: int
    op: str
    site: ast.AST
    parents: frozenset[int]
    parents_certain: bool
    saves: tuple[SavedRef, ...]
    #: True when the table says (for every possible input pattern) that this op saves something.
    saves_certain: bool
    iteration: tuple[int, ...] = ()  # loop iteration indices at creation, innermost last
    line_desc: str = ""
    #: Storages of the leaves requiring grad that this node feeds gradients into (parameters).
    leaves: frozenset[int] = frozenset()
    #: The requires-grad pattern of the inputs (``"1s"``: a tensor and a Python number).
    pattern: str = ""
    #: Some input could not be interpreted: the graph behind it (and its leaves) is unknown.
    partial: bool = False
    #: A reentrant checkpoint's node: the leaf storages among the tensors it was given (what
    #: ``autograd.grad`` may ask about through it; the block's own parameters are not reachable so).
    checkpoint_inputs: frozenset[int] | None = None


@dataclass
class GraphStore:
    """Every node created while analyzing one unit (shared by all paths)."""

    nodes: list[Node] = field(default_factory=list)

    def add(self, **kwargs: Any) -> Node:
        node = Node(nid=len(self.nodes), **kwargs)
        self.nodes.append(node)
        return node

    def reach(self, roots: frozenset[int], certain: bool) -> tuple[set[int], set[int]]:
        """Nodes reachable from ``roots``: (on every path, on some path). Iterative, no recursion."""
        must: set[int] = set()
        may: set[int] = set()
        stack = [(nid, certain) for nid in roots]
        while stack:
            nid, sure = stack.pop()
            if nid in may and (not sure or nid in must):
                continue
            may.add(nid)
            if sure:
                must.add(nid)
            node = self.nodes[nid]
            for parent in node.parents:
                stack.append((parent, sure and node.parents_certain))
        return must, may


#: The version of a storage nothing bumped yet (one set for all: asked at every op that saves).
_FIRST_VERSION = frozenset({0})

#: The maps of a state that are shared between copies until written (see ``State.writable``).
SHARED_MAPS = ("versions", "bumps", "grads", "data_bumps", "freed", "may_freed")
#: Every one of them shared (a state's ``shared`` after a copy or a join: one set for all, as
#: ``shared`` is replaced, never changed, when a map becomes a state's own).
_ALL_SHARED = frozenset(SHARED_MAPS)


@dataclass
class State:
    """What holds at one program point on the paths that reach it."""

    #: Names and heap objects: plain dicts, or :class:`CowMap` once a copy found them large
    #: (see ``SHARE_FROM``; a dict assigned here becomes the state's own: nobody else writes it
    #: after). Read and written with the dict interface.
    env: MutableMapping[str, Value] = field(default_factory=dict)
    heap: MutableMapping[int, HeapObject] = field(default_factory=dict)
    versions: dict[int, frozenset[int]] = field(default_factory=dict)
    #: storage -> list of (version reached, statement that bumped it)
    bumps: dict[int, tuple[tuple[int, ast.AST], ...]] = field(default_factory=dict)
    #: leaf storage -> (status, statement): "acc" (a backward accumulated into .grad),
    #: "acc_stepped" (then a step used it and nothing zeroed it), "zeroed_after_backward",
    #: "zeroed", "zeroed_none" (set to None). Joins keep a status only when all paths agree.
    grads: dict[int, tuple[str, ast.AST | None]] = field(default_factory=dict)
    #: storage -> ((graph size when changed, statement), ...): in-place changes through `.data`.
    data_bumps: dict[int, tuple[tuple[int, ast.AST], ...]] = field(default_factory=dict)
    freed: dict[int, ast.AST] = field(default_factory=dict)  # node -> backward stmt (every path)
    may_freed: dict[int, ast.AST] = field(default_factory=dict)  # node -> backward stmt (some path)
    grad_enabled: Tri = True
    inference_mode: Tri = False
    reachable: bool = True
    #: Gradients are on only by assumption: a function analyzed alone, before anything in it
    #: sets the mode. Its callers may run it under ``no_grad``.
    grad_assumed: bool = False
    #: Functions handed to code the engine does not follow (a hook registered where the engine
    #: cannot run it, a callback given to a library): they may run at any later call the engine
    #: cannot see into, at a module's call and at a backward (:mod:`graphlife.analysis.engine.callbacks`).
    #: Joins keep every path's.
    escaped: frozenset[Value] = frozenset()
    #: Hooks the engine follows into the backwards that reach what they are registered on
    #: (tensor hooks, full backward hooks: :mod:`graphlife.analysis.grad_hooks`).
    grad_hooks: frozenset[GradHook] = frozenset()
    #: Which of the maps in ``SHARED_MAPS`` this state shares with another one (copy on write).
    shared: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def copy(self, *, names: bool = True) -> State:
        """A state for another path. Names and heap are copied whole while small (plain dicts),
        and forked once large (:class:`CowMap`: the fork costs nothing, the first write after it
        copies the entries written since the maps were last shared). The maps that grow with
        the whole analysis (versions, gradients, freed nodes) are shared until one side writes
        (:meth:`writable`). Copying every entry on every branch and call made long files
        quadratic.

        ``names=False``: the copy's names are left empty, for a caller that gives it names of its
        own (an inlined callee's: they were copied from the caller's, then thrown away)."""
        own = self.__dict__
        self.shared = _ALL_SHARED
        twin = _new_state(State)
        attributes = twin.__dict__
        attributes.update(own)
        env, heap = own["env"], own["heap"]
        if not names:
            attributes["env"] = {}
        elif type(env) is dict and len(env) < SHARE_FROM:
            attributes["env"] = env.copy()
        else:
            attributes["env"] = _forked(own, "env")
        # heap objects are copied on write (see heap_write)
        attributes["heap"] = heap.copy() if type(heap) is dict and len(heap) < SHARE_FROM else _forked(own, "heap")
        attributes["shared"] = _ALL_SHARED
        return twin

    def forkable(self, name: str) -> CowMap:
        """The map ``name`` (``env`` or ``heap``) as a :class:`CowMap` (a plain dict becomes the
        base of one)."""
        current = self.__dict__[name]
        if type(current) is not CowMap:
            current = CowMap(current if type(current) is dict else dict(current))
            self.__dict__[name] = current
        return current

    def writable(self, name: str) -> dict:
        """The map ``name`` (one of ``SHARED_MAPS``), ready to be changed on this path only."""
        attributes = self.__dict__
        current = attributes[name]
        shared = attributes["shared"]
        if name in shared:
            current = attributes[name] = dict(current)
            attributes["shared"] = shared.difference((name,))
        return current

    def dead_copy(self) -> State:
        """A copy that no path reaches (after a return, a raise, a break, an import that fails)."""
        dead = self.copy()
        dead.reachable = False
        return dead

    def adopt(self, other: State) -> None:
        """Take over everything ``other`` knows (its maps become shared by both)."""
        self.__dict__.update(other.__dict__)
        self.shared = _ALL_SHARED
        other.shared = _ALL_SHARED

    # -- heap -------------------------------------------------------------------------
    def heap_write(self, oid: int) -> HeapObject:
        """The object ``oid`` ready to be changed on this path only."""
        obj = self.heap[oid].copy()
        self.heap[oid] = obj
        return obj

    # -- versions ---------------------------------------------------------------------
    def version_of(self, storage: int) -> frozenset[int]:
        return self.versions.get(storage, _FIRST_VERSION)

    def set_grads(self, storages: Iterable[int], status: str, site: ast.AST | None) -> None:
        for storage in storages:
            self.writable("grads")[storage] = (status, site)

    def bump(self, storage: int, site: ast.AST) -> None:
        current = self.version_of(storage)
        self.writable("versions")[storage] = frozenset(v + 1 for v in current)
        self.writable("bumps")[storage] = (*self.bumps.get(storage, ()), (max(current) + 1, site))

    # -- joins ------------------------------------------------------------------------
    @staticmethod
    def join_all(states: list[State], *, owned: bool = False) -> State:
        """The join of ``states`` (those no path reaches left out), as a state of its own.

        ``owned``: the caller hands the states over and reads none of them again (the ends of
        an ``if``'s branches, of a loop's iterations, of an inlined callee's paths), so where
        one path alone reaches the join, that path's state is the join itself. Copying it
        forked its names and heap, and the first write after the fork then copied their
        changed entries again: at every inlined call, and at every ``if`` one of whose
        branches returns, raises or breaks."""
        live = [s for s in states if s.reachable]
        if not live:
            dead = states[0].copy() if states else State()
            dead.reachable = False
            return dead
        if len(live) == 1:
            return live[0] if owned else live[0].copy()
        result = live[0]
        result.shared = _ALL_SHARED  # the join may hand back its versions, grads, freed nodes
        for other in live[1:]:
            result = result._join(other)
        return result

    def _join(self, other: State) -> State:
        """Join two paths. States that share an ancestor hold the very same objects for most
        entries: names and heap are joined on the keys written since the maps were last shared
        (:func:`join_maps`), the other maps are first compared whole (a C-speed identity check)
        and only the entries that differ are joined one by one. The result may share the
        maps of ``self`` (which must count them as shared), never those of ``other``."""
        env, heap, other_env, other_heap = self.env, self.heap, other.env, other.heap
        either: dict[int, HeapObject] = {}

        def join_names(a: Value | None, b: Value | None) -> Value:
            """A name holding one module on this path and another on the other holds *a module*."""
            if type(a) is HeapRef and type(b) is HeapRef and a.oid != b.oid:
                found = merge_modules(a.oid, heap, b.oid, other_heap)
                if found is not None:
                    either[found[0]] = found[1]
                    return HeapRef(found[0])
            return join_values(a, b)

        if type(env) is dict and type(other_env) is dict:
            env = join_dicts(env, other_env, join_names)
        else:
            env = join_maps(self.forkable("env"), other.forkable("env"), join_names)
        if type(heap) is dict and type(other_heap) is dict:
            heap = join_dicts(heap, other_heap, _join_objects)
        else:
            heap = join_maps(self.forkable("heap"), other.forkable("heap"), _join_objects)
        for oid, obj in either.items():
            heap[oid] = obj
        freed, may_freed = self.freed, self.may_freed
        if not (freed is other.freed or freed == other.freed):
            freed = {n: s for n, s in freed.items() if n in other.freed}
        if not (may_freed is other.may_freed or may_freed == other.may_freed):
            may_freed = {**other.may_freed, **may_freed}
        out = _new_state(State)
        out.__dict__.update(
            env=env,
            heap=heap,
            versions=_merge_facts(self.versions, other.versions, _join_versions),
            bumps=_merge_facts(self.bumps, other.bumps, _merge_sequences),
            grads=_merge_facts(self.grads, other.grads, _join_grads),
            data_bumps=_merge_facts(self.data_bumps, other.data_bumps, _merge_sequences),
            freed=freed,
            may_freed=may_freed,
            grad_enabled=join_tri(self.grad_enabled, other.grad_enabled),
            inference_mode=join_tri(self.inference_mode, other.inference_mode),
            reachable=True,
            grad_assumed=self.grad_assumed or other.grad_assumed,
            escaped=self.escaped | other.escaped if self.escaped is not other.escaped else self.escaped,
            grad_hooks=join_hooks(self.grad_hooks, other.grad_hooks),
            shared=_ALL_SHARED,  # the maps above may be self's
        )
        return out


_new_state = object.__new__

#: Names or heap objects fewer than this are copied whole at a fork, as a plain dict: copying a
#: few entries in C costs less than sharing them, and a plain dict reads faster. A map that has
#: grown to this size is shared instead (:class:`CowMap`). Measured on large public files and
#: generated ones: 32 runs as fast as 64 and copies far fewer entries; 16 runs slower.
SHARE_FROM = 32


def _forked(attributes: dict, name: str) -> MutableMapping:
    """A copy of the map ``name`` of a state's ``attributes`` for another path (see :meth:`State.copy`)."""
    current = attributes[name]
    if type(current) is not CowMap:
        if len(current) < SHARE_FROM:
            return dict(current)
        current = attributes[name] = CowMap(current if type(current) is dict else dict(current))
    return current.fork()


def _merge_facts(a: dict[Any, Any], b: dict[Any, Any], join: Callable[[Any, Any], Any]) -> dict[Any, Any]:
    """The join of maps of hashable facts (versions, gradient statuses, bump lists): the
    entries that differ are found by a set difference in C instead of a Python loop over
    every storage the analysis has seen. An entry equal on both sides joins to itself."""
    if a is b:
        return a
    differing = a.items() ^ b.items()
    if not differing:
        return a
    out = dict(a)
    for key in {key for key, _ in differing}:
        out[key] = join(a.get(key), b.get(key))
    return out


def _join_versions(a: frozenset[int] | None, b: frozenset[int] | None) -> frozenset[int]:
    return (a or _FIRST_VERSION) | (b or _FIRST_VERSION)


#: Gradient statuses that hold what an earlier step already applied: the next backward adds on top.
_STEPPED = ("acc_stepped", "acc_stale")


def _join_grads(a: tuple | None, b: tuple | None) -> tuple | None:
    """Two paths' gradient statuses. A path that never touched a gradient (no entry: a branch with
    no training step, like `if step > warmup:` in the first iteration) leaves it as it was, so
    where the other path left a step's worth in it, that is what the next backward adds to; two
    paths that both left a step's worth agree on that."""
    if a == b:
        return a
    if (a is None or a[0] in _STEPPED) and (b is None or b[0] in _STEPPED):
        site = (a or b or ("", None))[1]
        return ("acc_stepped", site)
    return ("unknown", None)


def _join_objects(a: HeapObject | None, b: HeapObject | None) -> HeapObject | None:
    if a is None:
        return b
    if b is None:
        return a
    return a.join(b)


def _merge_sequences(a: tuple | None, b: tuple | None) -> tuple:
    a, b = a or (), b or ()
    return a + tuple(item for item in b if item not in a)
