"""Reading `.grad` of a tensor that is not a leaf and never called `retain_grad()`.

## What it does
Reports reads of `t.grad` where `t` was computed from tensors that require
grad (an activation, a normalized input, a hidden state), so it is not a leaf,
and `t.retain_grad()` was not called before the backward.

## Why is this bad?
Autograd only stores `.grad` on leaves. The read is always `None`: saliency
maps, gradient-norm logs and FGSM steps built on it are silently wrong or crash
later.

## What torch says
`UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward().`

## Example
```python
h = model.encoder(x)
loss = model.head(h).sum()
loss.backward()
print(h.grad.norm())
```

## Use instead
```python
h = model.encoder(x)
h.retain_grad()
loss = model.head(h).sum()
loss.backward()
```
or `torch.autograd.grad(loss, h)`.

## Fix safety
Safe: `retain_grad()` right after the tensor is computed makes `.grad` hold the
gradient the code reads; nothing else changes.

## Fixture line
The statement reading `.grad`.
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

import ast

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import GradReadEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.recipes import InsertAfter

ZH_CN = Translation(
    """读取一个非叶子张量的 `.grad`，却从未调用 `retain_grad()`。

## 它检查什么
报告对 `t.grad` 的读取：`t` 是由需要梯度的张量算出来的（激活值、归一化后的输入、隐藏状态），所以它不是叶子张量，而且在反向传播之前没有调用 `t.retain_grad()`。

## 为什么这是问题？
自动求导只在叶子张量上保存 `.grad`。读到的永远是 `None`：基于它的显著性图（saliency map）、梯度范数日志和 FGSM 步骤都会悄悄出错，或者在后面崩掉。

## torch 的报错
`UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward().`

## 示例
```python
h = model.encoder(x)
loss = model.head(h).sum()
loss.backward()
print(h.grad.norm())
```

## 改为
```python
h = model.encoder(x)
h.retain_grad()
loss = model.head(h).sum()
loss.backward()
```
或者用 `torch.autograd.grad(loss, h)`。

## 修复的安全性
安全：在张量算出之后立即调用 `retain_grad()`，`.grad` 就会保存代码要读取的梯度；其他一切不变。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="4faad50e8068",
)

RULE = Rule(
    code="GL303",
    name="nonleaf-grad-read",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="The .grad attribute of a Tensor that is not a leaf Tensor is being accessed",
)

NOT_A_LEAF = MessageTemplate(
    "GL303.not-a-leaf",
    "`{name}` is not a leaf (computed at line {line}), so `{name}.grad` is always None unless "
    "`{name}.retain_grad()` is called before the backward.",
    zh_cn="`{name}` 不是叶子张量（在{line}计算得到），所以除非在反向传播之前调用 `{name}.retain_grad()`，"
    "否则 `{name}.grad` 永远是 None。",
)
RETAIN_TITLE = MessageTemplate("fix.retain-grad", "Call `{name}.retain_grad()` after it is computed",
                               zh_cn="在计算出 `{name}` 之后调用 `{name}.retain_grad()`")
COMPUTED_HERE = MessageTemplate("GL303.computed-here", "computed here", zh_cn="在此计算得到")


@RULE.on(GradReadEvent)
def on_grad_read(event: GradReadEvent, ctx: RuleContext) -> None:
    tensor = event.tensor
    if tensor.leaf is not False or tensor.requires_grad is not True or tensor.retains_grad:
        return
    name = ctx.text(event.expr.value)
    line = ctx.line(tensor.origin) if tensor.origin is not None and hasattr(tensor.origin, "lineno") else None
    message = NOT_A_LEAF(name=name, line=line)
    fixes: list[FixRecipe] = []
    anchor = _statement_after_origin(ctx, tensor.origin)
    bound = _bound_name(ctx, anchor, tensor.origin)
    if anchor is not None and bound and bound == name:
        # retain_grad() right where the name that is read is bound; when the read goes through
        # another name (a loop variable over a list of states) the right place is not certain.
        fixes.append(InsertAfter(title=RETAIN_TITLE(name=bound),
                                 anchor=ctx.span(anchor), code=f"{bound}.retain_grad()"))
    related = [Related(ctx.span(tensor.origin), COMPUTED_HERE())] if tensor.origin is not None else []
    ctx.report(RULE, ctx.span(event.stmt), message, related=related, fixes=fixes)


def _bound_name(ctx: RuleContext, stmt: ast.stmt | None, origin: ast.AST | None) -> str:
    """`h` in `h = cell(x, h)` when the whole value is the tensor's origin; else nothing."""
    if isinstance(stmt, ast.Assign) and stmt.value is origin and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
            return ctx.text(target)
    return ""


def _statement_after_origin(ctx: RuleContext, origin: ast.AST | None) -> ast.stmt | None:
    """The statement whose code computed the tensor (``origin`` itself when it is one)."""
    current = origin
    while current is not None and not isinstance(current, ast.stmt):
        current = ctx.parent(current)
    return current
