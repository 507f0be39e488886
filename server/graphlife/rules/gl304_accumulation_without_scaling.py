"""Gradient accumulation (a step every k iterations) without dividing the loss by k.

## What it does
Reports a backward in a loop that steps the optimizer only every k iterations
(`if (i + 1) % k == 0: optimizer.step()`) when the graph of the loss it
backpropagates contains no scaling by a Python number (`loss / k`,
`loss * (1 / k)`, `loss /= k`).

## Why is this bad?
The k backwards add up in `.grad`, so each step uses k times the average
gradient: the effective learning rate is k times larger than intended.

## What torch says
Nothing.

## Example
```python
loss = criterion(model(x), y)
loss.backward()
if (i + 1) % accum_steps == 0:
    optimizer.step()
    optimizer.zero_grad()
```

## Use instead
```python
loss = criterion(model(x), y) / accum_steps
loss.backward()
```

## Fixture line
The `.backward()` call of the unscaled loss.
"""

from __future__ import annotations

import ast

from graphlife.analysis.events import BackwardEvent, EventContext
from graphlife.findings import FixRecipe, Severity
from graphlife.rules.base import Rule, RuleDoc

RULE = Rule(
    code="GL304",
    name="accumulation-without-scaling",
    severity=Severity.INFORMATION,
    doc=RuleDoc(__doc__),
    torch_message="",
)

SCALING_OPS = {
    "Tensor.__truediv__", "Tensor.__itruediv__", "Tensor.__mul__", "Tensor.__rmul__", "Tensor.__imul__",
    "Tensor.div", "Tensor.div_", "Tensor.mul", "Tensor.mul_", "torch.div", "torch.mul",
}


def on_backward(event: BackwardEvent, ctx: EventContext) -> None:
    interp = ctx.interpreter
    if event.kind != "backward" or not event.leaves or not interp.loop_stack:
        return
    divisor = _accumulation_divisor(interp, event.stmt, event)
    if divisor is None:
        return
    current = interp.iteration()
    for nid in event.may:
        node = ctx.graph.nodes[nid]
        scaled_by_number = len(node.pattern) == 2 and "1" in node.pattern and (set(node.pattern) - {"1"}) <= {"s", "?", "0"}
        if node.op in SCALING_OPS and scaled_by_number and node.iteration == current:
            return  # the loss is scaled by a number in this iteration
    root = ctx.text(event.root_expr) or "the loss"
    message = (
        f"The optimizer steps only every `{ctx.text(divisor)}` iterations, so `{root}`'s gradients add up "
        f"`{ctx.text(divisor)}` times before each step: divide the loss by `{ctx.text(divisor)}` first "
        "(the effective learning rate is that many times larger)."
    )
    fixes = []
    if isinstance(event.root_expr, ast.Name):
        fixes.append(FixRecipe("insert_before", f"Divide `{root}` by `{ctx.text(divisor)}` before the backward",
                               {"anchor": ctx.span(event.stmt), "code": f"{root} = {root} / {ctx.text(divisor)}"}))
    stmt = interp.blame(event.stmt, event.root_expr)
    interp.reporter.report(RULE, ctx.span(stmt), message, fixes=fixes)


def _accumulation_divisor(interp, stmt: ast.stmt, event: BackwardEvent) -> ast.expr | None:
    """The k of an `if ... % k == ...:` guarding the step of the optimizer this backward fills,
    when the backward itself runs every iteration (outside that guard)."""
    cache = interp.__dict__.setdefault("_gl304_divisors", {})
    key = (id(stmt), tuple(id(loop) for loop, _ in interp.loop_stack))
    if key not in cache:
        cache[key] = _find_guard(interp, stmt)
    found = cache[key]
    if found is None:
        return None
    guard, divisor = found
    for node in ast.walk(guard):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step":
            optimizer = interp.eval_quiet(node.func.value, event.state)
            obj = event.state.heap.get(optimizer.oid) if hasattr(optimizer, "oid") else None
            shared = (obj.opt_storages & event.leaves) if obj is not None and obj.kind == "optimizer" and obj.opt_storages else set()
            # Accumulating: an earlier backward's gradients may still be there (not certainly zeroed or
            # stepped), and the guarded optimizer is not zeroed unconditionally next to the guard.
            if shared and all(event.state.grads.get(s, ("",))[0] in ("acc", "unknown") for s in shared) \
                    and not _zeroed_beside(interp, guard, ast.unparse(node.func.value)):
                return divisor
    return None


def _zeroed_beside(interp, guard: ast.If, optimizer: str) -> bool:
    """`optimizer.zero_grad()` as a sibling statement of the guard: runs every iteration."""
    parent = interp.parents.get(id(guard))
    for field_name in ("body", "orelse"):
        body = getattr(parent, field_name, None)
        if isinstance(body, list) and guard in body:
            for stmt in body:
                call = stmt.value if isinstance(stmt, ast.Expr) else None
                if (
                    isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "zero_grad" and ast.unparse(call.func.value) == optimizer
                ):
                    return True
    return False


def _inside(interp, node: ast.AST, container: ast.AST) -> bool:
    current = node
    while id(current) in interp.parents:
        current = interp.parents[id(current)]
        if current is container:
            return True
    return False


def _find_guard(interp, stmt: ast.stmt):
    scopes: list[ast.AST] = []
    current = stmt
    while id(current) in interp.parents:
        current = interp.parents[id(current)]
        if isinstance(current, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)):
            scopes.append(current)
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
    for loop, _ in reversed(interp.loop_stack):
        scopes.append(loop)
    guards = interp.__dict__.get("_gl304_guards")
    if guards is None:
        # Every `if ... % k == ...:` that guards a step, found once per file.
        guards = []
        for node in interp.if_nodes:
            if _steps(node.body):
                divisor = _modulus(node.test)
                if divisor is not None:
                    guards.append((node, divisor))
        interp._gl304_guards = guards
    scope_ids = {id(scope) for scope in scopes}
    for node, divisor in guards:
        if _inside(interp, stmt, node):
            continue  # the backward runs only with the step: no accumulation
        current = node
        while id(current) in interp.parents:
            current = interp.parents[id(current)]
            if id(current) in scope_ids:
                return node, divisor
    return None


def _steps(body: list[ast.stmt]) -> bool:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step":
                return True
    return False


def _modulus(test: ast.expr) -> ast.expr | None:
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Mod):
            right = node.left.right
            if isinstance(right, ast.Constant) and right.value in (0, 1):
                return None
            return right
    return None


RULE.hooks = {"backward": on_backward}
