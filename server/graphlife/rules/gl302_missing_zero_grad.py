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

from graphlife.analysis.events import EventContext, StepEvent
from graphlife.findings import FixRecipe, Related, Severity
from graphlife.rules.base import Rule, RuleDoc

RULE = Rule(
    code="GL302",
    name="missing-zero-grad",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__),
    torch_message="",
)


def on_step(event: StepEvent, ctx: EventContext) -> None:
    """The step uses gradients a backward added on top of ones an earlier step already used."""
    storages = event.storages
    if not storages:
        return
    statuses = [event.state.grads.get(s) for s in storages]
    if not all(st is not None and st[0] == "acc_stale" for st in statuses):
        return
    earlier_step = statuses[0][1]
    message = (
        f"Gradients are never reset: `{ctx.text(event.call)}` applies the new gradients on top of the ones "
        f"{'`' + ctx.text(earlier_step) + '` (line ' + str(earlier_step.lineno) + ') already used' if earlier_step is not None else 'an earlier step already used'}, "
        "so every step applies the sum of all earlier gradients. Call `optimizer.zero_grad()` at the top of each iteration."
    )
    loop = ctx.current_loop()
    fixes = []
    if loop is not None and getattr(loop, "body", None):
        receiver = _optimizer_text(ctx, event.stmt)
        if receiver:
            fixes.append(FixRecipe("insert_before", f"Call `{receiver}.zero_grad()` at the top of the loop",
                                   {"anchor": ctx.span(loop.body[0]), "code": f"{receiver}.zero_grad()"}))
    related = [Related(ctx.span(earlier_step), "an earlier step used these gradients")] if earlier_step is not None else []
    ctx.interpreter.reporter.report(RULE, ctx.span(event.stmt), message, related=related, fixes=fixes)


def _optimizer_text(ctx, stmt) -> str:
    import ast  # noqa: PLC0415

    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step":
            return ctx.text(node.func.value)
    return ""


RULE.hooks = {"step": on_step}
