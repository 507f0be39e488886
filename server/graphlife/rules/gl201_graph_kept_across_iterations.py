"""A tensor that carries a graph is stored where it outlives the loop iteration.

## What it does
Reports a graph-carrying tensor stored where it piles up across loop
iterations: appended to a list made before the loop (`losses.append(loss)`,
a module-level log), stored under a new key each time, or added into a running
total (`total += loss`). Values made with `.item()`, `float()`, `.detach()`, or
without a graph are fine. Overwriting one slot (`self.last = h`,
`history["loss"] = out`) keeps one iteration's graph, not one per iteration
(torch measures it flat), so it is not reported; nor is a time loop that collects
states for a backward after it (truncated BPTT).

## Why is this bad?
The stored tensor keeps its whole graph alive. When no backward consumes that
graph (an evaluation loop collecting outputs, an activation kept for
monitoring), every saved activation of every iteration stays in memory until
the process runs out (warning). When the iteration's backward does consume it,
the activations are freed but the graph nodes - and the chain of `+=`
additions - still pile up each step (information).

## What torch says
Nothing: memory grows until `CUDA out of memory` / the host kills the process.

## Example
```python
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss)
```

## Use instead
```python
    losses.append(loss.item())      # a Python number for logging
    # or losses.append(loss.detach()) to keep a tensor
```

## Fixture line
The statement that stores the value.
"""

from __future__ import annotations

from graphlife.analysis.events import EventContext, LoopEndEvent, StoreEvent, UnitEndEvent
from graphlife.analysis.values import TensorVal
from graphlife.findings import FixRecipe, Related, Severity
from graphlife.rules.base import Rule, RuleDoc

RULE = Rule(
    code="GL201",
    name="graph-kept-across-iterations",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__),
    torch_message="",
)


def on_store(event: StoreEvent, ctx: EventContext) -> None:
    if event.kind in ("attribute", "setitem") and _overwrites(event):
        return  # an overwritten slot keeps one graph, not one per iteration (torch measures it flat)
    pending = ctx.interpreter.__dict__.setdefault("_gl201_pending", [])
    pending.append((event, ctx.interpreter.blame(event.stmt, None), ctx.current_loop()))


def on_loop_end(event: LoopEndEvent, ctx: EventContext) -> None:
    ctx.interpreter.__dict__.setdefault("_gl201_loops", {})[id(event.loop)] = event.backwards


def on_unit_end(event: UnitEndEvent, ctx: EventContext) -> None:
    pending = ctx.interpreter.__dict__.pop("_gl201_pending", [])
    loops = ctx.interpreter.__dict__.pop("_gl201_loops", {})
    final = event.state
    graph = ctx.graph
    for store, stmt, loop in pending:
        _, reach = graph.reach(store.value.grad_fn, False)
        consumed_later = all(n in final.freed or n in final.may_freed for n in store.value.grad_fn)
        if loop is not None and loops.get(id(loop)) == 0 and consumed_later:
            continue  # a time loop collecting states for the backward after it (BPTT): not a leak
        keeps_saved = [n for n in reach if graph.nodes[n].saves_certain and n not in final.freed and n not in final.may_freed]
        severity = Severity.WARNING if keeps_saved else Severity.INFORMATION
        value_text = store.value.desc or "the value"
        if severity is Severity.WARNING:
            node = graph.nodes[min(keeps_saved)]
            message = (
                f"`{store.target}` keeps the graph of `{value_text}` alive after the iteration, and no backward frees it: "
                f"the activations saved at line {node.site.lineno} (`{node.line_desc}`) pile up every iteration. "
                "Store `.item()` (a number) or `.detach()` instead."
            )
            related = [Related(ctx.span(node.site), "saved activations kept alive from here")]
        else:
            message = (
                f"`{store.target}` keeps the graph nodes of `{value_text}` alive after the iteration; its backward freed "
                "the saved activations, but the nodes still pile up each step. Store `.item()` or `.detach()` instead."
            )
            related = []
        fixes = []
        expr = _stored_expr(ctx, stmt)
        if expr is not None and isinstance(store.whole, TensorVal):
            # .detach() first: always a tensor of the same shape; .item() only suits scalars.
            fixes.append(FixRecipe("use_detach", f"Store `{ctx.text(expr)}.detach()`", {"expr": ctx.span(expr)}))
            if store.whole.scalar and not store.whole.nullable:
                # One element for certain (a loss, a mean): a Python number, as RULES.md asks for logging.
                fixes.append(FixRecipe("use_item", f"Store `{ctx.text(expr)}.item()` (a Python number)", {"expr": ctx.span(expr)}))
        ctx.interpreter.reporter.report(RULE, ctx.span(stmt), message, severity=severity, related=related, fixes=fixes)


def _stored_expr(ctx, stmt):
    """The expression stored by the statement (argument of append, value of an assignment)."""
    import ast  # noqa: PLC0415

    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and stmt.value.args:
        return stmt.value.args[-1]
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
        return stmt.value
    return None


def _overwrites(event: StoreEvent) -> bool:
    """`self.last = h` / `history["loss"] = out`: the same slot each time (a constant key or an attribute)."""
    import ast  # noqa: PLC0415

    stmt = event.stmt
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    for target in targets:
        if isinstance(target, ast.Attribute):
            return True
        if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
            return True
    return False


RULE.hooks = {"store": on_store, "loop_end": on_loop_end, "unit_end": on_unit_end}
