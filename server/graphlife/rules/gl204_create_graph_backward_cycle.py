"""`.backward(create_graph=True)` makes a reference cycle between a tensor and its gradient.

## What it does
Reports `.backward(create_graph=True)` (and `torch.autograd.backward(...,
create_graph=True)`). Warning when the gradient lands on a leaf that is not a
parameter (a per-batch input with `requires_grad=True`) or on parameters whose
`.grad` is not reset to `None` each step; information when every reached
parameter's gradient is set to `None` by `zero_grad()` before the backward.

## Why is this bad?
With `create_graph=True` the `.grad` itself has a graph that references the
leaf, and the leaf references its `.grad`: the cycle keeps the graph, the input
and the gradient alive. Torch warns about it.

## What torch says
`UserWarning: Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient which can cause a memory leak.`

## Example
```python
x.requires_grad_()
loss = model(x).sum()
loss.backward(create_graph=True)
penalty = x.grad.pow(2).sum()
```

## Use instead
```python
(grad,) = torch.autograd.grad(loss, x, create_graph=True)
penalty = grad.pow(2).sum()
```
When the optimizer step needs the loss's own gradients too (a gradient
penalty trained with the loss), add the loss to the backward that follows:
`(loss + penalty).backward()`.

The quick fix makes these rewrites (a comprehension over a list of parameters
walks the returned gradients instead), and only where the engine can show the
program computes the same values: the `.grad` reads right after the backward
read gradients that were empty before it, and nothing else uses what the
backward used to leave in `.grad` before it is reset (docs/FIX_RECIPES.md).

## Fix safety
Safe: `torch.autograd.grad(..., create_graph=True)` is offered only where the engine
shows the program computes the same values (docs/FIX_RECIPES.md says how): the gradients are
returned instead of left in `.grad`, and every read of them is rewritten.

## Fixture line
The `.backward(create_graph=True)` call.
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

from graphlife.analysis.events import (
    BackwardEvent,
    GradReadEvent,
    StepEvent,
    UnitEndEvent,
    ZeroGradEvent,
)
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, Severity, Span
from graphlife.fixes.proofs import create_graph

RULE = Rule(
    code="GL204",
    name="create-graph-backward-cycle",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__),
    torch_message="Using backward() with create_graph=True will create a reference cycle",
)


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    create_graph.on_event(event, ctx)
    if event.kind != "backward" or event.create_graph is not True:
        return
    statuses = [event.state.grads.get(storage, ("", None))[0] for storage in event.leaves]
    all_reset = bool(statuses) and all(s == "zeroed_none" for s in statuses)
    severity = Severity.INFORMATION if all_reset else Severity.WARNING
    root = ctx.text(event.root_expr) or "the loss"
    message = (
        f"`backward(create_graph=True)` on `{root}` links each leaf and its `.grad` in a reference cycle that keeps "
        "the graph alive; use `torch.autograd.grad(..., create_graph=True)` to get the gradients instead."
    )
    if all_reset:
        message += " (Every parameter's `.grad` is set to None each step here, so torch frees them; still slower.)"
    stmt = ctx.blame(event.stmt, event.root_expr)
    report = (ctx.span(stmt), message, severity)
    # The fix is proven on what happens after this backward (fixes/proofs/create_graph.py): the
    # finding is then reported when the unit ends, with the fix when the proof holds.
    if not create_graph.on_create_graph_backward(ctx, event, report):
        ctx.report(RULE, *report[:2], severity=severity)


@RULE.on(UnitEndEvent)
def on_unit_end(event: UnitEndEvent, ctx: RuleContext) -> None:
    def report(span: Span, message: str, severity: Severity, fixes: list[FixRecipe]) -> None:
        ctx.report(RULE, span, message, severity=severity, fixes=fixes)

    create_graph.on_unit_end(ctx, event, report)


# The fix's proof follows every use of `.grad` after the backward.
RULE.on(GradReadEvent)(create_graph.on_event)
RULE.on(StepEvent)(create_graph.on_event)
RULE.on(ZeroGradEvent)(create_graph.on_event)
