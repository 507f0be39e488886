"""`zero_grad()` between `backward()` and `step()`: the step applies zero gradients.

## What it does
Follows the gradients of each parameter through the loop: a backward fills
them, `zero_grad()` (of the optimizer or the model, or `p.grad = None`) clears
them, `step()` uses them. Reports the `zero_grad()` that clears gradients a
backward just computed, before the `step()` that should have used them.

## Why is this bad?
The step sees zeros (or `None`) and the parameters never change: the model
silently does not learn.

## What torch says
Nothing.

## Example
```python
loss.backward()
optimizer.zero_grad()
optimizer.step()
```

## Use instead
```python
optimizer.zero_grad()
loss.backward()
optimizer.step()
```

## Fix safety
Unsafe: moving `zero_grad()` before the backward makes the step apply the gradients --
that is the fix, but it changes what trains, so it is applied only with `--unsafe-fixes`.

## Fixture line
The `zero_grad()` call between backward and step.
"""

from __future__ import annotations

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import StepEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.recipes import UNSAFE, MoveStatementBefore

ZH_CN = Translation(
    """`zero_grad()` 放在了 `backward()` 和 `step()` 之间：优化步用的是清零后的梯度。

## 它检查什么
在循环中跟踪每个参数的梯度：反向传播填充它，`zero_grad()`（优化器的或模型的，或 `p.grad = None`）清空它，`step()` 使用它。报告那个把反向传播刚算出的梯度、在本该使用它们的 `step()` 之前清空的 `zero_grad()`。

## 为什么这是问题？
优化步看到的是零（或 `None`），参数永远不会变：模型悄无声息地什么也没学到。

## torch 的报错
不报错。

## 示例
```python
loss.backward()
optimizer.zero_grad()
optimizer.step()
```

## 改为
```python
optimizer.zero_grad()
loss.backward()
optimizer.step()
```

## 修复的安全性
不安全：把 `zero_grad()` 移到反向传播之前，优化步才会真正应用梯度——这正是修复本身，但它改变了训练的内容，所以只在加 `--unsafe-fixes` 时应用。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="917e323f8961",
)

RULE = Rule(
    code="GL301",
    name="zero-grad-before-step",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

CLEARS = MessageTemplate(
    "GL301.clears",
    "`{zero}` clears the gradients the backward just computed, before `{step}` "
    "uses them: the step changes nothing. Move `zero_grad()` before the forward pass.",
    zh_cn="`{zero}` 在 `{step}` 使用梯度之前，就把反向传播刚算出的梯度清零了：这次优化步什么也没更新。"
    "请把 `zero_grad()` 移到前向传播之前。")
CLEARS_IN_HOOK = MessageTemplate(
    "GL301.clears-in-hook",
    "`{zero}` clears the gradients the backward just computed, before `{step}` "
    "uses them: the step changes nothing. The step runs in a post-accumulate-grad hook: reset the gradients "
    "right after it.",
    zh_cn="`{zero}` 在 `{step}` 使用梯度之前，就把反向传播刚算出的梯度清零了：这次优化步什么也没更新。"
    "这次优化步在梯度累积后钩子中运行：请紧接在它之后清零梯度。")
SEES_ZEROED = MessageTemplate(
    "GL301.sees-zeroed", "this step sees zeroed gradients",
    zh_cn="这次优化步看到的是已清零的梯度")
WHOSE_GRADIENTS = MessageTemplate("GL301.whose-gradients", "the backward whose gradients it clears",
                                  zh_cn="被它清掉梯度的那次反向传播")
MOVE_TITLE = MessageTemplate("fix.move-zero-grad", "Move `zero_grad()` before the backward",
                             zh_cn="把 `zero_grad()` 移到反向传播之前")



@RULE.on(StepEvent)
def on_step(event: StepEvent, ctx: RuleContext) -> None:
    storages = event.storages
    if not storages:
        return
    statuses = [event.state.grads.get(s) for s in storages]
    if not all(st is not None and st[0] == "zeroed_after_backward" for st in statuses):
        return
    zero_stmt = statuses[0][1] if statuses[0] is not None else None
    if zero_stmt is None:
        return
    if event.in_backward:  # fused into the backward: a reset before it is no fix
        message = CLEARS_IN_HOOK(zero=ctx.text(zero_stmt), step=ctx.text(event.call))
        ctx.report(RULE, ctx.span(zero_stmt), message, related=[Related(ctx.span(event.call), SEES_ZEROED())])
        return
    message = CLEARS(zero=ctx.text(zero_stmt), step=ctx.text(event.call))
    fixes: list[FixRecipe] = []
    backward = ctx.backward_cleared_by(zero_stmt)
    related = [Related(ctx.span(event.call), SEES_ZEROED())]
    if backward is not None:
        related.append(Related(ctx.span(backward), WHOSE_GRADIENTS()))
        fixes.append(MoveStatementBefore(title=MOVE_TITLE(), applicability=UNSAFE,
                                         stmt=ctx.span(zero_stmt), anchor=ctx.span(backward)))
    ctx.report(RULE, ctx.span(zero_stmt), message, related=related, fixes=fixes)
