"""Checkpoint regions: what the engine notes while it runs the function given to ``checkpoint``.

``torch.utils.checkpoint.checkpoint(fn, *args)`` runs ``fn`` now and again during backward (the
recomputation). torch restores its own random state for that second run (unless
``preserve_rng_state=False``), but nothing else: Python's ``random``, ``numpy.random`` and the
clock give other values, and state the first run wrote (``self.calls += 1``, a ``global``
counter) is read changed. Where such a value decides the control flow or a shape, the second
run is not the first (GL407).

While the engine runs ``fn`` it keeps a :class:`~graphlife.analysis.run_state.CheckpointRegion`
on the run state's stack (``RunState.checkpoints``, swapped with the rest of the run state).
Inside a region, and only there (outside, nothing here changes a value or sends an event):

- a call of a source that is not replayed (:data:`SOURCES`) gives a number tagged with where it
  comes from (:class:`~graphlife.analysis.values.Unreplayed` on ``Number.unreplayed``); reads of
  numbers held by attributes of objects and by globals are tagged with the state they read;
- arithmetic, comparisons and builtins carry the tags to their results (:func:`carry`), so a
  decision is about the value, however it was named or computed;
- writes of attributes and globals that the recomputation will not repeat (a value made from the
  state it replaces, or from a draw) are noted on every running region (:func:`note_write`);
- a tagged value that decides the control flow or a shape sends an
  :class:`~graphlife.analysis.events.UnreplayedDecisionEvent` (:func:`decide`): at once for a draw or
  the clock, and for state once the region writes it (a read before the write is decided when the
  region ends);
- with ``preserve_rng_state=False``, torch's random ops and dropout send an
  :class:`~graphlife.analysis.events.UnreplayedDrawEvent` (:func:`note_draw`).

Code the engine does not follow (a library, a function it cannot see) tags nothing: no finding.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from graphlife.analysis.engine_api import TorchEngine
from graphlife.analysis.events import UnreplayedDecisionEvent, UnreplayedDrawEvent
from graphlife.analysis.run_state import CheckpointRegion, PendingDecision
from graphlife.analysis.state import State
from graphlife.analysis.values import Number, Tri, TupleVal, Unreplayed, Value, replace

_RANDOM_SCALARS = (
    "random betavariate binomialvariate expovariate gammavariate gauss getrandbits lognormvariate "
    "normalvariate paretovariate randint randrange triangular uniform vonmisesvariate weibullvariate"
).split()
_NUMPY_SCALARS = "beta binomial exponential gamma geometric normal poisson rand randint randn random random_sample " \
                 "ranf sample uniform".split()
_CLOCKS = ("monotonic monotonic_ns perf_counter perf_counter_ns process_time process_time_ns thread_time "
           "thread_time_ns time time_ns").split()
#: Functions whose number a second run does not give again, by their qualified name: the module
#: the message names. (``random.choice`` picks an object of its argument: not a number.)
SOURCES: dict[str, str] = {
    **{f"random.{name}": "random" for name in _RANDOM_SCALARS},
    **{f"numpy.random.{name}": "numpy.random" for name in _NUMPY_SCALARS},
    **{f"time.{name}": "time" for name in _CLOCKS},
    "os.urandom": "os.urandom",
    "secrets.randbelow": "secrets",
    "secrets.randbits": "secrets",
}
#: torch's random ops and dropout: replayed only when the checkpoint restores torch's RNG state.
TORCH_RANDOM = frozenset({
    "torch.rand", "torch.randn", "torch.randint", "torch.rand_like", "torch.randn_like", "torch.randint_like",
    "torch.randperm", "torch.bernoulli", "torch.multinomial", "torch.normal", "torch.poisson",
    "torch.nn.functional.dropout", "torch.nn.functional.dropout1d", "torch.nn.functional.dropout2d",
    "torch.nn.functional.dropout3d", "torch.nn.functional.alpha_dropout", "torch.nn.functional.feature_alpha_dropout",
    "torch.dropout",
})
#: Dropout modules, by the class name the engine keeps on a library module.
DROPOUT_MODULES = frozenset({"nn.Dropout", "nn.Dropout1d", "nn.Dropout2d", "nn.Dropout3d", "nn.AlphaDropout",
                             "nn.FeatureAlphaDropout"})
#: Tensor methods whose positional arguments are sizes.
SHAPE_METHODS = frozenset({"view", "reshape", "expand", "repeat", "narrow", "split", "chunk", "new_zeros",
                           "new_ones", "new_empty", "new_full", "unflatten", "tile"})


def active(interp: TorchEngine) -> bool:
    """Does a checkpointed function run (at any depth)?"""
    return bool(interp.run_state.checkpoints)


def run_in_region(interp: TorchEngine, call: ast.Call, function: str, reentrant: Tri, restores_rng: bool,
                  run: Callable[[], Value]) -> Value:
    """Run the checkpointed function (``run``) inside a region of its own; the reads of state
    that the run wrote after reading are decided when it ends."""
    region = CheckpointRegion(call=call, function=function, reentrant=reentrant, restores_rng=restores_rng)
    regions = interp.run_state.checkpoints
    regions.append(region)
    try:
        return run()
    finally:
        regions.pop()
        for pending in region.pending:
            if pending.source.key in region.written:
                _send(interp, region, pending.source, pending.decided, pending.what, pending.stmt, pending.state)
        if regions:  # the outer region's writes include the inner one's
            regions[-1].written |= region.written


def source_value(interp: TorchEngine, name: str, call: ast.Call) -> Value | None:
    """A call of a source that a recomputation does not replay, inside a region: a number tagged
    with where it comes from (``None``: not such a call, or outside any region)."""
    origin = SOURCES.get(name)
    if origin is None or not active(interp):
        return None
    if origin == "numpy.random" and any(k.arg == "size" for k in call.keywords):
        return None  # an array, not a number
    return Number(None, frozenset({Unreplayed(id(call), origin, None, call)}))


def tag_read(interp: TorchEngine, value: Value, key: tuple[object, ...], site: ast.AST) -> Value:
    """A number read from state (an attribute of an object, a global) inside a region: tagged
    with that state, which the region may write."""
    if not isinstance(value, Number) or not active(interp):
        return value
    tag = Unreplayed(id(site), interp.text(site), key, site)
    return replace(value, unreplayed=value.unreplayed | {tag})


def note_write(interp: TorchEngine, key: tuple[object, ...], value: Value) -> None:
    """State written inside the running regions, when the recomputation will write another value:
    one made from that state itself (``self.calls += 1``) or from a draw or the clock. A value made
    from what the function was given (``self.n = x.size(1)``) is written again the same."""
    if not any(tag.key is None or tag.key == key for tag in tags_of(value)):
        return
    for region in interp.run_state.checkpoints:
        region.written.add(key)


def tags_of(value: Value) -> frozenset[Unreplayed]:
    """The sources a value (a number, or a tuple of them: the items of a slice) was made from."""
    if isinstance(value, Number):
        return value.unreplayed
    if isinstance(value, TupleVal):
        return frozenset().union(*(tags_of(item) for item in value.items))
    return frozenset()


def carry(result: Value, operands: Iterable[Value]) -> Value:
    """``result`` made from ``operands`` (arithmetic, a comparison, a builtin): a number keeps
    their sources."""
    if not isinstance(result, Number):
        return result
    tags = frozenset().union(*(tags_of(value) for value in operands))
    if not tags or tags <= result.unreplayed:
        return result
    return replace(result, unreplayed=result.unreplayed | tags)


def decide(interp: TorchEngine, value: Value, decided: ast.AST, what: str, state: State) -> None:
    """``value`` decides the control flow (``"flow"``) or a shape (``"shape"``) at ``decided``."""
    regions = interp.run_state.checkpoints
    if not regions:
        return
    tags = tags_of(value)
    if not tags:
        return
    region = regions[-1]
    stmt = interp.current_stmt()
    for source in sorted(tags, key=lambda tag: tag.site_id):
        if source.key is None or source.key in region.written:
            _send(interp, region, source, decided, what, stmt, state)
        else:
            region.pending.append(PendingDecision(source, decided, what, stmt, state))


def note_draw(interp: TorchEngine, draw: ast.AST, op: str, state: State) -> None:
    """torch drew random numbers (``op``) inside a region: a recomputation that does not restore
    torch's random state draws others."""
    regions = interp.run_state.checkpoints
    if not regions or regions[-1].restores_rng:
        return
    region = regions[-1]
    interp.emit(UnreplayedDrawEvent(
        stmt=interp.current_stmt(), state=state, checkpoint=region.call, function=region.function,
        reentrant=region.reentrant, restores_rng=region.restores_rng, draw=draw, op=op,
    ))


def _send(interp: TorchEngine, region: CheckpointRegion, source: Unreplayed, decided: ast.AST, what: str,
          stmt: ast.stmt, state: State) -> None:
    interp.emit(UnreplayedDecisionEvent(
        stmt=stmt, state=state, checkpoint=region.call, function=region.function, reentrant=region.reentrant,
        restores_rng=region.restores_rng, source=source, decided=decided, what=what,
    ))
