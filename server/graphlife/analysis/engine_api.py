"""What the parts of the engine ask of each other, as typed protocols below all of them.

Why: torch's semantics (:mod:`graphlife.analysis.torch_api`) run inside the
interpreter and call back into it (a fresh id, the source text of a node, an event, a
new list, a call of a function of the file); the shortcuts that share work between
runs (:mod:`~graphlife.analysis.isolation`, :mod:`~graphlife.analysis.self_cache`,
:mod:`~graphlife.analysis.call_memo`, :mod:`~graphlife.analysis.unit_cache`) drive it.
Written against the interpreter class, each imported the interpreter, which imports
them: a circle. Written against these protocols, each depends on what it uses, declared
here, and the interpreter (:mod:`graphlife.analysis.interpreter`) satisfies them:

- :class:`TorchEngine`: what an op, a module call or a backward asks while it runs;
- :class:`EngineParts`: what the interpreter's own parts (:mod:`graphlife.analysis.engine`)
  and its shortcuts ask of each other; the parts are written as subclasses of it;
- :class:`UnitRecorder`: what the engine asks of the language server's unit cache.

The rules see none of this: they read the engine through
:class:`graphlife.analysis.rule_api.RuleContext`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from graphlife.analysis.call_records import CallRecord, RecordedCall, Reopen
from graphlife.analysis.events import Event
from graphlife.analysis.grad_hooks import BackwardReach
from graphlife.analysis.modules import ModuleProvider, SourceModule
from graphlife.analysis.rule_api import Reporter
from graphlife.analysis.run_state import RunState
from graphlife.analysis.state import State
from graphlife.analysis.values import ClassRef, FunctionRef, HeapRef, TensorVal, Value


class Timeout(Exception):
    """The per-file time box ran out."""


@dataclass
class Flow:
    """Where control goes after a block: on, or out through break/continue/return."""

    normal: State
    breaks: list[State] = field(default_factory=list)
    continues: list[State] = field(default_factory=list)
    returns: list[tuple[State, Value]] = field(default_factory=list)


class ExpressionWatch(Protocol):
    """A witness of the values expressions take: the hover's stories (:mod:`graphlife.analysis.stories`)
    record, in one run of a file, what every name and attribute chain held each time it was
    evaluated or assigned; the interpreter calls it for each, and it keeps what it watches."""

    def saw(self, node: ast.AST, value: Value, state: State) -> None:
        """``node`` (an expression evaluated, or an assignment's target) took ``value`` in ``state``."""
        ...


class TorchEngine(Protocol):
    """What torch's semantics ask of the engine while an op, a module call or a backward runs."""

    run_state: RunState
    backward_count: int  # backwards run so far in the file (a loop's end counts those it saw)

    def fresh(self) -> int:
        """A new id for a storage or a heap object."""
        ...

    def text(self, node: ast.AST | None) -> str:
        """The source text of a node, shortened (empty for ``None``)."""
        ...

    def current_stmt(self) -> ast.stmt:
        """The innermost statement running (across inlined calls)."""
        ...

    def iteration(self) -> tuple[int, ...]:
        """The iteration index of each running loop, outermost first."""
        ...

    def emit(self, event: Event) -> None:
        """Send an event to the rules' hooks (unless the run is quiet)."""
        ...

    def eval_quiet(self, expr: ast.expr, state: State) -> Value:
        """The value of ``expr``, unknown when it cannot be interpreted."""
        ...

    def new_object(self, state: State, kind: str, site: ast.AST | None, *, cls: str = "",
                   class_ref: ClassRef | None = None, opt_storages: frozenset[int] | None = None) -> HeapRef:
        """A new heap object of ``kind`` made at ``site``, born in the running iteration."""
        ...

    def new_list(self, state: State, items: tuple[Value, ...], site: ast.AST, literal: bool) -> HeapRef:
        """A new list of ``items`` (its items known when ``literal`` and few)."""
        ...

    def iter_element(self, iterable: Value, state: State) -> Value:
        """What iterating over ``iterable`` gives (one value for every element)."""
        ...

    def known_items(self, value: Value, state: State, *, exact: bool = False) -> list[Value] | None:
        """The items of a tuple, or of a list whose contents are known (``exact``: on every path)."""
        ...

    def list_extend(self, state: State, ref: HeapRef, values: Value) -> None:
        """``ref.extend(values)`` on the heap."""
        ...

    def maybe_store(self, state: State, ref: HeapRef, value: Value, target: str, kind: str, *,
                    same_slot: bool = False) -> None:
        """A store event when a tensor with a graph goes into an object that outlives the iteration."""
        ...

    def note_module_call(self, ref: HeapRef, call: ast.AST) -> None:
        """A module is called: the running loops' ends will say so."""
        ...

    def note_opaque_call(self, call: ast.Call, args: list[Value], state: State) -> None:
        """A call the engine cannot follow is given these values (the rules hear of their graphs)."""
        ...

    def escape(self, values: list[Value], state: State, *, later: bool = True) -> None:
        """The functions among ``values`` are handed to code the engine does not follow."""
        ...

    def run_escaped(self, state: State) -> None:
        """Code the engine does not see runs here: escaped functions may run (their writes are weakened)."""
        ...

    def unseen_call(self, values: list[Value], state: State, receiver: Value | None = None) -> None:
        """A call the engine cannot follow is given ``values`` (and called on ``receiver``)."""
        ...

    def register_module_hook(self, module: HeapRef, method: str, args: list[Value], state: State,
                             site: ast.AST) -> Value:
        """``module.register_forward_hook(fn)`` and the like: the handle."""
        ...

    def ctx_method(self, ctx: HeapRef, name: str, args: list[Value], call: ast.Call, state: State) -> Value:
        """A method of an autograd Function's ``ctx`` (``save_for_backward``)."""
        ...

    def register_full_backward_hook(self, module: HeapRef, args: list[Value], state: State,
                                    site: ast.AST, method: str = "register_full_backward_hook") -> Value:
        """``module.register_full_backward_hook(fn)``: the handle."""
        ...

    def register_tensor_hook(self, tensor: TensorVal, args: list[Value], state: State, site: ast.AST) -> Value:
        """``t.register_hook(fn)``: the handle."""
        ...

    def register_post_accumulate_hook(self, tensor: TensorVal, args: list[Value], state: State,
                                      site: ast.AST) -> Value:
        """``leaf.register_post_accumulate_grad_hook(fn)``: the handle."""
        ...

    def run_post_accumulate_hooks(self, state: State, reach: BackwardReach, site: ast.AST) -> None:
        """A ``backward()`` runs the post-accumulate hooks of the leaves it filled."""
        ...

    def note_hooked_call(self, module: HeapRef, args: list[Value], output: Value, state: State,
                         site: ast.AST) -> None:
        """A module call: its full backward hooks run at a backward through its outputs."""
        ...

    def run_grad_hooks(self, state: State, reach: BackwardReach, site: ast.AST) -> None:
        """A backward runs the tensor hooks and module backward hooks its graph reaches."""
        ...

    def through_backward_hooks(self, module: HeapRef, value: Value, state: State, site: ast.AST) -> Value:
        """An input or output of ``module`` as torch hands it on when a full backward hook is registered."""
        ...

    def remove_hook(self, handle: HeapRef, state: State) -> Value:
        """``handle.remove()`` of a hook handle."""
        ...

    def run_pre_hooks(self, module: HeapRef, args: list[Value], state: State, site: ast.AST) -> list[Value]:
        """The module's forward pre-hooks: the arguments its forward gets."""
        ...

    def run_forward_hooks(self, module: HeapRef, args: list[Value], output: Value, state: State,
                          site: ast.AST) -> Value:
        """The module's forward hooks: the output its caller gets."""
        ...

    def find_method(self, ref: ClassRef, name: str, state: State,
                    depth: int = 0) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The method ``name`` of a class of the file (or of its bases in the file)."""
        ...

    def call_function(self, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State,
                      site: ast.AST) -> Value:
        """Call a function of the file: inlined, run apart, or unknown past the inlining depth."""
        ...


class UnitRecorder(Protocol):
    """What the engine asks of the language server's cache of units and calls
    (:class:`graphlife.analysis.unit_cache.UnitCache`)."""

    def run(self, engine: EngineParts, unit: ast.AST, run: Callable[[], None],
            current_self: Callable[[], object] | None = None) -> None:
        """Replay ``unit`` if nothing it read changed, else ``run()`` it and record it
        (``current_self``: builds the ``self`` a method analyzed alone starts from, a
        :class:`~graphlife.analysis.self_cache.BuiltSelf`)."""
        ...

    def read_definitions(self, engine: EngineParts) -> None:
        """Build the table of the module's names functions start from, noting the code it read."""
        ...

    def replay_call(self, engine: EngineParts, func: FunctionRef, args: list[Value], kwargs: dict[str, Value],
                    state: State, site: ast.AST) -> Value | Reopen | None:
        """A recorded call run apart, replayed (:data:`~graphlife.analysis.call_records.OPEN`: it
        was undone, inline it); ``None`` to run it."""
        ...

    def record_call(self, engine: EngineParts, func: FunctionRef, args: list[Value], kwargs: dict[str, Value],
                    state: State, site: ast.AST, record: CallRecord) -> RecordedCall | None:
        """Keep what a call run apart did; its entry, or ``None`` when it read code the cache cannot place."""
        ...


class EngineParts(TorchEngine, Protocol):
    """What the interpreter's parts and its shortcuts ask of each other: the file being
    analyzed, the facts kept for the whole file, and the entry points of each part."""

    # -- the file, and what is kept for all of it -------------------------------------------------
    tree: ast.Module  # of the module whose code runs (the file, or a module it imported)
    module: SourceModule  # the module whose code runs
    entry: SourceModule  # the file being checked
    modules: ModuleProvider | None  # the project's other modules (``None``: the file alone)
    star_sources: dict[str, list[str]]  # per module: the project's modules it star-imports
    foreign_budget: int  # statements of other modules the running unit may run
    reporter: Reporter
    parents: dict[int, ast.AST]
    rebound: dict[str, bool]  # names bound more than once in the file
    unit_cache: UnitRecorder | None
    inlined: set[int]  # functions analyzed by inlining somewhere (not analyzed alone then)
    inline_log: list[ast.AST]  # every function inlined so far, in order
    last_call_roots: list[Value]  # what the last inlined call's garbage collection kept
    emitted: int  # events emitted so far
    #: What the hover's stories record of each evaluation (``None``: no story is being told).
    watch: ExpressionWatch | None

    def swapped_run_state(self, run: RunState) -> AbstractContextManager[RunState]:
        """Run with ``run`` as the run state; the previous one is back after."""
        ...

    def quiet(self) -> AbstractContextManager[None]:
        """No rule sees the events of what runs inside."""
        ...

    def function_text(self, node: ast.AST) -> str | None:
        """The whole source text of a function (``None`` when its position is unknown)."""
        ...

    def local_names(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
        """The names a function binds (its locals)."""
        ...

    def is_generator(self, node: ast.AST) -> bool:
        """Does the function yield?"""
        ...

    def touch(self, node: ast.AST) -> None:
        """Note that the running unit read the code of ``node``."""
        ...

    # -- statements, expressions, assignment -------------------------------------------------------
    def exec_block(self, body: list[ast.stmt], state: State) -> Flow:
        """Run statements in order on ``state``; where control goes after them."""
        ...

    def exec_stmt(self, stmt: ast.stmt, state: State) -> Flow:
        """Run one statement (dispatched on its node class)."""
        ...

    def eval(self, expr: ast.expr | None, state: State) -> Value:
        """The value of an expression (dispatched on its node class); ``None`` is Python's ``None``."""
        ...

    def assign(self, target: ast.expr, value: Value, state: State, value_expr: ast.expr | None) -> None:
        """Bind ``value`` to an assignment target (name, unpacking, attribute, item)."""
        ...

    def apply_autograd_function(self, ref: ClassRef, args: list[Value], kwargs: dict[str, Value], state: State,
                                call: ast.Call) -> Value:
        """``Fn.apply(*args)`` of an autograd Function of the project."""
        ...

    def run_forward_alone(self, ref: ClassRef, forward: ast.FunctionDef | ast.AsyncFunctionDef,
                          state: State) -> None:
        """The forward of an autograd Function nothing applies, run as ``apply`` runs it, with abstract inputs."""
        ...

    def start_backward(self, ref: ClassRef, backward: ast.FunctionDef | ast.AsyncFunctionDef, state: State) -> None:
        """Bind the ctx and gradient parameters of a custom Function's backward analyzed alone."""
        ...

    def note_ctx_store(self, ctx: HeapRef, target: ast.Attribute, value: Value, state: State) -> None:
        """``ctx.attr = value`` in a custom Function: kept on the ctx for the rules."""
        ...

    def attribute_value(self, receiver: Value, expr: ast.Attribute, state: State) -> Value:
        """The attribute ``expr.attr`` of an evaluated value."""
        ...

    def lambda_function(self, expr: ast.Lambda, state: State) -> FunctionRef:
        """A lambda as a function (made once per lambda), with its closure."""
        ...

    def closure_of(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                   state: State) -> tuple[tuple[str, Value], ...]:
        """The values of the enclosing function's names that a nested function reads."""
        ...

    def class_ref(self, node: ast.ClassDef, state: State) -> ClassRef:
        """A class of the file, with what its bases make it (a module, an autograd function)."""
        ...

    def bind_definition(self, stmt: ast.stmt, name: str, value: Value, state: State) -> None:
        """Bind a name a definition or an import makes (in the table of globals when it can)."""
        ...

    # -- the project's other modules --------------------------------------------------------------
    def module_of(self, node: ast.AST) -> SourceModule:
        """The module whose code ``node`` is."""
        ...

    def in_module(self, module: SourceModule) -> AbstractContextManager[None]:
        """Run code of ``module``; the running module is back after."""
        ...

    def module_attribute(self, module_name: str, attr: str, state: State) -> Value:
        """``module.attr`` for a module of the project."""
        ...

    def is_project_module(self, name: str) -> bool:
        """Does ``name`` name a module of the project that the run imported?"""
        ...

    def preload_imports(self, state: State) -> None:
        """Run the bodies of the modules the file imports on ``state`` (once, for every unit)."""
        ...

    def star_name(self, name: str, state: State) -> Value | None:
        """A name of the running module that only one of its star imports may bind."""
        ...

    def resolve_imported(self, value: Value, state: State) -> Value:
        """What an imported name of the project is, at its first use on this path."""
        ...

    def foreign_globals(self, module: SourceModule, state: State) -> dict[str, Value]:
        """The names a function of ``module`` sees when called from another module."""
        ...

    # -- calls ------------------------------------------------------------------------------------
    def inline_call(self, func: FunctionRef, args: list[Value], kwargs: dict[str, Value], state: State,
                    site: ast.AST) -> Value:
        """Run the callee's body on the caller's state."""
        ...

    def instantiate(self, ref: ClassRef, args: list[Value], kwargs: dict[str, Value], state: State,
                    site: ast.AST) -> Value:
        """A new instance of a class of the file, its ``__init__`` run."""
        ...

    def collect_after_call(self, state: State, returned: list[Value], made_since: int | None = None) -> None:
        """Back from a call: drop what the callee made that nothing reaches, once the heap is large."""
        ...

    def collect_between_statements(self, state: State) -> None:
        """Between statements of the unit's own code: drop what nothing reaches, once the heap is large."""
        ...

    # -- loops ------------------------------------------------------------------------------------
    def container_birth(self, iterable: Value, state: State) -> int | None:
        """How many loops ran when the container being iterated was made."""
        ...

    def containers_indexed_by_target(self, loop: ast.For | ast.AsyncFor) -> tuple[str, ...]:
        """The containers the loop's body indexes with the loop's variable."""
        ...

    def next_element(self, element: Value, birth: int, state: State) -> None:
        """The loop goes on to another element of a container."""
        ...

    def next_element_of(self, container: Value | None, state: State) -> None:
        """:meth:`next_element` for a container indexed by the loop's variable."""
        ...

    def carried_names(self, node_ids: set[int], state: State) -> list[tuple[str, ast.AST]]:
        """Names (or ``self.attr``) that, at the top of the running loop, held graphs reaching ``node_ids``."""
        ...

    # -- units ------------------------------------------------------------------------------------
    def module_names(self) -> State:
        """The module-level names a function analyzed alone starts from (once per file)."""
        ...

    def definitions_table(self) -> dict[str, Value]:
        """The module's definitions bound once, by name, built apart from the running analysis."""
        ...
