"""Objective measurements of what autograd keeps alive and what an optimizer applies.

Everything here *counts* what torch does while a fixture runs; nothing trusts the
fixture's own word. One :class:`Meter` (a ``TorchFunctionMode`` plus, optionally,
``saved_tensors_hooks`` and the global optimizer step hooks) watches a run:

Graph nodes
    ``grad_fn`` objects take no weak references, but an object registered with
    ``node.register_hook(marker)`` lives exactly as long as the node. Every node
    of every graph a torch function returns (walked through ``next_functions``,
    so nodes built inside C++ composites count too; ``AccumulateGrad`` nodes of
    leaves are skipped) gets one marker. Live markers = live graph nodes; a
    marker is also the node's post-hook, so it counts the node's executions in
    backward (``wasted`` nodes = nodes that died or survived without ever being
    executed by any backward: graphs built for nothing).

Saved tensors
    ``saved_tensors_hooks`` pack every saved tensor into a small weakly
    referenceable box; live boxes = saved tensors still held by some node. The
    box holds ``t.detach()`` (the same storage and version counter, but no
    ``grad_fn``: holding an *output* with its ``grad_fn`` would build a
    box -> tensor -> node -> box cycle that never dies). Two consequences, both
    harmless for the leak measurements and the reason a fixture's plain run is
    always checked separately: under pack hooks torch skips the in-place version
    check, and double backward through hooked nodes is not exact.
    ``mode="snapshot"`` packs a *clone* instead and unpacks that clone: backward
    then uses the values the forward saw, i.e. the known-correct gradient even
    when the fixture changed a saved tensor behind autograd's back (``.data``).

Backward calls
    ``Tensor.backward``, ``torch.autograd.backward`` and ``torch.autograd.grad``
    are intercepted: per call the graph size reachable from the roots, the nodes
    executed, the saved tensors it read that are still alive after it returned
    (``retain_graph=True`` kept them), whether a later backward reads them again
    (else the retention was for nothing), and every leaf's gradient after it.

Optimizer steps (``optim=True``)
    Each backward's contribution to each leaf's ``.grad`` is measured (after
    minus before). A leaf whose ``.grad`` is ``None`` or all zero when a
    backward starts has been zeroed: its running contribution restarts. At each
    ``optimizer.step()`` the gradient it applies (``p.grad``) is recorded next to
    the *fresh* gradient: the sum of the contributions since that parameter's
    previous step (for a parameter whose ``.grad`` is another leaf's gradient tensor,
    ``global_param._grad = local_param.grad``: that leaf's). A correct loop applies the fresh gradient (or a uniformly
    scaled-down copy of it: gradient clipping); ``zero_grad()`` between backward
    and step applies zeros; a loop that never zeroes applies stale gradients too.

Peaks are sampled after every intercepted torch call and every saved tensor,
so a leak shows even when the fixture's locals die with its ``main()``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import os
import runpy
import sys
import time
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.optim.optimizer as _optim_hooks
from torch.overrides import TorchFunctionMode

from oracle.runner import Outcome, WarningRecord, _fixture_frames, _state_leaks, reset_torch_state

_BACKWARDS = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad)
_GRAD_DESCRIPTOR = torch._C.TensorBase.__dict__["grad"]
_ACCUMULATE = "AccumulateGrad"
_MARK_KEY = "graphlife-oracle-meter"

# The phrases torch uses (checked under torch 2.13).
NONLEAF_GRAD_WARNING = "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"
CREATE_GRAPH_WARNING = "Using backward() with create_graph=True will create a reference cycle"


# --------------------------------------------------------------------------- records


@dataclass
class BackwardRecord:
    index: int
    kind: str  # "Tensor.backward", "autograd.backward", "autograd.grad"
    graph_size: int  # graph nodes reachable from the roots when the call started
    executed: int  # graph nodes the call executed
    retained: int  # saved tensors the call read that are still alive after it returned
    live_saved_after: int
    live_nodes_after: int
    leaf_grads: list[torch.Tensor | None] = field(default_factory=list, repr=False)  # in graph-walk order


@dataclass
class StepRecord:
    index: int
    optimizer: str
    applied: list[torch.Tensor | None] = field(repr=False)  # p.grad at the step, per parameter
    fresh: list[torch.Tensor | None] = field(repr=False)  # contributions since the parameter's last step
    update: list[torch.Tensor] = field(repr=False)  # parameter after - before

    @staticmethod
    def _flat(tensors: list[torch.Tensor | None], like: list[torch.Tensor | None]) -> torch.Tensor:
        parts = []
        for t, other in zip(tensors, like):
            ref = t if t is not None else other
            if ref is None:
                continue
            parts.append((t if t is not None else torch.zeros_like(other)).detach().reshape(-1).double())
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)

    def vectors(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._flat(self.applied, self.fresh), self._flat(self.fresh, self.applied)

    @property
    def fresh_norm(self) -> float:
        return float(self.vectors()[1].norm())

    @property
    def applied_norm(self) -> float:
        return float(self.vectors()[0].norm())

    def scale(self) -> float:
        """``s`` minimising ``|applied - s * fresh|`` (1.0 for a plain step, <1 after clipping, 0 after zero_grad)."""
        applied, fresh = self.vectors()
        denominator = float(fresh @ fresh)
        return float(applied @ fresh) / denominator if denominator else float("nan")

    def residual(self) -> float:
        """``|applied - s * fresh| / |fresh|``: what the step applies that the fresh gradient does not explain."""
        applied, fresh = self.vectors()
        norm = float(fresh.norm())
        if norm == 0.0:
            return float(applied.norm())
        return float((applied - self.scale() * fresh).norm()) / norm

    def applies_fresh_gradient(self, tol: float = 1e-4) -> bool:
        """The step applies the fresh gradient, possibly uniformly scaled down (clipping): 0 < s <= 1."""
        if self.fresh_norm == 0.0:
            return self.applied_norm == 0.0
        s = self.scale()
        return self.residual() <= tol and 0.0 < s <= 1.0 + tol

    def applies_nothing(self) -> bool:
        """Every gradient the step sees is None or zero while this step's backward produced some."""
        return self.fresh_norm > 0.0 and self.applied_norm == 0.0


@dataclass
class Measurement:
    """What one instrumented run of a fixture did."""

    outcome: Outcome
    globals_in: dict[str, Any]
    peak_saved: int = 0
    peak_nodes: int = 0
    nodes_created: int = 0
    torch_calls: int = 0
    wasted_nodes: int = 0  # never executed by any backward (dead or alive at the end)
    live_saved_end: int = 0  # after the fixture's namespace is dropped and gc ran
    live_nodes_end: int = 0
    live_leaves_end: int = 0  # leaf tensors (parameters, inputs) a backward reached, still alive after the run
    backwards: list[BackwardRecord] = field(default_factory=list)
    unneeded_retains: list[int] = field(default_factory=list)  # backward indices
    steps: list[StepRecord] = field(default_factory=list)
    nonleaf_grad_reads: list[tuple[bool, bool]] = field(default_factory=list)  # (retains_grad, read None)
    values: dict[str, Any] = field(default_factory=dict)  # selected fixture globals after the run

    def warned(self, fragment: str) -> bool:
        return any(fragment in w.message for w in self.outcome.warnings)

    def summary(self) -> str:
        executed = [b.executed for b in self.backwards]
        return (
            f"{self.globals_in or 'defaults'}: peak saved tensors {self.peak_saved}, peak graph nodes "
            f"{self.peak_nodes}, torch calls {self.torch_calls}, nodes built {self.nodes_created}, "
            f"never executed {self.wasted_nodes}, "
            f"alive after the run {self.live_nodes_end} nodes / {self.live_saved_end} saved / "
            f"{self.live_leaves_end} leaves, "
            f"{len(self.backwards)} backward calls (nodes executed: {_abbrev(executed)}), "
            f"{len(self.steps)} optimizer steps"
        )


def _abbrev(values: list[int]) -> str:
    if len(values) <= 8:
        return str(values)
    return f"[{', '.join(map(str, values[:4]))}, ..., {', '.join(map(str, values[-3:]))}]"


# --------------------------------------------------------------------------- the meter


class _Box:
    __slots__ = ("__weakref__", "retained_by", "t")

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t
        self.retained_by = -1


class _Marker:
    __slots__ = ("__weakref__", "hits", "meter")

    def __init__(self, meter: Meter) -> None:
        self.hits = 0
        self.meter = meter

    def __call__(self, *args: Any) -> None:
        self.hits += 1
        self.meter._executed += 1

    def __del__(self) -> None:
        if self.hits == 0:
            self.meter._wasted_dead += 1


def _tensors(value: Any) -> Iterable[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, torch.Tensor):
                yield item
            elif isinstance(item, (tuple, list)):
                yield from (t for t in item if isinstance(t, torch.Tensor))


class Meter(TorchFunctionMode):
    """Counts graph nodes, saved tensors, backward calls and optimizer steps while active.

    ``saved``: ``None`` (no pack hooks: torch's semantics untouched), ``"count"``
    or ``"snapshot"`` (see the module docstring). ``nodes``: mark graph nodes.
    ``optim``: record what every optimizer step applies.
    """

    def __init__(self, *, saved: str | None = "count", nodes: bool = True, optim: bool = False) -> None:
        super().__init__()
        if saved not in (None, "count", "snapshot"):
            raise ValueError(saved)
        self.saved_mode, self.track_nodes, self.track_optim = saved, nodes, optim
        self.saved_live: weakref.WeakSet[_Box] = weakref.WeakSet()
        self.node_live: weakref.WeakSet[_Marker] = weakref.WeakSet()
        self._token = object()  # this meter's mark in each node's metadata
        self._executed = 0
        self._wasted_dead = 0
        self.nodes_created = 0
        self.torch_calls = 0  # torch functions the fixture called (the work done, graphs or not)
        self.peak_saved = 0
        self.peak_nodes = 0
        self.backwards: list[BackwardRecord] = []
        self._in_backward = -1
        self._unpacked: list[weakref.ref[_Box]] = []
        self._needed: set[int] = set()
        self.steps: list[StepRecord] = []
        self._contrib: dict[int, torch.Tensor] = {}
        self._step_before: dict[
            int, tuple[list[torch.Tensor | None], list[torch.Tensor | None], list[torch.Tensor]]
        ] = {}
        self.nonleaf_grad_reads: list[tuple[bool, bool]] = []
        # leaves any backward reached (tensors hash by id only through this)
        self._leaves_seen: dict[int, weakref.ref[torch.Tensor]] = {}
        self._stack = contextlib.ExitStack()

    # -- context ------------------------------------------------------------
    def __enter__(self) -> Meter:
        self._warn_always = torch.is_warn_always_enabled()
        torch.set_warn_always(True)  # TORCH_WARN_ONCE warnings (create_graph) show in every run
        if self.saved_mode is not None:
            self._stack.enter_context(torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack))
        if self.track_optim:
            self._stack.callback(_optim_hooks.register_optimizer_step_pre_hook(self._pre_step).remove)
            self._stack.callback(_optim_hooks.register_optimizer_step_post_hook(self._post_step).remove)
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self._stack.close()
            torch.set_warn_always(self._warn_always)

    # -- saved tensors ------------------------------------------------------
    def _pack(self, t: torch.Tensor) -> _Box:
        with torch._C.DisableTorchFunction():
            box = _Box(t.detach().clone() if self.saved_mode == "snapshot" else t.detach())
        self.saved_live.add(box)
        self.peak_saved = max(self.peak_saved, len(self.saved_live))
        return box

    def _unpack(self, box: _Box) -> torch.Tensor:
        if self._in_backward >= 0:
            if box.retained_by >= 0 and box.retained_by != self._in_backward:
                self._needed.add(box.retained_by)
            self._unpacked.append(weakref.ref(box))
        return box.t

    # -- graph nodes --------------------------------------------------------
    def _mark(self, root: Any) -> int:
        """Mark every unmarked node reachable from ``root``; return how many were new."""
        new = 0
        stack = [root]
        while stack:
            node = stack.pop()
            if node is None or type(node).__name__ == _ACCUMULATE:
                continue
            meta = node.metadata  # a dict that lives in the C++ node: a stable "already marked" flag
            if meta.get(_MARK_KEY) is self._token:
                continue
            meta[_MARK_KEY] = self._token
            marker = _Marker(self)
            node.register_hook(marker)
            self.node_live.add(marker)
            new += 1
            stack.extend(next_node for next_node, _ in node.next_functions)
        self.nodes_created += new
        return new

    def _mark_outputs(self, result: Any) -> None:
        for t in _tensors(result):
            if t.grad_fn is not None:
                self._mark(t.grad_fn)

    @staticmethod
    def _walk(roots: Iterable[Any]) -> tuple[int, list[torch.Tensor]]:
        """Graph nodes reachable from ``roots`` (AccumulateGrad excluded) and the leaves they reach."""
        seen: set[int] = set()
        keep: list[Any] = []  # keep wrappers alive so ids stay unique during the walk
        leaves: list[torch.Tensor] = []
        stack = list(roots)
        count = 0
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            keep.append(node)
            if type(node).__name__ == _ACCUMULATE:
                leaves.append(node.variable)
                continue
            count += 1
            stack.extend(next_node for next_node, _ in node.next_functions)
        return count, leaves

    # -- torch function interception ---------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.torch_calls += 1
        if func in _BACKWARDS:
            return self._backward(func, args, kwargs)
        result = func(*args, **kwargs)
        if getattr(func, "__self__", None) is _GRAD_DESCRIPTOR and getattr(func, "__name__", "") == "__get__":
            tensor = args[0] if args else None
            if isinstance(tensor, torch.Tensor) and not tensor.is_leaf:
                self.nonleaf_grad_reads.append((bool(tensor.retains_grad), result is None))
            return result
        if self.track_nodes:
            self._mark_outputs(result)
            self.peak_nodes = max(self.peak_nodes, len(self.node_live))
        return result

    def _backward(self, func, args, kwargs):
        if func is torch.autograd.grad:
            kind = "autograd.grad"
            roots_arg = args[0] if args else kwargs.get("outputs")
        elif func is torch.autograd.backward:
            kind = "autograd.backward"
            roots_arg = args[0] if args else kwargs.get("tensors")
        else:
            kind = "Tensor.backward"
            roots_arg = args[0] if args else kwargs.get("self")
        roots = [t.grad_fn for t in _tensors(roots_arg) if t.grad_fn is not None]
        if self.track_nodes:
            for root in roots:
                self._mark(root)
        size, leaves = self._walk(roots)
        for leaf in leaves:
            self._leaves_seen.setdefault(id(leaf), weakref.ref(leaf))
        before: list[torch.Tensor | None] = []
        if self.track_optim:
            for leaf in leaves:
                grad = leaf.grad
                if grad is None or not bool(grad.detach().any()):
                    self._contrib.pop(id(leaf), None)  # zeroed since: its contribution restarts
                before.append(None if grad is None else grad.detach().clone())
        index = len(self.backwards)
        self._in_backward, self._unpacked = index, []
        executed_before = self._executed
        in_backward = self._measure_in_backward(leaves) if self.track_optim and kind != "autograd.grad" else []
        try:
            with torch._C.DisableTorchFunction():
                result = func(*args, **kwargs)
        finally:
            self._in_backward = -1
            for handle in in_backward:
                handle.remove()
        retained = [box for box in (ref() for ref in self._unpacked) if box is not None]
        for box in retained:
            box.retained_by = index
        self._unpacked = []
        record = BackwardRecord(
            index=index,
            kind=kind,
            graph_size=size,
            executed=self._executed - executed_before,
            retained=len(retained),
            live_saved_after=len(self.saved_live),
            live_nodes_after=len(self.node_live),
            leaf_grads=[None if leaf.grad is None else leaf.grad.detach().clone() for leaf in leaves],
        )
        self.backwards.append(record)
        if self.track_optim:
            for leaf, old in zip(leaves, before):
                grad = leaf.grad
                if grad is None or (in_backward and leaf.requires_grad):
                    continue  # measured as the backward handed it over
                delta = grad.detach() - old if old is not None else grad.detach().clone()
                self._contrib[id(leaf)] = self._contrib[id(leaf)] + delta if id(leaf) in self._contrib else delta
        if self.track_nodes and result is not None:
            self._mark_outputs(result)
        return result

    def _measure_in_backward(self, leaves: list[torch.Tensor]) -> list[Any]:
        """Each leaf's contribution measured as the backward hands it over, by a tensor hook
        registered last (it sees what the user's tensor hooks made of the gradient, which is what
        is accumulated): a hook may step (a post-accumulate-grad hook: the optimizer step fused
        into the backward) or zero (an old-style module backward hook) gradients inside the
        backward, where after-minus-before would see neither."""
        handles = []
        for leaf in leaves:
            if leaf.requires_grad:
                handles.append(leaf.register_hook(functools.partial(self._contribution, leaf)))
        return handles

    def _contribution(self, leaf: torch.Tensor, grad: torch.Tensor) -> None:
        with torch._C.DisableTorchFunction():
            held = leaf.grad
            if held is None or not bool(held.detach().any()):
                self._contrib.pop(id(leaf), None)  # zeroed since: its contribution restarts
            delta = grad.detach().clone()
            self._contrib[id(leaf)] = self._contrib[id(leaf)] + delta if id(leaf) in self._contrib else delta

    def unneeded_retains(self) -> list[int]:
        return [b.index for b in self.backwards if b.retained and b.index not in self._needed]

    # -- optimizer steps ----------------------------------------------------
    @staticmethod
    def _params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p for group in optimizer.param_groups for p in group["params"]]

    def _pre_step(self, optimizer, args, kwargs) -> None:
        with torch._C.DisableTorchFunction():
            params = self._params(optimizer)
            applied = [None if p.grad is None else p.grad.detach().clone() for p in params]
            fresh = [self._contrib.pop(id(self._grad_owner(p)), None) for p in params]
            self._step_before[id(optimizer)] = (applied, fresh, [p.detach().clone() for p in params])

    def _grad_owner(self, param: torch.Tensor) -> torch.Tensor:
        """The leaf whose backward contributions ``param``'s gradient holds: ``param`` itself, or,
        when its ``.grad`` is the very tensor another leaf's backward fills (``global_param._grad =
        local_param.grad``, the A3C pattern), that leaf."""
        grad = param.grad
        if grad is None or id(param) in self._contrib:
            return param
        for ref in self._leaves_seen.values():
            leaf = ref()
            if leaf is not None and leaf is not param and leaf.grad is grad:
                return leaf
        return param

    def _post_step(self, optimizer, args, kwargs) -> None:
        applied, fresh, before = self._step_before.pop(id(optimizer))
        with torch._C.DisableTorchFunction():
            update = [p.detach() - b for p, b in zip(self._params(optimizer), before)]
        self.steps.append(StepRecord(len(self.steps), type(optimizer).__name__, applied, fresh, update))

    # -- end of run ---------------------------------------------------------
    def live_leaves(self) -> int:
        return len({id(t) for t in (ref() for ref in self._leaves_seen.values()) if t is not None})

    def wasted_nodes(self) -> int:
        return self._wasted_dead + sum(1 for m in list(self.node_live) if m.hits == 0)


# --------------------------------------------------------------------------- running a fixture


def run_measured(
    path: str | os.PathLike[str],
    *,
    globals_in: dict[str, Any] | None = None,
    saved: str | None = "count",
    nodes: bool = True,
    optim: bool = False,
    keep: Iterable[str] = (),
    execute: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Measurement:
    """Run one fixture in process under a :class:`Meter`.

    ``globals_in`` become the fixture's initial globals (``runpy``'s
    ``init_globals``: the iteration-count protocol, e.g. ``{"STEPS": 6}``).
    ``keep`` names fixture globals whose values are copied into the result.
    The fixture's namespace is then dropped and ``gc.collect()`` runs before the
    "alive after the run" counts: what survives is unreachable garbage torch
    cannot free (reference cycles through C++), not what the fixture kept.

    ``execute(globals_in) -> namespace`` runs the code when it is not simply the
    script at ``path`` (default: ``runpy.run_path(path)`` as ``__main__``), e.g.
    ``runpy.run_module`` for a project a user runs as ``python -m pkg.train``;
    ``path`` then names the entry file (its frames are the outcome's frames).
    """
    path = os.fspath(Path(path).resolve())
    globals_in = dict(globals_in or {})
    outcome = Outcome(path=path)
    meter = Meter(saved=saved, nodes=nodes, optim=optim)
    values: dict[str, Any] = {}
    reset_torch_state()
    out, err = io.StringIO(), io.StringIO()
    saved_argv, sys.argv = sys.argv[:], [path]
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    with meter:
                        if execute is None:
                            namespace = runpy.run_path(path, init_globals=globals_in, run_name="__main__")
                        else:
                            namespace = execute(globals_in)
                    values = {name: namespace.get(name) for name in keep}
                    del namespace
                except BaseException as exc:  # recorded, like the plain runner does
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    outcome.exc_type = type(exc).__name__
                    outcome.exc_mro = tuple(cls.__name__ for cls in type(exc).__mro__)
                    outcome.exc_message = str(exc)
                    outcome.traceback = "".join(traceback.format_exception(exc))
                    outcome.frames = _fixture_frames(exc.__traceback__, path)
                    exc.__traceback__ = None
                    del exc
        outcome.warnings = tuple(
            WarningRecord(w.category.__name__, str(w.message), w.filename, w.lineno) for w in caught
        )
    finally:
        outcome.duration = time.perf_counter() - start
        sys.argv = saved_argv
        outcome.stdout, outcome.stderr = out.getvalue(), err.getvalue()
        outcome.state_leaks = tuple(_state_leaks())
        reset_torch_state()
    gc.collect()
    return Measurement(
        outcome=outcome,
        globals_in=globals_in,
        peak_saved=meter.peak_saved,
        peak_nodes=meter.peak_nodes,
        nodes_created=meter.nodes_created,
        torch_calls=meter.torch_calls,
        wasted_nodes=meter.wasted_nodes(),
        live_saved_end=len(meter.saved_live),
        live_nodes_end=len(meter.node_live),
        live_leaves_end=meter.live_leaves(),
        backwards=meter.backwards,
        unneeded_retains=meter.unneeded_retains(),
        steps=meter.steps,
        nonleaf_grad_reads=meter.nonleaf_grad_reads,
        values=values,
    )


def max_rel_diff(a: torch.Tensor | None, b: torch.Tensor | None) -> float:
    """``|a - b| / max(|a|, |b|, tiny)`` with ``None`` as zeros (0.0 for two ``None``)."""
    if a is None and b is None:
        return 0.0
    if a is None:
        a = torch.zeros_like(b)
    if b is None:
        b = torch.zeros_like(a)
    a, b = a.double(), b.double()
    scale = max(float(a.norm()), float(b.norm()), 1e-12)
    return float((a - b).norm()) / scale
