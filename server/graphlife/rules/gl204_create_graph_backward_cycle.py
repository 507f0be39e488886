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

## Fixture line
The `.backward(create_graph=True)` call.
"""

from __future__ import annotations

from graphlife.analysis.events import BackwardEvent, EventContext
from graphlife.findings import Severity
from graphlife.rules.base import Rule, RuleDoc

RULE = Rule(
    code="GL204",
    name="create-graph-backward-cycle",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__),
    torch_message="Using backward() with create_graph=True will create a reference cycle",
)


def on_backward(event: BackwardEvent, ctx: EventContext) -> None:
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
    stmt = ctx.interpreter.blame(event.stmt, event.root_expr)
    ctx.interpreter.reporter.report(RULE, ctx.span(stmt), message, severity=severity)


RULE.hooks = {"backward": on_backward}
