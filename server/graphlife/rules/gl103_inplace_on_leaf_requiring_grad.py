"""An in-place change of a leaf tensor that requires grad, with gradients enabled.

## What it does
Reports in-place operations (`w -= lr * w.grad`, `p.add_(...)`, `p.zero_()`,
`p.clamp_()`, `w[0] = 0`) on a leaf that requires grad - a parameter or a tensor
created with `requires_grad=True` - while gradient recording is on. Updates
inside `with torch.no_grad():`, `torch.inference_mode()`, a
`@torch.no_grad()` function, or through `.data` are fine.

Torch raises this only with gradients on. In a function that nothing in its file
calls, analyzed without its callers (which may run it under `torch.no_grad()`),
the finding is a warning that says so; elsewhere it is an error.

## Why is this bad?
Autograd cannot record an in-place change of a leaf it accumulates gradients
into, so torch raises at the update. Manual SGD loops hit this first.

## What torch says
`RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.`

## Example
```python
for p in model.parameters():
    p -= lr * p.grad
```

## Use instead
```python
with torch.no_grad():
    for p in model.parameters():
        p -= lr * p.grad
```

## Fix safety
Safe: `with torch.no_grad():` around the update changes the same weights by the same
amounts, without recording the update in a graph.

## Fixture line
The in-place statement on the leaf.
"""

from __future__ import annotations

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import InplaceEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import MessageTemplate, Related, Severity
from graphlife.phrases import tensor_name
from graphlife.recipes import WrapNoGrad
from graphlife.rules.base import grad_mode_severity

ZH_CN = Translation(
    """在启用梯度时原地修改了一个需要梯度的叶子张量。

## 它检查什么
在记录梯度期间，报告对需要梯度的叶子张量（参数，或用 `requires_grad=True` 创建的张量）所做的原地操作（`w -= lr * w.grad`、`p.add_(...)`、`p.zero_()`、`p.clamp_()`、`w[0] = 0`）。在 `with torch.no_grad():`、`torch.inference_mode()`、`@torch.no_grad()` 修饰的函数里更新，或通过 `.data` 更新，都没有问题。

只有在启用梯度时 torch 才会报这个错。如果一个函数在本文件里没有任何地方调用，它会在不知道调用方的情况下单独分析（调用方可能在 `torch.no_grad()` 下运行它），这时的诊断是一个警告，并会说明这一点；其他情况下是错误。

## 为什么这是问题？
自动求导无法记录对叶子张量的原地修改，而梯度正是累积到这个叶子上的，所以 torch 在更新那一行就报错。手写 SGD 循环最先碰到这个问题。

## torch 的报错
`RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.`

## 示例
```python
for p in model.parameters():
    p -= lr * p.grad
```

## 改为
```python
with torch.no_grad():
    for p in model.parameters():
        p -= lr * p.grad
```

## 修复的安全性
安全：用 `with torch.no_grad():` 包住更新，权重的变化量完全相同，只是这次更新不会被记录进计算图。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="96b3acda6576",
)

RULE = Rule(
    code="GL103",
    name="inplace-on-leaf-requiring-grad",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="a leaf Variable that requires grad is being used in an in-place operation.",
)


CHANGED_IN_PLACE = MessageTemplate(
    "GL103.changed-in-place",
    "`{name}` is {kind}, and `{change}` changes it in place while gradients are recorded; "
    "torch raises here. Do the update under `with torch.no_grad():`.{note}",
    zh_cn="`{name}` 是{kind}，而 `{change}` 在记录梯度时对它做了原地操作，torch 会在这里报错。"
    "请把这次更新放在 `with torch.no_grad():` 下进行。{note}",
)
A_PARAMETER = MessageTemplate("GL103.a-parameter", "a parameter", zh_cn="一个参数")
A_LEAF = MessageTemplate("GL103.a-leaf", "a leaf created with `requires_grad=True`",
                         zh_cn="一个以 `requires_grad=True` 创建的叶子张量")
REQUIRES_GRAD_HERE = MessageTemplate("GL103.requires-grad-here", "`{name}` requires grad from here",
                                     zh_cn="`{name}` 从这里开始需要梯度")
WRAP_TITLE = MessageTemplate("fix.wrap-update-no-grad", "Wrap the update in `with torch.no_grad():`",
                             zh_cn="把这次更新放进 `with torch.no_grad():`")


@RULE.on(InplaceEvent)
def on_inplace(event: InplaceEvent, ctx: RuleContext) -> None:
    target = event.target
    if event.via_data or target.leaf is not True or target.requires_grad is not True:
        return
    mode = ctx.grad_mode(event.state)
    if mode.enabled is not True:
        return
    name = tensor_name(ctx.text(event.target_expr))
    kind = A_PARAMETER() if target.is_param else A_LEAF()
    related: list[Related] = []
    if target.created_with_grad is not None:
        related.append(Related(ctx.span(target.created_with_grad), REQUIRES_GRAD_HERE(name=name)))
    stmt = event.stmt
    fixes = [WrapNoGrad(title=WRAP_TITLE(), stmt=ctx.span(stmt))]
    severity, note = grad_mode_severity(mode, RULE.severity)
    message = CHANGED_IN_PLACE(name=name, kind=kind, change=ctx.text(event.stmt), note=note)
    ctx.report(RULE, ctx.span(stmt), message, severity=severity, related=related, fixes=fixes)
