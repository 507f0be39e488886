"""State carried across iterations without `detach()`, plus `retain_graph=True`: the graph grows every step.

## What it does
Reports a backward with `retain_graph=True` inside a loop that reaches graph
nodes built in earlier iterations through carried state (an RNN hidden state, a
running average, `self.memory`).

## Why is this bad?
Each step's backward walks the whole history: memory and backward time grow
linearly per step (quadratically in total) until the run crawls or dies. If an
optimizer step follows, the parameters saved by old iterations change and
GL102 fires too.

## What torch says
Nothing (or, with an optimizer step, the in-place version error of GL102).

## Example
```python
for x in stream:
    h = cell(x, h)
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)
```

## Use instead
```python
for x in stream:
    h = cell(x, h.detach())
    loss = h.pow(2).mean()
    loss.backward()
```

## Fix safety
Unsafe: detaching the carried state at the top of the loop (and dropping
`retain_graph=True`) bounds memory, but each step's gradients then stop at the current
iteration instead of reaching back through all earlier ones -- what trains changes.
Applied only with `--unsafe-fixes`.

## Fixture line
The backward call with `retain_graph=True`.
"""

from __future__ import annotations

from graphlife.analysis.events import BackwardEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.fixes.proofs.carried import detach_recipe, names_text, still_carried
from graphlife.recipes import UNSAFE

RULE = Rule(
    code="GL203",
    name="carried-state-grows-graph",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__),
    torch_message="",
)

GROWS = MessageTemplate(
    "GL203.grows",
    "This backward keeps the graph (`retain_graph=True`) and reaches the graph built at line {built} (`{built_by}`) "
    "in an earlier iteration{via}: the graph grows every step. Detach the carried state at the top of the loop and "
    "drop `retain_graph=True`.",
)


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    if event.retain_graph is not True or ctx.current_loop() is None:
        return
    current = ctx.iteration()
    depth = len(current) - 1
    older = [
        n for n in sorted(event.must)
        if len(ctx.graph.nodes[n].iteration) > depth
        and ctx.graph.nodes[n].iteration[:depth] == current[:depth]
        and ctx.graph.nodes[n].iteration[depth] < current[depth]
    ]
    if not older:
        return
    node = ctx.graph.nodes[older[-1]]
    carried = still_carried(ctx.carried_names(set(older), event.state))
    via = f" through {names_text(carried)}" if carried else ""
    message = GROWS(built=ctx.line(node.site), built_by=node.line_desc, via=via)
    fixes: list[FixRecipe] = []
    if carried:
        # the original trains through the whole history; detaching truncates it (what trains changes)
        fixes.append(detach_recipe(ctx, carried, event.state, UNSAFE))
    stmt = ctx.blame(event.stmt, event.root_expr)
    related = [Related(ctx.span(node.site), "built in an earlier iteration")]
    ctx.report(RULE, ctx.span(stmt), message, related=related, fixes=fixes)
