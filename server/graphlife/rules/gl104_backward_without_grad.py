"""Backward on a value that certainly has no graph.

## What it does
Reports a backward whose root cannot require grad: it was computed under
`torch.no_grad()` or `torch.inference_mode()`, cut off by `.detach()`,
re-wrapped from a Python number or array (`torch.tensor(loss.item())`,
`torch.from_numpy(...)`), computed by a model whose parameters are all frozen
from inputs that do not require grad, or is the result of a non-differentiable
op (`argmax`, comparisons). The message points at the place the graph was lost.

## Why is this bad?
There is no graph to backpropagate through, so nothing can receive a gradient.
Torch raises at the backward.

## What torch says
`RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn`

## Example
```python
with torch.no_grad():
    loss = criterion(model(x), y)
loss.backward()
```

## Use instead
```python
loss = criterion(model(x), y)
loss.backward()
```
Use `loss.item()` only for logging, after the backward; keep `no_grad` for
evaluation.

## Fixture line
The backward call that raises.
"""

from __future__ import annotations

from graphlife.analysis.events import BackwardEvent, EventContext
from graphlife.analysis.values import TensorVal, TupleVal
from graphlife.findings import Related, Severity
from graphlife.rules.base import Rule, RuleDoc

RULE = Rule(
    code="GL104",
    name="backward-without-grad",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__),
    torch_message="element 0 of tensors does not require grad and does not have a grad_fn",
)


def on_backward(event: BackwardEvent, ctx: EventContext) -> None:
    root = event.root
    first = root.items[0] if isinstance(root, TupleVal) and root.items else root
    if not isinstance(first, TensorVal) or first.requires_grad is not False:
        return
    name = ctx.text(event.root_expr) or "the tensor"
    reason = first.why or "it does not require grad"
    message = f"`{name}` has no graph to backpropagate through: {reason}. Torch raises at this backward."
    related = []
    if first.why_site is not None:
        related.append(Related(ctx.span(first.why_site), "the graph is lost here"))
    stmt = ctx.interpreter.blame(event.stmt, event.root_expr)
    ctx.interpreter.reporter.report(RULE, ctx.span(stmt), message, related=related)


RULE.hooks = {"backward": on_backward}
