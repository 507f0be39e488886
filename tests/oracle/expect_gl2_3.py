"""Runtime truth for GL201-GL205 (graphs kept alive) and GL301-GL305 (silently wrong gradients).

Each code registers an :class:`oracle.expectations.Expectation` whose ``run``
does the fixture's *plain* run (``oracle.runner.run_fixture``: torch's semantics
untouched, it must run clean) and then instrumented runs
(:func:`oracle.leaks.run_measured`), and whose checks compare *counts* from
those runs (see ``leaks.py`` for how they are measured). Nothing relies on the
fixture's own claims.

Fixture protocol (bad and good alike)
-------------------------------------
* ``STEPS = globals().get("STEPS", 4)`` near the top; the number of loop
  iterations (batches, chunks, epochs, evaluation batches) grows with it. The
  harness runs the fixture with ``init_globals={"STEPS": 3}`` and ``{"STEPS": 6}``
  (N and 2N) for the growth truths (GL201, GL203, GL204, GL205); the other codes
  run it with its default. A growth-code fixture that ignores ``STEPS`` fails
  (the number of torch calls it makes must grow with ``STEPS``).
* GL304 fixtures also read ``ACCUM_STEPS = globals().get("ACCUM_STEPS", 4)``
  (any default >= 2) and build every micro-batch as a ``BATCH // ACCUM_STEPS``
  slice of one logical batch, so that ``ACCUM_STEPS=1`` (the harness's reference
  run) takes one plain step on the same examples: the known-correct update.
* No dropout or batch norm where gradients are compared (GL3xx): the reference
  runs must see the same function.

Truths
------
GL201  N vs 2N: peak live graph nodes grow by >= 1 per extra iteration (bad) /
       peak nodes and peak saved tensors stay flat (good). A bad fixture is the
       *warning* shape when the peak of live saved tensors grows too (graphs
       never consumed by a backward), else the *information* shape (backward
       freed the activations, the nodes still pile up).
GL202  one backward (or more) whose saved tensors are still alive right after it
       returned (``retain_graph=True``) and that no later backward reads again
       (bad) / none such, and at least one backward (good).
GL203  N vs 2N: nodes executed by each successive backward strictly grow and the
       last backward of the 2N run executes more than that of the N run; peak
       live saved tensors grow (bad) / both flat (good).
GL204  torch's warning ``Using backward() with create_graph=True will create a
       reference cycle`` and graph nodes plus leaf tensors (parameters, inputs)
       still alive after the fixture's namespace is dropped and ``gc.collect()``
       ran: unreachable, uncollectable (bad) / none of these (good). Growth with
       STEPS (per-batch inputs with ``requires_grad``) is reported by
       :func:`gl204_leak_grows`, not required: with ``set_to_none`` every step
       only the last step's graph and the model survive.
GL205  N vs 2N: graph nodes that no backward ever executed ("built for
       nothing") > 0 and growing (bad) / 0 in both runs (good).
GL301  some ``optimizer.step()`` applies only None/zero gradients although the
       backward calls since that parameter's previous step produced non-zero
       ones (bad) / every step applies the fresh gradient, possibly uniformly
       scaled down by clipping (good).
GL302  some step applies more than the fresh gradient: the residual
       ``|applied - s*fresh| / |fresh|`` is > 1e-3 or ``s > 1`` (stale gradients
       of earlier steps) (bad) / as GL301 good.
GL303  torch's warning ``The .grad attribute of a Tensor that is not a leaf
       Tensor is being accessed`` and a ``.grad`` read of a non-leaf without
       ``retain_grad()`` that returned None (bad) / neither (good).
GL304  the first step's applied gradient is ``ACCUM_STEPS`` times the reference
       run's (``ACCUM_STEPS=1``) within 2% (bad) / equal to it within 2% (good).
GL305  the leaf gradients after every backward compared with a reference run in
       which saved tensors are snapshotted at forward time (the values autograd
       promises to use): some differ by > 1e-3 relative (bad) / all agree within
       1e-5 (good).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import torch

from fixturelib import Fixture
from oracle.expectations import register
from oracle.leaks import CREATE_GRAPH_WARNING, NONLEAF_GRAD_WARNING, Measurement, StepRecord, max_rel_diff, run_measured
from oracle.runner import Outcome, run_fixture

N_SMALL, N_LARGE = 3, 6
STEPS = "STEPS"
ACCUM = "ACCUM_STEPS"


@dataclass
class MeasuredOutcome(Outcome):
    """The plain run's outcome plus the instrumented runs, by name."""

    measures: dict[str, Measurement] = field(default_factory=dict, repr=False)


def _measuring_run(**specs: dict[str, Any]) -> Callable[[Fixture], Outcome]:
    def run(fixture: Fixture) -> Outcome:
        plain = run_fixture(fixture.path, subprocess=fixture.subprocess)
        outcome = MeasuredOutcome(**{f.name: getattr(plain, f.name) for f in fields(Outcome)})
        if plain.raised or plain.timed_out:
            return outcome  # the checks report it; measuring a crashing fixture means nothing
        for name, kwargs in specs.items():
            outcome.measures[name] = run_measured(fixture.path, **kwargs)
        return outcome

    return run


def _clean(fixture: Fixture, outcome: Outcome) -> list[str]:
    kind = "bad" if fixture.is_bad else "good"
    problems = []
    if outcome.raised or outcome.timed_out:
        problems.append(
            f"a {kind} {fixture.code} fixture must run clean (it leaks or goes wrong silently), "
            f"but {outcome.describe()}"
        )
    for name, m in getattr(outcome, "measures", {}).items():
        if m.outcome.raised:
            problems.append(f"the instrumented run '{name}' raised: {m.outcome.describe()}")
    if not problems and not getattr(outcome, "measures", None):
        problems.append("no instrumented run was made")
    return problems


def _check(body: Callable[[Fixture, MeasuredOutcome], list[str]]) -> Callable[[Fixture, Outcome], list[str]]:
    def check(fixture: Fixture, outcome: Outcome) -> list[str]:
        problems = _clean(fixture, outcome)
        if problems:
            return problems
        return body(fixture, outcome)  # type: ignore[arg-type]

    return check


def _loop_grows(small: Measurement, large: Measurement) -> list[str]:
    if large.torch_calls <= small.torch_calls:
        return [
            f"the fixture must let STEPS drive its loops (`STEPS = globals().get(\"STEPS\", 4)`): "
            f"with STEPS={N_SMALL} and {N_LARGE} it made {small.torch_calls} and {large.torch_calls} torch calls"
        ]
    return []


_GROWTH = {"small": {"globals_in": {STEPS: N_SMALL}}, "large": {"globals_in": {STEPS: N_LARGE}}}


def _pair(outcome: MeasuredOutcome) -> tuple[Measurement, Measurement, str]:
    small, large = outcome.measures["small"], outcome.measures["large"]
    return small, large, f"\n    N={N_SMALL}: {small.summary()}\n    2N={N_LARGE}: {large.summary()}"


# --------------------------------------------------------------------------- GL201


def gl201_shape(outcome: MeasuredOutcome) -> str:
    """``"warning"`` when live saved tensors grow with the iterations, else ``"information"``."""
    small, large, _ = _pair(outcome)
    return "warning" if large.peak_saved > small.peak_saved else "information"


def _gl201_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    small, large, details = _pair(outcome)
    problems = _loop_grows(small, large)
    if large.peak_nodes - small.peak_nodes < N_LARGE - N_SMALL:
        problems.append(f"expected the peak of live graph nodes to grow with the iterations, but it did not:{details}")
    return problems


def _gl201_good(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    small, large, details = _pair(outcome)
    problems = _loop_grows(small, large)
    if large.peak_nodes > small.peak_nodes or large.peak_saved > small.peak_saved:
        problems.append(f"expected live graph nodes and saved tensors to stay flat, but they grew:{details}")
    return problems


# --------------------------------------------------------------------------- GL202


def _gl202_details(m: Measurement) -> str:
    rows = ", ".join(f"#{b.index}:{b.kind} kept {b.retained}" for b in m.backwards[:12])
    return f"{m.summary()}; saved tensors kept alive after each backward: {rows}; unneeded: {m.unneeded_retains}"


def _gl202_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    m = outcome.measures["default"]
    if not m.unneeded_retains:
        return [
            "expected a backward whose saved tensors stay alive after it and are never read again: "
            + _gl202_details(m)
        ]
    return []


def _gl202_good(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    m = outcome.measures["default"]
    if not m.backwards:
        return ["a good GL202 fixture must call backward"]
    problems = []
    if m.unneeded_retains:
        problems.append(f"some backward kept saved tensors alive that no later backward read: {_gl202_details(m)}")
    if m.backwards[-1].retained:
        problems.append(f"the last backward left saved tensors alive: {_gl202_details(m)}")
    return problems


# --------------------------------------------------------------------------- GL203


def _gl203_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    small, large, details = _pair(outcome)
    problems = _loop_grows(small, large)
    executed = [b.executed for b in large.backwards]
    if len(executed) < 2 or any(b <= a for a, b in itertools.pairwise(executed)):
        problems.append(f"expected every backward to execute more graph nodes than the one before:{details}")
    if not small.backwards or large.backwards[-1].executed <= small.backwards[-1].executed:
        problems.append(
            f"expected the last backward of the 2N run to execute more nodes than that of the N run:{details}"
        )
    if large.peak_saved <= small.peak_saved:
        problems.append(f"expected the peak of live saved tensors to grow with the iterations:{details}")
    return problems


def _gl203_good(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    small, large, details = _pair(outcome)
    problems = _loop_grows(small, large)
    if not large.backwards:
        problems.append("a good GL203 fixture must call backward")
    elif max(b.executed for b in large.backwards) > max(b.executed for b in small.backwards):
        problems.append(f"expected the graph each backward executes to stay the same size:{details}")
    if large.peak_saved > small.peak_saved:
        problems.append(f"expected the peak of live saved tensors to stay flat:{details}")
    return problems


# --------------------------------------------------------------------------- GL204


def gl204_leak_grows(outcome: MeasuredOutcome) -> bool:
    small, large, _ = _pair(outcome)
    return large.live_nodes_end > small.live_nodes_end


def _gl204_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    small, large, details = _pair(outcome)
    problems = _loop_grows(small, large)
    if not (small.warned(CREATE_GRAPH_WARNING) and large.warned(CREATE_GRAPH_WARNING)):
        problems.append(f"expected torch's warning {CREATE_GRAPH_WARNING!r}, but {small.outcome.describe()}")
    if not (small.live_nodes_end and large.live_nodes_end and small.live_leaves_end and large.live_leaves_end):
        problems.append(
            "expected graph nodes and the tensors they hold to survive the fixture (reference cycle), "
            f"but they did not:{details}"
        )
    return problems


def _gl204_good(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    small, large, details = _pair(outcome)
    problems = _loop_grows(small, large)
    if small.warned(CREATE_GRAPH_WARNING) or large.warned(CREATE_GRAPH_WARNING):
        problems.append(f"torch warned {CREATE_GRAPH_WARNING!r}")
    if small.live_nodes_end or large.live_nodes_end or small.live_leaves_end or large.live_leaves_end:
        problems.append(f"graph nodes or leaf tensors survived the fixture:{details}")
    return problems


# --------------------------------------------------------------------------- GL205


def _gl205_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    small, large, details = _pair(outcome)
    if not 0 < small.wasted_nodes < large.wasted_nodes:
        return [f"expected graph nodes that no backward ever runs, more with more iterations:{details}"]
    return []


def _gl205_good(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    small, large, details = _pair(outcome)
    problems = _loop_grows(small, large)
    if small.wasted_nodes or large.wasted_nodes:
        problems.append(f"expected every graph node built to be used by a backward:{details}")
    return problems


# --------------------------------------------------------------------------- GL301 / GL302


def _steps_table(m: Measurement) -> str:
    rows = [
        f"step {s.index} ({s.optimizer}): |applied| {s.applied_norm:.3g}, |fresh| {s.fresh_norm:.3g}, "
        f"scale {s.scale():.3g}, residual {s.residual():.3g}"
        for s in m.steps[:10]
    ]
    return "\n    " + "\n    ".join(rows) if rows else " (no optimizer step)"


def _steps_good(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    m = outcome.measures["default"]
    if not m.steps:
        return ["a good fixture here must take optimizer steps"]
    wrong = [s.index for s in m.steps if not s.applies_fresh_gradient()]
    if wrong:
        return [f"steps {wrong} did not apply the gradient their backward calls produced:{_steps_table(m)}"]
    return []


def _gl301_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    m = outcome.measures["default"]
    if not any(s.applies_nothing() for s in m.steps):
        return [
            f"expected a step that applies only None/zero gradients after a backward produced some:{_steps_table(m)}"
        ]
    return []


def _gl302_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    m = outcome.measures["default"]
    stale = [s for s in m.steps if s.fresh_norm > 0 and (s.residual() > 1e-3 or s.scale() > 1 + 1e-3)]
    if not stale:
        return [
            "expected a step that applies stale gradients from earlier steps on top of the fresh one:"
            + _steps_table(m)
        ]
    return []


# --------------------------------------------------------------------------- GL303


def _gl303_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    m = outcome.measures["default"]
    problems = []
    if not m.warned(NONLEAF_GRAD_WARNING):
        problems.append(f"expected torch's warning {NONLEAF_GRAD_WARNING!r}, but {m.outcome.describe()}")
    if not any(not retains and is_none for retains, is_none in m.nonleaf_grad_reads):
        problems.append(f"expected a .grad read of a non-leaf tensor returning None; reads: {m.nonleaf_grad_reads}")
    return problems


def _gl303_good(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    m = outcome.measures["default"]
    problems = []
    if m.warned(NONLEAF_GRAD_WARNING):
        problems.append(f"torch warned {NONLEAF_GRAD_WARNING!r}")
    none_reads = [r for r in m.nonleaf_grad_reads if r[1]]
    if none_reads:
        problems.append(f"a .grad read of a non-leaf returned None: {none_reads}")
    return problems


# --------------------------------------------------------------------------- GL304


def _first_applied(m: Measurement) -> torch.Tensor | None:
    if not m.steps:
        return None
    step: StepRecord = m.steps[0]
    return StepRecord._flat(step.applied, step.applied)


def gl304_ratio(outcome: MeasuredOutcome) -> tuple[float, float, int]:
    """(scale of the first accumulated step against the reference step, residual, ACCUM_STEPS)."""
    m, ref = outcome.measures["default"], outcome.measures["reference"]
    k = m.values.get(ACCUM)
    a, r = _first_applied(m), _first_applied(ref)
    if a is None or r is None or a.numel() != r.numel() or float(r.norm()) == 0.0:
        return float("nan"), float("nan"), k
    s = float(a @ r) / float(r @ r)
    return s, float((a - s * r).norm()) / float(r.norm()), k


def _gl304(expected_factor: Callable[[int], float], what: str):
    def body(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
        s, residual, k = gl304_ratio(outcome)
        if not isinstance(k, int) or k < 2:
            return [f"the fixture must read `{ACCUM} = globals().get(\"{ACCUM}\", k)` with k >= 2 (got {k!r})"]
        want = expected_factor(k)
        if not (abs(s - want) <= 0.02 * want and residual <= 0.02):
            return [
                f"expected the first step to apply {what} (x{want:g}) of the reference gradient "
                f"(one plain step with {ACCUM}=1 on the same examples); it applied x{s:.4g} (residual {residual:.3g})"
            ]
        return []

    return body


# --------------------------------------------------------------------------- GL305


def gl305_max_diff(outcome: MeasuredOutcome) -> tuple[float, str]:
    observed, reference = outcome.measures["observed"], outcome.measures["reference"]
    if len(observed.backwards) != len(reference.backwards):
        return float("inf"), f"{len(observed.backwards)} backward calls vs {len(reference.backwards)} in the reference"
    worst, where = 0.0, "no backward"
    for ob, rb in zip(observed.backwards, reference.backwards):
        if len(ob.leaf_grads) != len(rb.leaf_grads):
            return float("inf"), f"backward {ob.index} reached {len(ob.leaf_grads)} leaves vs {len(rb.leaf_grads)}"
        for j, (og, rg) in enumerate(zip(ob.leaf_grads, rb.leaf_grads)):
            d = max_rel_diff(og, rg)
            if d > worst:
                worst, where = d, f"backward {ob.index}, leaf {j}"
    return worst, where


def _gl305_bad(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    diff, where = gl305_max_diff(outcome)
    if not outcome.measures["observed"].backwards:
        return ["a GL305 fixture must call backward"]
    if not diff > 1e-3:
        return [
            "expected gradients that differ from the forward-time reference; "
            f"worst relative difference {diff:.3g} ({where})"
        ]
    return []


def _gl305_good(fixture: Fixture, outcome: MeasuredOutcome) -> list[str]:
    diff, where = gl305_max_diff(outcome)
    if not outcome.measures["observed"].backwards:
        return ["a GL305 fixture must call backward"]
    if diff > 1e-5:
        return [f"gradients differ from the forward-time reference by {diff:.3g} ({where})"]
    return []


# --------------------------------------------------------------------------- registration

_DEFAULT = {"default": {}}
_STEPS_RUN = {"default": {"saved": None, "nodes": False, "optim": True}}

register(
    "GL201",
    _check(_gl201_bad),
    _check(_gl201_good),
    run=_measuring_run(**_GROWTH),
    summary="run clean; live graph nodes grow from N to 2N iterations",
)
register(
    "GL202",
    _check(_gl202_bad),
    _check(_gl202_good),
    run=_measuring_run(**_DEFAULT),
    summary="run clean; a backward keeps saved tensors alive that no later backward reads",
)
register(
    "GL203",
    _check(_gl203_bad),
    _check(_gl203_good),
    run=_measuring_run(**_GROWTH),
    summary="run clean; each backward executes a bigger graph, live saved tensors grow",
)
register(
    "GL204",
    _check(_gl204_bad),
    _check(_gl204_good),
    run=_measuring_run(**{k: {**v, "saved": None} for k, v in _GROWTH.items()}),
    summary=f"warn {CREATE_GRAPH_WARNING!r}; graph nodes survive the fixture",
)
register(
    "GL205",
    _check(_gl205_bad),
    _check(_gl205_good),
    run=_measuring_run(**{k: {**v, "saved": None} for k, v in _GROWTH.items()}),
    summary="run clean; graph nodes that no backward runs, more with more iterations",
)
register(
    "GL301",
    _check(_gl301_bad),
    _check(_steps_good),
    run=_measuring_run(**_STEPS_RUN),
    summary="run clean; a step applies None/zero gradients after a backward produced some",
)
register(
    "GL302",
    _check(_gl302_bad),
    _check(_steps_good),
    run=_measuring_run(**_STEPS_RUN),
    summary="run clean; a step applies stale gradients of earlier steps",
)
register(
    "GL303",
    _check(_gl303_bad),
    _check(_gl303_good),
    run=_measuring_run(default={"saved": None, "nodes": False}),
    summary=f"warn {NONLEAF_GRAD_WARNING!r} and read None",
)
register(
    "GL304",
    _check(_gl304(lambda k: float(k), f"{ACCUM} times")),
    _check(_gl304(lambda k: 1.0, "exactly one times")),
    run=_measuring_run(
        default={"saved": None, "nodes": False, "optim": True, "keep": (ACCUM,)},
        reference={"saved": None, "nodes": False, "optim": True, "globals_in": {ACCUM: 1}},
    ),
    summary="run clean; the accumulated step is ACCUM_STEPS times the big-batch step",
)
register(
    "GL305",
    _check(_gl305_bad),
    _check(_gl305_good),
    run=_measuring_run(
        observed={"saved": None, "nodes": False, "optim": True},
        reference={"saved": "snapshot", "nodes": False, "optim": True},
    ),
    summary="run clean; gradients differ from the forward-time reference",
)
