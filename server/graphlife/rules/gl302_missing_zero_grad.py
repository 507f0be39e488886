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

## Fix safety
Unsafe: `zero_grad()` at the top of the loop changes every step's update (the gradients
no longer accumulate); applied only with `--unsafe-fixes`.

## Fixture line
The `optimizer.step()` call.
"""

from __future__ import annotations

import ast

from graphlife.analysis.events import StepEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.recipes import UNSAFE, InsertBefore

RULE = Rule(
    code="GL302",
    name="missing-zero-grad",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__),
    torch_message="",
)

_SUM = ("so every step applies the sum of all earlier gradients. Call `optimizer.zero_grad()` at the top of each "
        "iteration.")
NEVER_RESET = MessageTemplate(
    "GL302.never-reset",
    "Gradients are never reset: `{step}` applies the new gradients on top of the ones `{earlier}` (line {line}) "
    "already used, " + _SUM,
)
NEVER_RESET_NO_STEP = MessageTemplate(
    "GL302.never-reset-no-step",
    "Gradients are never reset: `{step}` applies the new gradients on top of the ones an earlier step already "
    "used, " + _SUM,
)


@RULE.on(StepEvent)
def on_step(event: StepEvent, ctx: RuleContext) -> None:
    """The step uses gradients a backward added on top of ones an earlier step already used."""
    storages = event.storages
    if not storages:
        return
    statuses = [event.state.grads.get(s) for s in storages]
    if not all(st is not None and st[0] == "acc_stale" for st in statuses):
        return
    earlier_step = statuses[0][1] if statuses[0] is not None else None
    if earlier_step is not None:
        message = NEVER_RESET(step=ctx.text(event.call), earlier=ctx.text(earlier_step), line=ctx.line(earlier_step))
    else:
        message = NEVER_RESET_NO_STEP(step=ctx.text(event.call))
    loop = ctx.current_loop()
    fixes: list[FixRecipe] = []
    body = getattr(loop, "body", None)
    if loop is not None and isinstance(body, list) and body:
        receiver = _optimizer_text(ctx, event.stmt)
        if receiver:
            fixes.append(InsertBefore(title=f"Call `{receiver}.zero_grad()` at the top of the loop",
                                      applicability=UNSAFE, anchor=ctx.span(body[0]), code=f"{receiver}.zero_grad()"))
    related = ([Related(ctx.span(earlier_step), "an earlier step used these gradients")]
               if earlier_step is not None else [])
    ctx.report(RULE, ctx.span(event.stmt), message, related=related, fixes=fixes)


def _optimizer_text(ctx: RuleContext, stmt: ast.stmt) -> str:
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step":
            return ctx.text(node.func.value)
    return ""
