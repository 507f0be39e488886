"""`.backward(create_graph=True)` makes a reference cycle between a tensor and its gradient.

## What it does
Reports `.backward(create_graph=True)` (and `torch.autograd.backward(...,
create_graph=True)`). Warning when the gradient lands on a leaf that is not a
parameter (a per-batch input with `requires_grad=True`) or on parameters whose
`.grad` is not reset to `None` each step; information when every reached
parameter's gradient is set to `None` by `zero_grad()` before the backward.

## Why is this bad?
With `create_graph=True` the `.grad` itself has a graph that references the
leaf, and the leaf references its `.grad`: the cycle keeps the graph, the input
and the gradient alive. Torch warns about it.

## What torch says
`UserWarning: Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient which can cause a memory leak.`

## Example
```python
x.requires_grad_()
loss = model(x).sum()
loss.backward(create_graph=True)
penalty = x.grad.pow(2).sum()
```

## Use instead
```python
(grad,) = torch.autograd.grad(loss, x, create_graph=True)
penalty = grad.pow(2).sum()
```
When the optimizer step needs the loss's own gradients too (a gradient
penalty trained with the loss), add the loss to the backward that follows:
`(loss + penalty).backward()`.

The quick fix makes these rewrites (a comprehension over a list of parameters
walks the returned gradients instead), and only where the engine can show the
program computes the same values: the `.grad` reads right after the backward
read gradients that were empty before it, and nothing else uses what the
backward used to leave in `.grad` before it is reset (docs/FIX_RECIPES.md).

## Fix safety
Safe: `torch.autograd.grad(..., create_graph=True)` is offered only where the engine
shows the program computes the same values (docs/FIX_RECIPES.md says how): the gradients are
returned instead of left in `.grad`, and every read of them is rewritten.

## Fixture line
The `.backward(create_graph=True)` call.
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

from graphlife import phrases
from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import (
    BackwardEvent,
    GradReadEvent,
    StepEvent,
    UnitEndEvent,
    ZeroGradEvent,
)
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, MessageTemplate, Severity, Span
from graphlife.fixes.proofs import create_graph

ZH_CN = Translation(
    """`.backward(create_graph=True)` 在张量和它的梯度之间造成了循环引用。

## 它检查什么
报告 `.backward(create_graph=True)`（以及 `torch.autograd.backward(..., create_graph=True)`）。当梯度落在一个不是参数的叶子张量上（每个 batch 的输入，带 `requires_grad=True`），或落在 `.grad` 没有在每一步被重置为 `None` 的参数上时，报警告；当反向传播到达的每个参数的梯度都在反向传播之前被 `zero_grad()` 设为 `None` 时，报信息。

## 为什么这是问题？
使用 `create_graph=True` 时，`.grad` 本身带有一张引用该叶子张量的计算图，而叶子张量又引用着它的 `.grad`：这个循环让计算图、输入和梯度都一直活着。torch 会对此发出警告。

## torch 的报错
`UserWarning: Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient which can cause a memory leak.`

## 示例
```python
x.requires_grad_()
loss = model(x).sum()
loss.backward(create_graph=True)
penalty = x.grad.pow(2).sum()
```

## 改为
```python
(grad,) = torch.autograd.grad(loss, x, create_graph=True)
penalty = grad.pow(2).sum()
```
如果优化步也需要 loss 自己的梯度（梯度惩罚和 loss 一起训练），就把 loss 加到后面的那次反向传播里：`(loss + penalty).backward()`。

快速修复会做这些改写（对参数列表的推导式则改为遍历返回的梯度），但只在引擎能证明程序算出的值不变时才做：反向传播之后紧接着读取的 `.grad`，在反向传播之前是空的；而且在 `.grad` 被重置之前，没有其他代码用到反向传播原本留在 `.grad` 里的东西（见 docs/FIX_RECIPES.md）。

## 修复的安全性
安全：只有在引擎能证明程序算出的值不变时（docs/FIX_RECIPES.md 说明了如何判断），才会提供 `torch.autograd.grad(..., create_graph=True)`：梯度作为返回值给出，而不是留在 `.grad` 里，每一处对它们的读取也都会相应改写。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="0d356724b087",
)

RULE = Rule(
    code="GL204",
    name="create-graph-backward-cycle",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="Using backward() with create_graph=True will create a reference cycle",
)


CYCLE = MessageTemplate(
    "GL204.cycle",
    "`backward(create_graph=True)` on `{root}` links each leaf and its `.grad` in a reference cycle that keeps "
    "the graph alive; use `torch.autograd.grad(..., create_graph=True)` to get the gradients instead.{reset}",
    zh_cn="对 `{root}` 调用 `backward(create_graph=True)"
          "` 会让每个叶子张量和它的 `.grad` 形成循环引用，使计算图一直无法释放；"
    "请改用 `torch.autograd.grad(..., create_graph=True)` 来求梯度。{reset}",
)
RESET_NOTE = MessageTemplate(
    "GL204.reset", " (Every parameter's `.grad` is set to None each step here, so torch frees them; still slower.)",
    zh_cn="（这里每一步都把所有参数的 `.grad` 设为 None，torch 因此能释放它们；但仍然更慢。）")


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    create_graph.on_event(event, ctx)
    if event.kind != "backward" or event.create_graph is not True:
        return
    statuses = [event.state.grads.get(storage, ("", None))[0] for storage in event.leaves]
    all_reset = bool(statuses) and all(s == "zeroed_none" for s in statuses)
    severity = Severity.INFORMATION if all_reset else Severity.WARNING
    root = ctx.text(event.root_expr) or phrases.THE_LOSS()
    message = CYCLE(root=root, reset=RESET_NOTE() if all_reset else "")
    stmt = ctx.blame(event.stmt, event.root_expr)
    report = (ctx.span(stmt), message, severity)
    # The fix is proven on what happens after this backward (fixes/proofs/create_graph.py): the
    # finding is then reported when the unit ends, with the fix when the proof holds.
    if not create_graph.on_create_graph_backward(ctx, event, report):
        ctx.report(RULE, *report[:2], severity=severity)


@RULE.on(UnitEndEvent)
def on_unit_end(event: UnitEndEvent, ctx: RuleContext) -> None:
    def report(span: Span, message: str, severity: Severity, fixes: list[FixRecipe]) -> None:
        ctx.report(RULE, span, message, severity=severity, fixes=fixes)

    create_graph.on_unit_end(ctx, event, report)


# The fix's proof follows every use of `.grad` after the backward.
RULE.on(GradReadEvent)(create_graph.on_event)
RULE.on(StepEvent)(create_graph.on_event)
RULE.on(ZeroGradEvent)(create_graph.on_event)
