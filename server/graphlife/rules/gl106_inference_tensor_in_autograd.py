"""A tensor created under `torch.inference_mode()` is saved for backward, or changed in place outside it.

## What it does
Tracks tensors made inside `torch.inference_mode()` (caches, embedding tables,
targets, normalization statistics). Reports the op that would save one for
backward (into `Linear`, multiplied by a tensor that requires grad), and
in-place updates of one outside inference mode.

Torch raises this only with gradients on. In a function that nothing in its file
calls, analyzed without its callers (which may run it under `torch.no_grad()`),
the finding is a warning that says so; elsewhere it is an error.

## Why is this bad?
Inference tensors carry no version counter, so autograd cannot check them
later; torch refuses to save them for backward and refuses in-place updates
outside inference mode.

## What torch says
`RuntimeError: Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal tensor and use it in autograd.`
or `RuntimeError: Inplace update to inference tensor outside InferenceMode is not allowed.`

## Example
```python
with torch.inference_mode():
    stats = encoder(reference_batch)
out = head(stats)          # Linear saves its input for the weight gradient
```

## Use instead
```python
with torch.no_grad():
    stats = encoder(reference_batch)
out = head(stats)
```
or `head(stats.clone())` outside inference mode.

## Fix safety
Safe: `torch.no_grad()` instead of `torch.inference_mode()`, or a `.clone()` where the
inference tensor meets autograd, gives a normal tensor with the same values. A clone can be
a first step: the engine may then see the next use of the same inference tensor, which the
next round of `graphlife fix` clones too.

## Fixture line
The statement whose op saves the inference tensor, or the in-place update.
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

import ast

from graphlife import phrases
from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import InplaceEvent, SavedEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.values import TensorVal
from graphlife.findings import FixRecipe, MessageArg, MessageTemplate, Related, Severity
from graphlife.phrases import tensor_name
from graphlife.recipes import CloneTensor, InferenceModeToNoGrad
from graphlife.rules.base import grad_mode_severity

ZH_CN = Translation(
    """在 `torch.inference_mode()` 下创建的张量被保存用于反向传播，或在推理模式之外被原地修改。

## 它检查什么
跟踪在 `torch.inference_mode()` 里创建的张量（缓存、embedding 表、目标值、归一化统计量）。报告会把这种张量保存下来用于反向传播的操作（传进 `Linear`，或与需要梯度的张量相乘），以及在推理模式之外对它的原地更新。

只有在启用梯度时 torch 才会报这个错。如果一个函数在本文件里没有任何地方调用，它会在不知道调用方的情况下单独分析（调用方可能在 `torch.no_grad()` 下运行它），这时的诊断是一个警告，并会说明这一点；其他情况下是错误。

## 为什么这是问题？
推理张量没有版本计数器，自动求导事后无法检查它们；因此 torch 拒绝为反向传播保存它们，也拒绝在推理模式之外原地修改它们。

## torch 的报错
`RuntimeError: Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal tensor and use it in autograd.`
或 `RuntimeError: Inplace update to inference tensor outside InferenceMode is not allowed.`

## 示例
```python
with torch.inference_mode():
    stats = encoder(reference_batch)
out = head(stats)          # Linear 为计算权重梯度保存了它的输入
```

## 改为
```python
with torch.no_grad():
    stats = encoder(reference_batch)
out = head(stats)
```
或者在推理模式之外写 `head(stats.clone())`。

## 修复的安全性
安全：用 `torch.no_grad()` 代替 `torch.inference_mode()`，或者在推理张量进入自动求导的地方加 `.clone()`，得到的是数值相同的普通张量。clone 可能只是第一步：之后引擎可能会看到同一个推理张量的下一处使用，下一轮 `graphlife fix` 也会给它加上 clone。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="1819ec13dd79",
)

RULE = Rule(
    code="GL106",
    name="inference-tensor-in-autograd",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="Inference tensors cannot be saved for backward",
)


SAVED = MessageTemplate(
    "GL106.saved",
    "`{name}` was created under `torch.inference_mode()`, and `{site}` saves it for backward; "
    "torch raises here. Create it under `torch.no_grad()` instead, or pass a `.clone()`.{note}",
    zh_cn="`{name}` 是在 `torch.inference_mode()` 下创建的，而 `{site}` 要为反向传播保存它，torch 会在这里报错。"
    "请改在 `torch.no_grad()` 下创建它，或传入它的 `.clone()`。{note}",
)
UPDATED = MessageTemplate(
    "GL106.updated",
    "`{name}` was created under `torch.inference_mode()`; `{site}` updates it in place outside "
    "inference mode, which torch forbids. Create it under `torch.no_grad()` instead.{note}",
    zh_cn="`{name}` 是在 `torch.inference_mode()` 下创建"
          "的；`{site}` 在推理模式之外对它做了原地更新，torch 不允许这样做。"
    "请改在 `torch.no_grad()` 下创建它。{note}",
)
CREATED_HERE = MessageTemplate("GL106.created-here", "created in inference mode here", zh_cn="在推理模式下于此创建")
NO_GRAD_TITLE = MessageTemplate(
    "fix.inference-mode-to-no-grad", "Use `torch.no_grad()` instead of `torch.inference_mode()`",
                                zh_cn="用 `torch.no_grad()` 代替 `torch.inference_mode()`")
CLONE_TITLE = MessageTemplate("fix.clone-saved", "Use `{expr}.clone()` here", zh_cn="在这里改用 `{expr}.clone()`")


@RULE.on(SavedEvent)
def on_saved(event: SavedEvent, ctx: RuleContext) -> None:
    tensor = event.tensor
    if tensor.inference is not True or ctx.grad_mode(event.state).inference is not False:
        return
    name = ctx.text(event.tensor_expr) or tensor.desc or phrases.A_TENSOR()
    _report(ctx, event, tensor, event.tensor_expr, SAVED, name=name, site=ctx.text(event.site))


@RULE.on(InplaceEvent)
def on_inplace(event: InplaceEvent, ctx: RuleContext) -> None:
    tensor = event.target
    if tensor.inference is not True or ctx.grad_mode(event.state).inference is not False:
        return
    name = tensor_name(ctx.text(event.target_expr))
    _report(ctx, event, tensor, None, UPDATED, blamed=event.target_expr, name=name, site=ctx.text(event.stmt))


def _report(ctx: RuleContext, event: SavedEvent | InplaceEvent, tensor: TensorVal, saved_expr: ast.expr | None,
            template: MessageTemplate, *, blamed: ast.expr | None = None, **args: MessageArg) -> None:
    """Report at the statement (or the helper's caller) with the fixes: ``torch.no_grad()`` where the
    tensor was made, and a ``.clone()`` of the expression a saving op takes (``saved_expr``)."""
    related: list[Related] = []
    fixes: list[FixRecipe] = []
    if tensor.origin is not None:
        related.append(Related(ctx.span(tensor.origin), CREATED_HERE()))
        with_item = _inference_mode_item(ctx, tensor.origin)
        if with_item is not None:
            fixes.append(InferenceModeToNoGrad(title=NO_GRAD_TITLE(),
                                               item=ctx.span(with_item)))
    if saved_expr is not None:
        fixes.append(CloneTensor(title=CLONE_TITLE(expr=ctx.text(saved_expr)), expr=ctx.span(saved_expr)))
    stmt = ctx.blame(event.stmt, saved_expr if saved_expr is not None else blamed)
    severity, note = grad_mode_severity(ctx.grad_mode(event.state), RULE.severity)
    ctx.report(RULE, ctx.span(stmt), template(**args, note=note), severity=severity, related=related, fixes=fixes)


def _inference_mode_item(ctx: RuleContext, node: ast.AST) -> ast.expr | None:
    """The ``torch.inference_mode()`` of the innermost ``with`` around ``node`` that turns
    inference mode on (however ``inference_mode`` is imported)."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, ast.With):
            for switch in ctx.grad_switches(ancestor):
                if switch.inference:
                    return switch.expr
    return None
