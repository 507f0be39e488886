"""A tensor that is not a leaf is handed to an optimizer.

## What it does
Reports optimizer constructions (`torch.optim.SGD([...])`, param-group dicts)
that receive a tensor made *from* a leaf rather than the leaf itself:
`torch.randn(..., requires_grad=True) * 0.01`, `.double()`, `.cuda()`, or a
`.to(...)` that really converts (`.to("cpu")` of a CPU tensor returns the leaf
itself, so it is fine). Error when the conversion is certain, warning when it
depends on the device or dtype at run time.

Torch raises this only with gradients on. In a function that nothing in its file
calls, analyzed without its callers (which may run it under `torch.no_grad()`),
the finding is a warning that says so; elsewhere it is an error.

## Why is this bad?
Only leaves accumulate `.grad`. The optimizer would update a tensor whose
gradient is always `None`, so torch refuses at construction.

## What torch says
`ValueError: can't optimize a non-leaf Tensor`

## Example
```python
w = torch.randn(10, 5, requires_grad=True) * 0.01
opt = torch.optim.SGD([w], lr=0.1)
```

## Use instead
```python
w = (torch.randn(10, 5) * 0.01).requires_grad_()
opt = torch.optim.SGD([w], lr=0.1)
```
or create it with `device=`/`dtype=` and `requires_grad=True` in one call, or
wrap it in `nn.Parameter`.

## Fix safety
Safe: `.requires_grad_()` after the conversion makes the tensor the optimizer is given
the leaf the program computes with; the values are the same.

## Fixture line
The optimizer construction.
"""

from __future__ import annotations

import ast

from graphlife import phrases
from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import OptimizerEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.values import TensorVal
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.recipes import LeafAfterConversion
from graphlife.rules.base import grad_mode_severity

ZH_CN = Translation(
    """把一个非叶子张量交给了优化器。

## 它检查什么
报告优化器的构造（`torch.optim.SGD([...])`、参数组字典）收到的是由叶子张量*算出来*的张量而不是叶子本身：`torch.randn(..., requires_grad=True) * 0.01`、`.double()`、`.cuda()`，或者一个确实做了转换的 `.to(...)`（对 CPU 张量调用 `.to("cpu")` 返回的就是叶子本身，所以没问题）。转换确定发生时报错误，取决于运行时的设备或 dtype 时报警告。

只有在启用梯度时 torch 才会报这个错。如果一个函数在本文件里没有任何地方调用，它会在不知道调用方的情况下单独分析（调用方可能在 `torch.no_grad()` 下运行它），这时的诊断是一个警告，并会说明这一点；其他情况下是错误。

## 为什么这是问题？
只有叶子张量会累积 `.grad`。优化器要更新的那个张量，梯度永远是 `None`，所以 torch 在构造优化器时就拒绝了。

## torch 的报错
`ValueError: can't optimize a non-leaf Tensor`

## 示例
```python
w = torch.randn(10, 5, requires_grad=True) * 0.01
opt = torch.optim.SGD([w], lr=0.1)
```

## 改为
```python
w = (torch.randn(10, 5) * 0.01).requires_grad_()
opt = torch.optim.SGD([w], lr=0.1)
```
或者在一次调用里同时用 `device=`/`dtype=` 和 `requires_grad=True` 创建它，或者用 `nn.Parameter` 包起来。

## 修复的安全性
安全：在转换之后调用 `.requires_grad_()`，让交给优化器的张量就是程序计算时用的那个叶子；数值完全相同。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="876f7b8a1626",
)

RULE = Rule(
    code="GL105",
    name="optimizing-non-leaf",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="can't optimize a non-leaf Tensor",
)

NOT_A_LEAF = MessageTemplate(
    "GL105.not-a-leaf",
    "`{name}` is not a leaf: `{made_by}` (line {line}) made a new tensor from the one that requires grad, "
    "so it never gets a `.grad`; the optimizer raises here.{note}",
    zh_cn="`{name}` 不是叶子张量：`{made_by}`（{line}）从需要梯度的那个张量生成了一个新张量，"
    "所以它永远不会得到 `.grad`；优化器会在这里报错。{note}",
)
MAYBE_NOT_A_LEAF = MessageTemplate(
    "GL105.maybe-not-a-leaf",
    "`{name}` may not be a leaf: `{made_by}` (line {line}) makes a new tensor when it really converts "
    "(another device or dtype); the optimizer then raises `can't optimize a non-leaf Tensor`.{note}",
    zh_cn="`{name}` 可能不是叶子张量：当 `{made_by}`（{line}）真正发生转换（换了设备或 dtype）时会生成一个新张量，"
    "优化器随后会报错 `can't optimize a non-leaf Tensor`。{note}",
)
THE_LEAF = MessageTemplate("GL105.the-leaf", "the leaf that requires grad", zh_cn="需要梯度的叶子张量")
AFTER_CONVERSION = MessageTemplate(
    "fix.requires-grad-after-conversion", "Apply `.requires_grad_()` after the conversion",
                                   zh_cn="在转换之后再调用 `.requires_grad_()`")


@RULE.on(OptimizerEvent)
def on_optimizer_created(event: OptimizerEvent, ctx: RuleContext) -> None:
    for value, expr in event.params:
        if not isinstance(value, TensorVal) or value.requires_grad is not True:
            continue
        if value.leaf is False:
            severity = Severity.ERROR
        elif value.leaf is None and value.converted_from is not None:
            severity = Severity.WARNING
        else:
            continue
        name = ctx.text(expr) or ctx.text(value.origin) or phrases.A_TENSOR()
        made_by = ctx.text(value.converted_from or value.origin)
        made_at = value.converted_from or value.origin
        line = ctx.line(made_at) if made_at is not None and hasattr(made_at, "lineno") else None
        template = MAYBE_NOT_A_LEAF if severity is Severity.WARNING else NOT_A_LEAF
        related: list[Related] = []
        if value.created_with_grad is not None:
            related.append(Related(ctx.span(value.created_with_grad), THE_LEAF()))
        fixes: list[FixRecipe] = []
        origin = value.converted_from or value.origin
        assign = _assignment_of(ctx, value.origin)
        if assign is not None:
            fixes.append(LeafAfterConversion(title=AFTER_CONVERSION(),
                                             expr=ctx.span(assign.value), assign=ctx.span(assign)))
        elif origin is not None and expr is not None and ctx.text(expr) == ctx.text(value.origin):
            fixes.append(LeafAfterConversion(title=AFTER_CONVERSION(),
                                             expr=ctx.span(expr)))
        severity, note = grad_mode_severity(ctx.grad_mode(event.state), severity)
        message = template(name=name, made_by=made_by, line=line, note=note)
        ctx.report(RULE, ctx.span(event.stmt), message, severity=severity, related=related, fixes=fixes)


def _assignment_of(ctx: RuleContext, origin: ast.AST | None) -> ast.Assign | None:
    """The `name = <origin>` statement whose whole value is the expression that made the non-leaf."""
    if origin is None:
        return None
    parent = ctx.parent(origin)
    if isinstance(parent, ast.Assign) and parent.value is origin and len(parent.targets) == 1:
        return parent
    return None
