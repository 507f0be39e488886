"""Where one run of the engine is, and what it made and noted: the engine's run state, in one value.

Why one value: the engine runs code in three settings besides the file's own run
(the module body, then each function analyzed alone, one after the other): a call
analyzed apart from its caller (:mod:`graphlife.analysis.isolation`), such a call run
again alone by the language server's cache (:mod:`graphlife.analysis.unit_cache`), and
the quiet build of the table of the module's definitions. Each starts from a run state
of its own and gives the caller's back when it ends
(``Interpreter.swapped_run_state``): a field added here is swapped with the others,
where three hand-written lists of fields had to be kept in step before.

What is here is *per run*. What is *per file* stays on the interpreter: the code and
its indexes, the rules' hooks, the reporter, the caches of work shared between runs
(the ``self`` of each class, the memo of calls, the unit cache), the functions
inlined anywhere in the file (they are not analyzed alone), and two counters (events
emitted, backwards run). A run ends with what it hands back to its caller written
out by the code that started it (a call run apart hands back its path end, the
``create_graph`` fact and the writes made under ``no_grad``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

from graphlife.analysis.state import GraphStore, State
from graphlife.analysis.values import HeapRef, Tri, Unreplayed, Value


@dataclass
class CallFrame:
    """An inlined call: the call expression, the caller's statement, the callee's parameter names."""

    call: ast.Call | None
    stmt: ast.stmt
    params: list[str]
    bound: bool  # the first parameter is `self`, bound by the call


@dataclass
class PendingDecision:
    """A value read from state (``self.n``) decided the control flow or a shape inside a
    checkpoint region before the region wrote that state: it matters if the region writes it later."""

    source: Unreplayed
    decided: ast.AST
    what: str  # "flow" | "shape"
    stmt: ast.stmt
    state: State


@dataclass
class CheckpointRegion:
    """A ``checkpoint(fn, ...)`` (or ``checkpoint_sequential``) whose function the engine runs now:
    how torch will run it again during backward, and what the run wrote so far."""

    call: ast.Call
    function: str  # what the messages call the function run (`Block.forward`, `mixer`, `lambda`)
    reentrant: Tri
    restores_rng: bool  # `preserve_rng_state` (torch restores its own RNG state for the recomputation)
    #: The state the run wrote (``("attr", object id, name)``, ``("global", name)``).
    written: set[tuple[object, ...]] = field(default_factory=set)
    pending: list[PendingDecision] = field(default_factory=list)


@dataclass
class RunState:
    """Every mutable fact of one run of the engine (see the module's docstring)."""

    # -- where the run is (innermost last, across inlined calls) ---------------------------------
    stmt_stack: list[ast.stmt] = field(default_factory=list)
    frames: list[CallFrame] = field(default_factory=list)  # the inlined calls
    call_stack: list[int] = field(default_factory=list)  # keys of the inlined functions (recursion guard)
    loop_stack: list[tuple[ast.AST, int]] = field(default_factory=list)  # (loop node, iteration index)
    #: Per running loop (and comprehension): the state at the top of the running iteration.
    loop_entry_envs: list[tuple[ast.AST, State]] = field(default_factory=list)
    loop_pre_states: list[State] = field(default_factory=list)  # the state before each running loop started
    #: Per running loop: the modules called in it (heap reference, call), for the loop's end.
    module_calls: list[list[tuple[HeapRef, ast.AST]]] = field(default_factory=list)
    yielded: list[list[Value]] = field(default_factory=list)  # per generator being inlined: what it yields
    current_unit: ast.AST | None = None  # the unit running (module or function analyzed alone)
    import_stack: list[str] = field(default_factory=list)  # the project's modules whose body runs
    #: The names of each caller suspended in an inlined call or a module body (innermost last):
    #: what they hold is alive while the callee runs (a callee of another module sees none of it).
    caller_envs: list[Mapping[str, Value]] = field(default_factory=list)
    #: Imported names being resolved (module, name): a cycle of re-exports ends unknown.
    resolving: set[tuple[str, str]] = field(default_factory=set)
    #: The checkpoints whose function runs (innermost last): a recomputation will run it again
    #: (:mod:`graphlife.analysis.checkpoint_regions`).
    checkpoints: list[CheckpointRegion] = field(default_factory=list)

    # -- what it sees ------------------------------------------------------------------------------
    #: The module's imports, functions and classes bound once (not in every state: copying and
    #: joining states then costs nothing for them), as far as the run has bound them.
    globals: dict[str, Value] = field(default_factory=dict)
    emitting: bool = True  # rules see its events (off for quiet evaluations: the definitions)
    #: A ``backward(create_graph=True)`` ran (then a ``.grad`` has a graph of its own).
    create_graph_seen: bool = False
    #: Backward hooks running (nested), each with gradients off because its backward did not
    #: create a graph: why a tensor made there has none (GL104's message).
    hooks_without_grad: int = 0
    #: Post-accumulate-grad hooks running (nested): an optimizer step there is fused into the backward.
    post_accumulate_hooks: int = 0
    #: The graph nodes of the backwards whose hooks are running (a backward a hook runs is nested
    #: in them: they go on through their graph after it).
    running_backwards: list[frozenset[int]] = field(default_factory=list)
    #: Something read ``create_graph_seen`` to decide a value (a ``.grad``): what ran since this was
    #: last cleared depends on that fact (the ``self`` of a class is shared by both values of it
    #: when building it read nothing of it: :mod:`graphlife.analysis.self_cache`).
    create_graph_read: bool = False

    # -- what it made -------------------------------------------------------------------------------
    graph: GraphStore = field(default_factory=GraphStore)
    next_id: int = 1  # the last id handed out for a storage or a heap object
    heap_live: int = 0  # heap objects alive after the last collection (the next waits for twice as many)
    #: Statements of the project's other modules run so far in the running unit (or ``self``
    #: build): past :data:`~graphlife.analysis.engine.imports.FOREIGN_BUDGET`, their calls are unknown.
    foreign_steps: int = 0
    zeroed_after: dict[int, ast.AST] = field(default_factory=dict)  # zero_grad statement -> the backward it cleared
    #: Parameter storage -> the storages whose gradient tensor its ``.grad`` is
    #: (``global_param._grad = local_param.grad``): a step on it uses, and a ``zero_grad`` in place
    #: resets, that tensor; setting its ``.grad`` to None ends the sharing.
    grad_shares: dict[int, frozenset[int]] = field(default_factory=dict)

    # -- what it noted ------------------------------------------------------------------------------
    #: While a custom Function's backward runs as a unit: what each of its own ``return``
    #: statements gave (not those of the calls it inlines).
    backward_returns: list[tuple[ast.Return, Value, State]] | None = None
    path_ends: bool = False  # an inlined call never returns (it raised): the statement ends the path
    #: What rules remember while a unit runs (pending findings decided at its end), by the rule's class.
    rule_data: dict[type, object] = field(default_factory=dict)
    #: Statements on the way to an in-place write made with gradients off, in the running unit (a
    #: ``no_grad`` around them matters: GL104's fix leaves it). Kept with the nodes.
    no_grad_writes: dict[int, ast.AST] = field(default_factory=dict)
    #: While the unit cache records: the functions and classes of the file whose code the run read,
    #: and the functions it inlined (``None``: not recording).
    touched: dict[int, ast.AST] | None = None
    unit_inlined: set[int] | None = None
    #: While the unit cache records a unit: the ``self`` builds it started from
    #: (:class:`~graphlife.analysis.self_cache.BuiltSelf`), whose reads it keeps apart from the
    #: unit's own (``None``: their reads count as the unit's).
    self_built: list[object] | None = None
    #: Storages of values that may not be tensors (an input of a custom Function analyzed without
    #: its callers) which the run used where only a tensor works (a tensor method or attribute, the
    #: tensor argument of a torch op, ``@``, ``save_for_backward``): had they not been tensors, torch
    #: would have raised there, so they are tensors (``RuleContext.is_tensor``).
    tensor_uses: set[int] = field(default_factory=set)

    def in_loop(self) -> bool:
        """Does a loop (or comprehension, or generator being inlined) run, at any depth?"""
        return bool(self.loop_stack or self.loop_entry_envs or self.loop_pre_states or self.yielded)
