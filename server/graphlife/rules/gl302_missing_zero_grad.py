"""A training loop that steps every iteration and never resets gradients.

## What it does
Follows each parameter's `.grad` through the loop: a backward accumulates into
it, a `step()` uses it, and nothing (`zero_grad()`, `p.grad = None`) resets it
before the next backward. Reports the `step()`. Gradient accumulation (zeroing
every k steps) is fine.

## Why is this bad?
`backward()` adds to `.grad`. Without a reset, each step uses the sum of every
earlier gradient: the effective learning rate grows and training diverges or
stalls - silently.

## What torch says
Nothing.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Use instead
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Fixture line
The `optimizer.step()` call.
"""

from __future__ import annotations

from graphlife.analysis.events import BackwardEvent, EventContext
from graphlife.findings import FixRecipe, Related, Severity
from graphlife.rules.base import Rule, RuleDoc

RULE = Rule(
    code="GL302",
    name="missing-zero-grad",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__),
    torch_message="",
)


def on_backward(event: BackwardEvent, ctx: EventContext) -> None:
    if not event.leaves:
        return
    statuses = [event.state.grads.get(s) for s in event.leaves]
    stale = [st for st in statuses if st is not None and st[0] == "acc_stepped"]
    if not stale or len(stale) != len(statuses):
        return
    step_stmt = stale[0][1]
    message = (
        f"Gradients are never reset: `{ctx.text(step_stmt)}` used them, and the backward at line {event.stmt.lineno} "
        "adds the next ones on top, so every step applies the sum of all earlier gradients. "
        "Call `optimizer.zero_grad()` at the top of each iteration."
    )
    loop = ctx.current_loop()
    fixes = []
    if loop is not None and getattr(loop, "body", None):
        receiver = _optimizer_text(ctx, step_stmt)
        if receiver:
            fixes.append(FixRecipe("insert_before", f"Call `{receiver}.zero_grad()` at the top of the loop",
                                   {"anchor": ctx.span(loop.body[0]), "code": f"{receiver}.zero_grad()"}))
    related = [Related(ctx.span(event.stmt), "the next backward accumulates on top")]
    ctx.interpreter.reporter.report(RULE, ctx.span(step_stmt), message, related=related, fixes=fixes)


def _optimizer_text(ctx, stmt) -> str:
    import ast  # noqa: PLC0415

    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step":
            return ctx.text(node.func.value)
    return ""


RULE.hooks = {"backward": on_backward}
