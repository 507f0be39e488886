"""``self`` of a method analyzed alone, built once per class and reused by its other methods.

Why: a method that nothing inlined is analyzed alone, and its ``self`` is what the
class's ``__init__`` makes (run quietly, with unknown arguments). Running
``__init__`` and its whole call tree again for every method was most of the work on
large classes (95% of the statements executed on a 300-method engine class). The
``self`` a method starts with depends only on the class, on the name the method
gives its first parameter (``__init__`` sees the method's other names as the
caller's), and on one fact carried between units (``create_graph_seen``): the state
it is built in is always the module's names with that parameter unknown. So it is
built once per such key, and each method starts from a copy of the state it was
built in. Most ``__init__`` never read a ``.grad`` (the one value the ``create_graph`` fact
decides) nor run a backward: what they build is then the same for both values of the fact,
and one build serves both (on DeepSpeed's engine, a build is 1,067 statements, 15% of the
file's).

What each method gets is its own: :meth:`State.copy` gives a new path, and the
state's heap objects are copied before any write (``State.heap_write``), so what one
method does to ``self`` never reaches the built state or another method. The
instance object's ``site`` is the method's own definition, as when it was built for
that method. What building it did to the interpreter is done again at each reuse:
the functions and classes it read (the unit cache's dependencies:
``Interpreter.touch``), the functions it inlined (not analyzed alone later), the
``zero_grad`` statements it noted, whether ``__init__`` never returns, and the
``create_graph`` fact. While the language server's unit cache records a unit, the code a
build read is handed to it apart (``RunState.self_built``), not as the unit's own: after an
edit there the unit is replayed when the ``self`` built again is the same in what the unit
read of it (:mod:`graphlife.analysis.self_print`): the method's copy of the instance notes the
attributes read (:mod:`graphlife.analysis.self_reads`).

The hover's stories (``Interpreter.watch``) use it too: they tell each expression's
latest value, and the ``self`` a method reuses holds what building it held the first
time (the stories of every fixture and of large public files are the same with it and
without it; without it, DeepSpeed's ``runtime/engine.py`` took six times as long).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from graphlife.analysis.engine_api import EngineParts, Timeout
from graphlife.analysis.self_reads import ReadAttrs, Reads
from graphlife.analysis.state import State
from graphlife.analysis.unseen_writes import AttributeWrites, attribute_writes, weaken_object
from graphlife.analysis.values import UNKNOWN, ClassRef, HeapRef, Value

#: What one ``self`` is built for: the class (and what its bases make it), the name of the first
#: parameter, and the ``create_graph`` fact.
SelfKey = tuple[int, bool, bool, str, bool]

#: Tests turn this off to compare with ``self`` built for every method (the findings must be the same).
ENABLED = True


@dataclass
class BuiltSelf:
    """One ``self``: the state after ``__init__`` ran (never handed out, only copies of it),
    the instance, and what building it did to the interpreter."""

    state: State
    value: Value
    touched: dict[int, ast.AST]
    inlined: set[int]
    zeroed_added: dict[int, ast.AST]
    path_ends: bool
    create_graph_out: bool
    #: Building it neither read nor changed the ``create_graph`` fact: it is this ``self`` for
    #: both values of the fact.
    either_create_graph: bool


class SelfCache:
    """The ``self`` of each class (and first-parameter name, and ``create_graph`` fact) of one
    analysis of one file: it lives and dies with the interpreter."""

    def __init__(self) -> None:
        self.built: dict[SelfKey, BuiltSelf] = {}
        self._writes: dict[int, AttributeWrites] = {}

    def writes_in(self, tree: ast.Module) -> AttributeWrites:
        """The attribute writes of a module outside the ``__init__`` that builds an object (once per tree)."""
        found = self._writes.get(id(tree))
        if found is None:
            found = self._writes[id(tree)] = attribute_writes(tree)
        return found

    def entry_state(self, interp: EngineParts, ref: ClassRef, func: ast.FunctionDef | ast.AsyncFunctionDef, param: str,
                    state: State) -> tuple[State, Value]:
        """The state a method starts from once its first parameter ``param`` is bound to a new
        instance of ``ref`` (``state`` holds the module's names and ``param`` unknown), and
        that instance (unknown when ``__init__`` could not be interpreted)."""
        writes = self.writes_in(interp.entry.tree)
        if not ENABLED:
            value = build_instance(interp, ref, func, state)
            if isinstance(value, HeapRef):
                _weaken_written_elsewhere(interp, writes, value, state)
            return state, value
        create_graph = interp.run_state.create_graph_seen
        key: SelfKey = (ref.key, ref.is_module, ref.is_autograd_function, param, create_graph)
        built = self.built.get(key)
        if built is None:
            other = self.built.get((*key[:-1], not create_graph))
            if other is not None and other.either_create_graph:
                built = self.built[key] = other
        if built is None:
            built = self.built[key] = _build(interp, ref, func, state, writes)
        else:
            _redo_effects(interp, built)
        recording = interp.run_state.self_built
        if recording is not None:
            recording.append(built)  # the unit cache keeps its reads apart
        else:
            _merge_reads(interp, built.touched, built.inlined)
        out = built.state.copy()
        if isinstance(built.value, HeapRef) and built.value.oid in out.heap:
            instance = out.heap_write(built.value.oid)
            instance.site = func  # made "at" the method, as when built for it
            if recording is not None:
                # what the method reads of its `self`: the unit cache replays it after an edit of
                # `__init__` when those attributes are the same (:mod:`graphlife.analysis.self_reads`)
                reads = Reads()
                instance.attrs = ReadAttrs(instance.attrs, reads)
                recording.append(reads)
        return out, built.value


def build_instance(interp: EngineParts, ref: ClassRef, func: ast.stmt, state: State) -> Value:
    """Run ``__init__`` quietly on ``state``, from the method's definition; unknown when it
    cannot be interpreted."""
    stack = interp.run_state.stmt_stack
    stack.append(func)  # where `__init__` runs from: the method's own definition
    try:
        with interp.quiet():
            return interp.instantiate(ref, [], {}, state, func)
    except (Timeout, RecursionError):
        raise
    except Exception:  # noqa: BLE001
        return UNKNOWN
    finally:
        stack.pop()


def _build(interp: EngineParts, ref: ClassRef, func: ast.stmt, state: State, writes: AttributeWrites) -> BuiltSelf:
    run = interp.run_state
    outer_touched, outer_inlined, outer_ends = run.touched, run.unit_inlined, run.path_ends
    outer_foreign = run.foreign_steps  # a `self` has a budget of its own: built once, whichever unit asks
    outer_read, create_graph_in = run.create_graph_read, run.create_graph_seen
    zeroed_before = dict(run.zeroed_after)
    touched: dict[int, ast.AST] = {}
    inlined: set[int] = set()
    run.touched, run.unit_inlined, run.path_ends, run.foreign_steps = touched, inlined, False, 0
    run.create_graph_read = False
    try:
        value = build_instance(interp, ref, func, state)
        if isinstance(value, HeapRef):
            _weaken_written_elsewhere(interp, writes, value, state)
        built = BuiltSelf(
            state=state.copy(), value=value, touched=touched, inlined=inlined,
            zeroed_added={key: stmt for key, stmt in run.zeroed_after.items() if zeroed_before.get(key) is not stmt},
            path_ends=run.path_ends, create_graph_out=run.create_graph_seen,
            either_create_graph=not run.create_graph_read and run.create_graph_seen == create_graph_in,
        )
    finally:
        ends = run.path_ends
        run.touched, run.unit_inlined, run.path_ends = outer_touched, outer_inlined, outer_ends or ends
        run.foreign_steps = outer_foreign
        run.create_graph_read = outer_read or run.create_graph_read
    return built


def _weaken_written_elsewhere(interp: EngineParts, writes: AttributeWrites, instance: HeapRef, state: State) -> None:
    """A method analyzed alone may run after any other code of the file: each attribute that
    code assigns outside ``__init__`` may hold something else than what ``__init__`` made (a
    ``set()`` method, a forward hook writing ``self.features``). What they hold is weakened
    (:mod:`graphlife.analysis.unseen_writes`). So are the attributes that other files of the
    project may assign on the instance (``probe.captured = ...`` in ``train.py``): the project
    layer finds them, and counts those files as read.

    What is weakened depends only on the attribute names this file writes, not on the code that
    writes them, so that code is not noted as read (``touch``): the unit cache keys every unit on
    those names (``unit_cache._attribute_writes_key``). Noting it made every method of a class
    depend on every other method that assigns an attribute: an edit in any of them ran them all."""
    weaken_object(state, instance.oid, writes)
    obj = state.heap.get(instance.oid)
    if interp.modules is None or obj is None:
        return
    names = frozenset(name for name in obj.attrs if not name.startswith("__"))
    elsewhere = interp.modules.attribute_writes_elsewhere(names, _class_names(interp.entry.tree))
    if elsewhere.names or elsewhere.contents or elsewhere.any_name:
        weaken_object(state, instance.oid, elsewhere)


def _class_names(tree: ast.Module) -> frozenset[str]:
    """The classes the checked file defines (at its top level and in its ``if`` / ``try`` blocks)."""
    found: set[str] = set()
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, ast.ClassDef):
            found.add(stmt.name)
        elif isinstance(stmt, (ast.If, ast.Try)):
            pending.extend(stmt.body)
            pending.extend(stmt.orelse)
    return frozenset(found)


def _redo_effects(interp: EngineParts, built: BuiltSelf) -> None:
    interp.inlined.update(built.inlined)
    run = interp.run_state
    run.zeroed_after.update(built.zeroed_added)
    if not built.either_create_graph:
        run.create_graph_seen = built.create_graph_out
    if built.path_ends:
        run.path_ends = True


def _merge_reads(interp: EngineParts, touched: dict[int, ast.AST], inlined: set[int]) -> None:
    run = interp.run_state
    if run.touched is not None:
        run.touched.update(touched)
    if run.unit_inlined is not None:
        run.unit_inlined.update(inlined)
