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

## Fix safety
Unsafe: dividing the loss by the number of accumulated steps changes the size of every
update (a tuned learning rate may already compensate); applied only with `--unsafe-fixes`.

## Fixture line
The `.backward()` call of the unscaled loss.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from graphlife import phrases
from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.values import HeapRef
from graphlife.findings import FixRecipe, MessageTemplate, Severity
from graphlife.recipes import UNSAFE, InsertBefore

ZH_CN = Translation(
    """梯度累积（每 k 轮迭代执行一次优化步）却没有把 loss 除以 k。

## 它检查什么
报告这样的反向传播：所在循环每 k 轮迭代才执行一次优化步（`if (i + 1) % k == 0: optimizer.step()`），而它反向传播的 loss 的计算图里没有按 Python 数字做缩放（`loss / k`、`loss * (1 / k)`、`loss /= k`）。

## 为什么这是问题？
k 次反向传播在 `.grad` 里累加，所以每个优化步用的是平均梯度的 k 倍：有效学习率比预期大了 k 倍。

## torch 的报错
不报错。

## 示例
```python
loss = criterion(model(x), y)
loss.backward()
if (i + 1) % accum_steps == 0:
    optimizer.step()
    optimizer.zero_grad()
```

## 改为
```python
loss = criterion(model(x), y) / accum_steps
loss.backward()
```

## 修复的安全性
不安全：把 loss 除以累积的步数会改变每次更新的大小（调好的学习率可能已经把这一点抵消了）；只在加 `--unsafe-fixes` 时应用。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="725351f2fc3b",
)

RULE = Rule(
    code="GL304",
    name="accumulation-without-scaling",
    severity=Severity.INFORMATION,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

SCALING_OPS = {
    "Tensor.__truediv__", "Tensor.__itruediv__", "Tensor.__mul__", "Tensor.__rmul__", "Tensor.__imul__",
    "Tensor.div", "Tensor.div_", "Tensor.mul", "Tensor.mul_", "torch.div", "torch.mul",
}

#: An `if ... % k == ...:` statement that guards a step, and its `k`.
Guard = tuple[ast.If, ast.expr]


@dataclass
class GL304Guards:
    """What the rule finds in the code alone, once per file (a file state: it depends on no value)."""

    #: Every `if ... % k == ...:` that guards a step (``None`` until first asked).
    guards: list[Guard] | None = None
    #: (backward statement, running loops) -> the guard of the step it accumulates for, if any.
    found: dict[tuple[int, tuple[int, ...]], Guard | None] = field(default_factory=dict)

UNSCALED = MessageTemplate(
    "GL304.unscaled",
    "The optimizer steps only every `{divisor}` iterations, so `{root}`'s gradients add up "
    "`{divisor}` times before each step: divide the loss by `{divisor}` first "
    "(the effective learning rate is that many times larger).",
    zh_cn="优化器每 `{divisor}` 次迭代才执行一次优化步，所以 `{root}` 的梯度在每次优化步之前会累积 `{divisor}` 次："
    "请先把损失除以 `{divisor}`（否则等效学习率会放大同样的倍数）。")
DIVIDE_TITLE = MessageTemplate("fix.divide-loss", "Divide `{root}` by `{divisor}` before the backward",
                               zh_cn="在反向传播之前把 `{root}` 除以 `{divisor}`")



@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    if event.kind != "backward" or not event.leaves or ctx.current_loop() is None:
        return
    divisor = _accumulation_divisor(ctx, event.stmt, event)
    if divisor is None:
        return
    current = ctx.iteration()
    for nid in event.may:
        node = ctx.graph.nodes[nid]
        pattern = node.pattern
        scaled_by_number = len(pattern) == 2 and "1" in pattern and (set(pattern) - {"1"}) <= {"s", "?", "0"}
        if node.op in SCALING_OPS and scaled_by_number and node.iteration == current:
            return  # the loss is scaled by a number in this iteration
    root = ctx.text(event.root_expr) or phrases.THE_LOSS()
    message = UNSCALED(divisor=ctx.text(divisor), root=root)
    fixes: list[FixRecipe] = []
    if isinstance(event.root_expr, ast.Name):
        fixes.append(InsertBefore(title=DIVIDE_TITLE(root=root, divisor=ctx.text(divisor)),
                                  applicability=UNSAFE, anchor=ctx.span(event.stmt),
                                  code=f"{root} = {root} / {ctx.text(divisor)}"))
    stmt = ctx.blame(event.stmt, event.root_expr)
    ctx.report(RULE, ctx.span(stmt), message, fixes=fixes)


def _accumulation_divisor(ctx: RuleContext, stmt: ast.stmt, event: BackwardEvent) -> ast.expr | None:
    """The k of an `if ... % k == ...:` guarding the step of the optimizer this backward fills,
    when the backward itself runs every iteration (outside that guard)."""
    cache = ctx.file_state(GL304Guards)
    key = (id(stmt), tuple(id(loop) for loop in ctx.running_loops()))
    if key not in cache.found:
        cache.found[key] = _find_guard(ctx, cache, stmt)
    found = cache.found[key]
    if found is None:
        return None
    guard, divisor = found
    for node in ast.walk(guard):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step":
            optimizer = ctx.value_of(node.func.value, event.state)
            obj = event.state.heap.get(optimizer.oid) if isinstance(optimizer, HeapRef) else None
            stepped = obj.opt_storages if obj is not None and obj.kind == "optimizer" else None
            shared = (stepped & event.leaves) if stepped else set()
            # Accumulating: an earlier backward's gradients may still be there (not certainly zeroed or
            # stepped), and the guarded optimizer is not zeroed unconditionally next to the guard.
            if shared and all(event.state.grads.get(s, ("",))[0] in ("acc", "unknown") for s in shared) \
                    and not _zeroed_beside(ctx, guard, ast.unparse(node.func.value)):
                return divisor
    return None


def _zeroed_beside(ctx: RuleContext, guard: ast.If, optimizer: str) -> bool:
    """`optimizer.zero_grad()` as a sibling statement of the guard: runs every iteration."""
    parent = ctx.parent(guard)
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


def _inside(ctx: RuleContext, node: ast.AST, container: ast.AST) -> bool:
    return any(ancestor is container for ancestor in ctx.ancestors(node))


def _find_guard(ctx: RuleContext, cache: GL304Guards, stmt: ast.stmt) -> Guard | None:
    scopes: list[ast.AST] = []
    for ancestor in ctx.ancestors(stmt):
        if isinstance(ancestor, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)):
            scopes.append(ancestor)
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
    scopes.extend(reversed(ctx.running_loops()))
    if cache.guards is None:
        # Every `if ... % k == ...:` that guards a step, found once per file.
        cache.guards = []
        for node in ctx.if_statements():
            if _steps(node.body):
                divisor = _modulus(node.test)
                if divisor is not None:
                    cache.guards.append((node, divisor))
    scope_ids = {id(scope) for scope in scopes}
    for node, divisor in cache.guards:
        if _inside(ctx, stmt, node):
            continue  # the backward runs only with the step: no accumulation
        if any(id(ancestor) in scope_ids for ancestor in ctx.ancestors(node)):
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

