"""Runtime truth of the GL4xx rules (custom autograd Functions, checkpointing) under torch.

Importing this module registers GL401-GL407 in :mod:`oracle.expectations`.

- GL402: `RuntimeError: function <Cls>Backward returned an incorrect number of
  gradients`, where `<Cls>` is the Function whose backward holds the marked return.
- GL404: `RuntimeError: Legacy autograd function with non-static forward method
  is deprecated`, raised by a statement that is marked or calls an instance
  bound on a marked line.
- GL406: `TypeError: save_for_backward can only save variables`, raised (when
  forward returns) at the `apply` of the Function whose forward holds the marked
  `ctx.save_for_backward(...)`.
- GL405: the checkpoint warnings (`use_reentrant parameter should be passed
  explicitly` / `None of the inputs have requires_grad=True`), or, for gradients
  asked through a reentrant checkpoint, torch's RuntimeError at the marked
  statement; good fixtures emit neither warning and run clean.
- GL401: while the fixture runs, every `Fn.apply` is observed: a bad fixture
  keeps one of the call's own input or output tensors as a ctx attribute, and
  replaying that call shows the harm objectively: an in-place change to that
  tensor before backward raises nothing and changes the gradient (with
  `save_for_backward` torch raises), and an output kept this way stays alive
  after its last reference is dropped while `gc` is disabled. Good fixtures keep
  no input or output tensor on ctx.
- GL403: the fixture runs twice: as written, with every custom backward
  watched for in-place changes of its `grad_output` (version counters), and as a
  reference with each backward given clones of its `grad_output`. A bad fixture
  changes `grad_output` in place and the gradients its optimizers step with
  differ from the reference; a good one changes none and steps with the same
  gradients.
- GL407: the fixture runs twice: as written, and as a reference with
  `torch.utils.checkpoint.checkpoint` replaced by a plain call of its function
  (nothing recomputed). A bad fixture's recomputation does not replay its forward:
  torch stops it (`CheckpointError`, a shape mismatch), or its optimizers step with
  other gradients than the reference's. A good one runs clean and steps with the
  same gradients.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.function import Function
from torch.optim.optimizer import register_optimizer_step_pre_hook

from fixturelib import Fixture
from oracle.expectations import Check, all_of, no_warning, raises, register, runs_clean
from oracle.runner import Outcome, run_fixture

# --------------------------------------------------------------------------- watching Function.apply


@contextlib.contextmanager
def watch_apply(observer: Callable[[type, tuple, dict, Any], None]):
    """Call ``observer(cls, args, kwargs, result)`` after every ``Function.apply`` while active."""
    original = Function.__dict__["apply"]

    def apply(cls, *args, **kwargs):
        result = original.__func__(cls, *args, **kwargs)
        observer(cls, args, kwargs, result)
        return result

    Function.apply = classmethod(apply)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Function.apply = original  # type: ignore[method-assign]


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    return []


def _node_of(result: Any):
    """The ctx / backward node of one ``apply`` (its outputs share it)."""
    for tensor in _tensors(result):
        if tensor.grad_fn is not None and hasattr(tensor.grad_fn, "_forward_cls"):
            return tensor.grad_fn
    return None


# --------------------------------------------------------------------------- GL401


@dataclass
class CtxTensor:
    """An ``apply`` call that kept one of its own inputs or outputs as ``ctx.<attr>``."""

    cls: type
    args: tuple
    kwargs: dict
    attr: str
    role: str  # "input" or "output"
    index: int


@dataclass
class CtxProbe:
    found: list[CtxTensor] = field(default_factory=list)

    def observe(self, cls: type, args: tuple, kwargs: dict, result: Any) -> None:
        node = _node_of(result)
        if node is None or any(f.cls is cls for f in self.found):
            return
        inputs = list(args) + list(kwargs.values())
        outputs = _tensors(result)
        for attr, value in vars(node).items():
            if not isinstance(value, torch.Tensor):
                continue
            for index, candidate in enumerate(inputs):
                if candidate is value:
                    self.found.append(CtxTensor(cls, args, kwargs, attr, "input", index))
                    return
            for index, candidate in enumerate(outputs):
                if candidate is value:
                    self.found.append(CtxTensor(cls, args, kwargs, attr, "output", index))
                    return


def _fresh(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        copy = value.detach().clone()
        return copy.requires_grad_(value.requires_grad) if copy.is_floating_point() or copy.is_complex() else copy
    return value


def _grads(cls: type, args: list, mutate: Callable[[list, list], None] | None) -> list[torch.Tensor | None]:
    outputs = cls.apply(*args)
    outs = [t for t in _tensors(outputs) if t.requires_grad]
    if mutate is not None:
        with torch.no_grad():
            mutate(args, _tensors(outputs))
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    # ones_like: a fresh gradient, so that a backward changing grad_output in place changes nothing here
    grads = torch.autograd.grad(outs, leaves, grad_outputs=[torch.ones_like(o) for o in outs], allow_unused=True)
    return list(grads)


def _bump(tensor: torch.Tensor) -> None:
    if tensor.dtype == torch.bool:
        tensor.logical_not_()
    else:
        tensor.add_(torch.ones_like(tensor)).mul_(2)


def demonstrate_ctx_tensor(found: CtxTensor) -> list[str]:
    """Replay the call: the in-place change goes unnoticed and changes the gradient; an output leaks without gc."""
    problems: list[str] = []
    args = [_fresh(a) for a in (*found.args, *found.kwargs.values())]
    reference = _grads(found.cls, [_fresh(a) for a in args], None)

    def mutate(call_args: list, outputs: list) -> None:
        _bump(call_args[found.index] if found.role == "input" else outputs[found.index])

    try:
        changed = _grads(found.cls, [_fresh(a) for a in args], mutate)
    except RuntimeError as exc:
        return [f"an in-place change to ctx.{found.attr} was detected by torch ({exc}); the rule's premise fails"]
    same = all(
        (a is None and b is None) or (a is not None and b is not None and torch.equal(a, b))
        for a, b in zip(reference, changed)
    )
    if same:
        problems.append(
            f"changing ctx.{found.attr} ({found.role} {found.index} of {found.cls.__name__}) in place before backward "
            f"did not change any gradient: the fixture's backward does not depend on it"
        )
    if found.role == "output":
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            outputs = found.cls.apply(*[_fresh(a) for a in args])
            ref = weakref.ref(_tensors(outputs)[found.index])
            del outputs
            alive = ref() is not None
        finally:
            if was_enabled:
                gc.enable()
        gc.collect()
        if not alive:
            problems.append(f"the output kept as ctx.{found.attr} was freed without the cyclic collector (no cycle)")
    return problems


_CTX_PROBES: dict[str, CtxProbe] = {}


def _run_gl401(fixture: Fixture) -> Outcome:
    probe = CtxProbe()
    _CTX_PROBES.clear()  # only the latest run is checked (the tensors it holds are small)
    _CTX_PROBES[str(fixture.path)] = probe
    return run_fixture(fixture.path, around=lambda: watch_apply(probe.observe))


def _gl401_bad(fixture: Fixture, outcome: Outcome) -> list[str]:
    problems = runs_clean()(fixture, outcome)
    probe = _CTX_PROBES.get(str(fixture.path), CtxProbe())
    if not probe.found:
        return [*problems, "no Function.apply kept one of its input or output tensors as a ctx attribute"]
    for found in probe.found:
        problems += demonstrate_ctx_tensor(found)
    return problems


def _gl401_good(fixture: Fixture, outcome: Outcome) -> list[str]:
    problems = runs_clean()(fixture, outcome)
    probe = _CTX_PROBES.get(str(fixture.path), CtxProbe())
    for found in probe.found:
        problems.append(f"{found.cls.__name__} keeps its {found.role} {found.index} as ctx.{found.attr}")
    return problems


# --------------------------------------------------------------------------- GL403


@dataclass
class GradRun:
    """One run of a fixture: the gradients every optimizer stepped with, and grad_output changes seen."""

    steps: list[list[torch.Tensor | None]] = field(default_factory=list)
    mutated: list[str] = field(default_factory=list)
    outcome: Outcome | None = None


@contextlib.contextmanager
def _watch_backwards(run: GradRun, clone: bool):
    patched: dict[type, Any] = {}

    def observe(cls: type, args: tuple, kwargs: dict, result: Any) -> None:
        if cls in patched:
            return
        original = cls.__dict__.get("backward")
        backward = cls.backward
        patched[cls] = original

        def wrapper(ctx, *grad_outputs):
            if clone:
                grad_outputs = tuple(g.clone() if isinstance(g, torch.Tensor) else g for g in grad_outputs)
            versions = [g._version if isinstance(g, torch.Tensor) else None for g in grad_outputs]
            result = backward(ctx, *grad_outputs)
            for index, (g, version) in enumerate(zip(grad_outputs, versions)):
                if isinstance(g, torch.Tensor) and g._version != version:
                    run.mutated.append(f"{cls.__name__}.backward changed grad_output {index} in place")
            return result

        cls.backward = staticmethod(wrapper)

    def record(optimizer, args, kwargs):
        run.steps.append(
            [
                None if p.grad is None else p.grad.detach().clone()
                for group in optimizer.param_groups
                for p in group["params"]
            ]
        )

    handle = register_optimizer_step_pre_hook(record)
    try:
        with watch_apply(observe):
            yield
    finally:
        handle.remove()
        for cls, original in patched.items():
            if original is None:
                del cls.backward
            else:
                cls.backward = original


_GRAD_RUNS: dict[str, tuple[GradRun, GradRun]] = {}


def _run_gl403(fixture: Fixture) -> Outcome:
    as_written, reference = GradRun(), GradRun()
    reference.outcome = run_fixture(fixture.path, around=lambda: _watch_backwards(reference, clone=True))
    as_written.outcome = run_fixture(fixture.path, around=lambda: _watch_backwards(as_written, clone=False))
    _GRAD_RUNS.clear()
    _GRAD_RUNS[str(fixture.path)] = (as_written, reference)
    return as_written.outcome


def _same_steps(a: GradRun, b: GradRun) -> bool:
    if len(a.steps) != len(b.steps):
        return False
    for left, right in zip(a.steps, b.steps):
        if len(left) != len(right):
            return False
        for x, y in zip(left, right):
            if (x is None) != (y is None) or (x is not None and not torch.equal(x, y)):
                return False
    return True


def _gl403_bad(fixture: Fixture, outcome: Outcome) -> list[str]:
    as_written, reference = _GRAD_RUNS[str(fixture.path)]
    problems = []
    if reference.outcome is not None and reference.outcome.raised:
        problems.append(f"the reference run (grad_output cloned) failed: {reference.outcome.describe()}")
    if outcome.raised:
        problems.append(f"a GL403 fixture runs (the gradients are silently wrong), but {outcome.describe()}")
    if not as_written.mutated:
        problems.append("no custom backward changed its grad_output in place")
    if not reference.steps:
        problems.append("no optimizer step was taken, so no gradient could be compared")
    elif _same_steps(as_written, reference):
        problems.append("the optimizers stepped with the same gradients as the reference: the change did no harm here")
    return problems


def _gl403_good(fixture: Fixture, outcome: Outcome) -> list[str]:
    as_written, reference = _GRAD_RUNS[str(fixture.path)]
    problems = runs_clean()(fixture, outcome)
    problems += as_written.mutated
    if not reference.steps:
        problems.append("no optimizer step was taken, so no gradient could be compared")
    elif not _same_steps(as_written, reference):
        problems.append("the optimizers stepped with other gradients than the reference (grad_output cloned)")
    return problems


# --------------------------------------------------------------------------- GL407


@contextlib.contextmanager
def _record_steps(run: GradRun, *, plain_checkpoint: bool):
    """Record the gradients of every optimizer step; with ``plain_checkpoint``, ``checkpoint(fn, *args)``
    just calls ``fn`` (the reference: the forward as written, nothing recomputed)."""
    import torch.utils.checkpoint as checkpointing

    original = checkpointing.checkpoint

    def plain(function, *args, use_reentrant=None, context_fn=None, determinism_check=None, debug=None,
              preserve_rng_state=True, **kwargs):
        return function(*args, **kwargs)

    def record(optimizer, args, kwargs):
        run.steps.append([None if p.grad is None else p.grad.detach().clone()
                          for group in optimizer.param_groups for p in group["params"]])

    if plain_checkpoint:
        checkpointing.checkpoint = plain
    handle = register_optimizer_step_pre_hook(record)
    try:
        yield
    finally:
        handle.remove()
        checkpointing.checkpoint = original


def _close_steps(a: GradRun, b: GradRun) -> bool:
    if len(a.steps) != len(b.steps):
        return False
    for left, right in zip(a.steps, b.steps):
        if len(left) != len(right):
            return False
        for x, y in zip(left, right):
            if (x is None) != (y is None) or (x is not None and not torch.allclose(x, y, rtol=1e-5, atol=1e-7)):
                return False
    return True


def _run_gl407(fixture: Fixture) -> Outcome:
    as_written, reference = GradRun(), GradRun()
    reference.outcome = run_fixture(fixture.path, around=lambda: _record_steps(reference, plain_checkpoint=True))
    as_written.outcome = run_fixture(fixture.path, around=lambda: _record_steps(as_written, plain_checkpoint=False))
    _GRAD_RUNS.clear()
    _GRAD_RUNS[str(fixture.path)] = (as_written, reference)
    return as_written.outcome


_RECOMPUTATION_ERRORS = ("A different number of tensors was saved", "Recomputed values for the following tensors",
                         "Mismatch in shape")


def _gl407_bad(fixture: Fixture, outcome: Outcome) -> list[str]:
    as_written, reference = _GRAD_RUNS[str(fixture.path)]
    if reference.outcome is not None and reference.outcome.raised:
        return [f"the reference run (checkpoint as a plain call) failed: {reference.outcome.describe()}"]
    if not reference.steps:
        return ["the reference took no optimizer step, so no gradient could be compared"]
    if outcome.raised:
        if any(text in outcome.exc_message for text in _RECOMPUTATION_ERRORS):
            return []
        return [f"expected torch to reject the recomputation, but {outcome.describe()}"]
    if _close_steps(as_written, reference):
        return ["the optimizers stepped with the same gradients as without checkpoint: the recomputation replayed"]
    return []


def _gl407_good(fixture: Fixture, outcome: Outcome) -> list[str]:
    as_written, reference = _GRAD_RUNS[str(fixture.path)]
    problems = runs_clean()(fixture, outcome)
    if not reference.steps:
        problems.append("the reference took no optimizer step, so no gradient could be compared")
    elif not _close_steps(as_written, reference):
        problems.append("the optimizers stepped with other gradients than without checkpoint")
    return problems


# --------------------------------------------------------------------------- GL402, GL404, GL406, GL405


def _class_of_line(source: str, line: int) -> str | None:
    best = None
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.ClassDef)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
            and (best is None or node.lineno > best.lineno)
        ):
            best = node
    return best.name if best else None


def _gl402_names_marked_class(fixture: Fixture, outcome: Outcome) -> list[str]:
    names = {_class_of_line(fixture.source, line) for line in fixture.lines_marked("GL402")}
    if not any(name and f"function {name}Backward returned" in outcome.exc_message for name in names):
        marked = sorted(filter(None, names))
        return [f"torch's error names another Function than the ones whose backward is marked ({marked})"]
    return []


def _gl404_raised_by_marked_instance(fixture: Fixture, outcome: Outcome) -> list[str]:
    """The raising statement is marked, or calls what a marked line bound (``f = Fn()`` ... ``f(x)``)."""
    from oracle.expectations import statement_start

    marked = set(fixture.lines_marked("GL404"))
    tree = ast.parse(fixture.source)
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno in marked:
            bound.update(ast.get_source_segment(fixture.source, t) for t in node.targets)
    lines = fixture.source.splitlines()
    for frame in outcome.frames:
        start = statement_start(fixture.source, frame.lineno)
        text = "\n".join(lines[start - 1 : (frame.end_lineno or frame.lineno)])
        if start in marked or any(name and f"{name}(" in text for name in bound):
            return []
    return ["torch raised, but not at a marked instantiation nor at a call of an instance bound on a marked line"]


def _gl406_raised_at_apply(fixture: Fixture, outcome: Outcome) -> list[str]:
    """torch checks the saved values when forward returns: the error surfaces at ``<marked class>.apply(...)``."""
    from oracle.expectations import statement_start

    names = {_class_of_line(fixture.source, line) for line in fixture.lines_marked("GL406")}
    if not outcome.frames:
        return ["no fixture frame on the traceback"]
    frame = outcome.frames[-1]
    lines = fixture.source.splitlines()
    text = "\n".join(lines[statement_start(fixture.source, frame.lineno) - 1 : frame.end_lineno or frame.lineno])
    if not any(name and f"{name}.apply(" in text for name in names):
        return [f"torch raised at line {frame.lineno}, which is not an apply of {sorted(filter(None, names))}"]
    return []


_REENTRANT_WARNINGS = (
    "use_reentrant parameter should be passed explicitly",
    "None of the inputs have requires_grad=True. Gradients will be None",
)


#: What torch raises when gradients are asked for through a reentrant checkpoint.
_REENTRANT_GRAD = "torch.utils.checkpoint is incompatible with .grad()"


def _gl405_bad(fixture: Fixture, outcome: Outcome) -> list[str]:
    if outcome.exc_type is not None and _REENTRANT_GRAD in outcome.exc_message:
        return raises(RuntimeError, _REENTRANT_GRAD)(fixture, outcome)  # the error case, at the marked statement
    problems = runs_clean()(fixture, outcome)
    if not any(
        w.category == "UserWarning" and any(t in w.message for t in _REENTRANT_WARNINGS) for w in outcome.warnings
    ):
        problems.append(
            f"expected torch's checkpoint warning ({' / '.join(_REENTRANT_WARNINGS)}), but {outcome.describe()}"
        )
    return problems


def _gl405_good() -> Check:
    return all_of(*(no_warning("UserWarning", text) for text in _REENTRANT_WARNINGS))


register(
    "GL401",
    _gl401_bad,
    _gl401_good,
    run=_run_gl401,
    summary="keep an apply's own input/output tensor as a ctx attribute; "
    "replay: in-place change undetected, gradient differs",
)
register(
    "GL402",
    all_of(
        raises(RuntimeError, "returned an incorrect number of gradients", at_marker=False),
        _gl402_names_marked_class,
    ),
    summary="RuntimeError: function <marked class>Backward returned an incorrect number of gradients",
)
register(
    "GL403",
    _gl403_bad,
    _gl403_good,
    run=_run_gl403,
    summary="change grad_output in place in backward; optimizer steps differ from the grad_output-cloned reference",
)
register(
    "GL404",
    all_of(
        raises(RuntimeError, "Legacy autograd function with non-static forward method is deprecated", at_marker=False),
        _gl404_raised_by_marked_instance,
    ),
    summary="RuntimeError: Legacy autograd function with non-static forward method is deprecated",
)
register(
    "GL405",
    _gl405_bad,
    _gl405_good(),
    summary="UserWarning: use_reentrant should be passed explicitly / None of the inputs have requires_grad=True",
)
register(
    "GL407",
    _gl407_bad,
    _gl407_good,
    run=_run_gl407,
    summary="the recomputation does not replay the forward: CheckpointError / shape mismatch, or optimizer steps "
    "differ from the same code without checkpoint",
)
register(
    "GL406",
    all_of(raises(TypeError, "save_for_backward can only save variables", at_marker=False), _gl406_raised_at_apply),
    summary="TypeError: save_for_backward can only save variables (at the apply of the marked Function)",
)
