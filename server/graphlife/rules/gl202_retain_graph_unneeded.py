"""`retain_graph=True` on a backward after which nothing backpropagates through that graph again.

## What it does
Remembers every backward with `retain_graph=True` and reports those whose graph
no later backward (or `torch.autograd.grad`) reaches.

## Why is this bad?
Retaining keeps every saved activation of the graph alive until the last
reference to its output dies - memory for nothing, and often a sign that the
argument was added to silence GL101 instead of fixing the graph.

## What torch says
Nothing.

## Example
```python
loss.backward(retain_graph=True)
optimizer.step()
```

## Use instead
```python
loss.backward()
optimizer.step()
```

## Fixture line
The backward call with the unneeded `retain_graph=True`.
"""

from __future__ import annotations

from graphlife.analysis.events import BackwardEvent, EventContext, UnitEndEvent
from graphlife.findings import FixRecipe, Severity
from graphlife.rules.base import Rule, RuleDoc

RULE = Rule(
    code="GL202",
    name="retain-graph-unneeded",
    severity=Severity.INFORMATION,
    doc=RuleDoc(__doc__),
    torch_message="",
)


def on_backward(event: BackwardEvent, ctx: EventContext) -> None:
    record = ctx.interpreter.rule_data.setdefault("gl202_backwards", [])
    record.append((event, event.stmt))  # the argument to drop is written here


def on_unit_end(event: UnitEndEvent, ctx: EventContext) -> None:
    backwards = ctx.interpreter.rule_data.pop("gl202_backwards", [])
    needed: set[int] = set()
    for index, (current, stmt) in enumerate(backwards):
        if current.retain_graph is not True or not current.may:
            continue
        later = any(
            (other.may & current.may)
            # a later backward on a value we could not interpret may well reach it
            or not other.may
            for other, _ in backwards[index + 1:]
        )
        if later:
            needed.add(id(stmt))
    reported = set()
    for current, stmt in backwards:
        if current.retain_graph is not True or not current.may or id(stmt) in needed or id(stmt) in reported:
            continue
        if current.create_graph is True:
            continue  # higher-order gradients need the graph kept (torch measures it retained and used)
        if not any(ctx.graph.nodes[n].saves_certain for n in current.may):
            continue
        reported.add(id(stmt))
        message = (
            f"`retain_graph=True` keeps the graph of `{ctx.text(current.root_expr) or 'this backward'}` alive, "
            "but no later backward goes through it: drop the argument to free the saved activations now."
        )
        fixes = [FixRecipe("drop_keyword", "Remove `retain_graph=True`", {"call": ctx.span(current.call), "keyword": "retain_graph"})]
        ctx.interpreter.reporter.report(RULE, ctx.span(stmt), message, fixes=fixes)


RULE.hooks = {"backward": on_backward, "unit_end": on_unit_end}
