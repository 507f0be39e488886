"""A loop runs the model forward, never calls backward, and records graphs for nothing.

## What it does
Reports a loop that calls a model while gradients are on, never calls
backward, and whose graphs no later backward uses - in evaluation code (the
model was put in `eval()` mode, or the loop is in a function whose name says
evaluate / validate / test / predict / infer).

## Why is this bad?
Every forward records a graph and saves activations for a backward that never
comes: slower, and more memory, for nothing.

## What torch says
Nothing.

## Example
```python
model.eval()
for x, y in val_loader:
    correct += (model(x).argmax(1) == y).sum().item()
```

## Use instead
```python
model.eval()
with torch.inference_mode():
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
```
(`torch.no_grad()` when the results feed a later graph.)

## Fixture line
The `for`/`while` line of the loop.
"""

from __future__ import annotations

import re

from graphlife.analysis.events import BackwardEvent, EventContext, LoopEndEvent, UnitEndEvent
from graphlife.findings import FixRecipe, Severity
from graphlife.rules.base import Rule, RuleDoc

RULE = Rule(
    code="GL205",
    name="eval-without-no-grad",
    severity=Severity.INFORMATION,
    doc=RuleDoc(__doc__),
    torch_message="",
)

EVAL_NAME = re.compile(r"(eval|valid|test|predict|infer)", re.I)


def on_loop_end(event: LoopEndEvent, ctx: EventContext) -> None:
    interp = ctx.interpreter
    if event.backwards or event.last_node <= event.first_node or event.state.grad_enabled is not True:
        return
    nodes = range(event.first_node, event.last_node)
    if not any(ctx.graph.nodes[n].leaves for n in nodes):
        return  # no parameter took part: no model forward with gradients
    in_eval = any(event.state.heap.get(ref.oid) is not None and event.state.heap[ref.oid].extra.get("training") is False
                  for ref, _ in event.module_calls)
    function = interp.enclosing_function(event.loop)
    named = function is not None and EVAL_NAME.search(function.name) is not None
    if not (in_eval or named):
        return
    pending = interp.rule_data.setdefault("gl205_pending", [])
    pending.append((event.loop, set(nodes)))


def on_backward(event: BackwardEvent, ctx: EventContext) -> None:
    for loop, nodes in ctx.interpreter.rule_data.get("gl205_pending", []):
        nodes -= event.may  # a later backward used these graphs


def on_unit_end(event: UnitEndEvent, ctx: EventContext) -> None:
    for loop, nodes in ctx.interpreter.rule_data.pop("gl205_pending", []):
        if not nodes:
            continue
        message = (
            "This loop runs the model with gradients on but never calls backward: every forward records a graph "
            "and keeps activations for nothing. Wrap it in `with torch.inference_mode():` (or `torch.no_grad()`)."
        )
        fixes = [FixRecipe("wrap_no_grad", "Wrap the loop in `with torch.no_grad():`", {"stmt": ctx.span(loop)})]
        ctx.interpreter.reporter.report(RULE, ctx.span(loop), message, fixes=fixes)


RULE.hooks = {"loop_end": on_loop_end, "backward": on_backward, "unit_end": on_unit_end}
