"""`requires_grad` is set on a tensor computed from one that requires grad.

## What it does
Reports `y.requires_grad = ...` (any value) and `y.requires_grad_(False)` when
`y` is not a leaf: it was computed from a tensor that requires grad (the
adversarial-example shape `x_adv = x + delta; x_adv.requires_grad = True`).
`y.requires_grad_()` on such a tensor runs (it already requires grad), and so
does setting the flag on leaves, parameters, or tensors computed under
`no_grad`.

Torch raises this only with gradients on. In a function that nothing in its file
calls, analyzed without its callers (which may run it under `torch.no_grad()`),
the finding is a warning that says so; elsewhere it is an error.

## Why is this bad?
A computed tensor's `requires_grad` follows from its graph; only leaves have a
flag of their own. Torch raises at the assignment.

## What torch says
`RuntimeError: you can only change requires_grad flags of leaf variables.`

## Example
```python
x_adv = x + delta
x_adv.requires_grad = True
```

## Use instead
```python
x_adv = (x + delta).detach().requires_grad_()
```
(`y = y.detach()` when the intent was to stop gradients.)

## Fix safety
Safe: `y = y.detach()` for `y.requires_grad = False` (what the code asked for).
Unsafe: `y = y.detach().requires_grad_()` for `True` -- `y` becomes a leaf, so what computed
it no longer trains through it. Applied only with `--unsafe-fixes`.

## Fixture line
The `.requires_grad = ...` assignment or `.requires_grad_(False)` call.
"""

from __future__ import annotations

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import RequiresGradEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import MessageTemplate, Related, Severity
from graphlife.phrases import tensor_name
from graphlife.recipes import SAFE, UNSAFE, DetachRequiresGrad
from graphlife.rules.base import grad_mode_severity

ZH_CN = Translation(
    """在由需要梯度的张量算出的张量上设置 `requires_grad`。

## 它检查什么
当 `y` 不是叶子张量（它是由需要梯度的张量算出来的，典型的是对抗样本的写法 `x_adv = x + delta; x_adv.requires_grad = True`）时，报告 `y.requires_grad = ...`（不论赋什么值）和 `y.requires_grad_(False)`。对这样的张量调用 `y.requires_grad_()` 可以运行（它本来就需要梯度）；在叶子张量、参数，或在 `no_grad` 下算出的张量上设置这个标志也都可以。

只有在启用梯度时 torch 才会报这个错。如果一个函数在本文件里没有任何地方调用，它会在不知道调用方的情况下单独分析（调用方可能在 `torch.no_grad()` 下运行它），这时的诊断是一个警告，并会说明这一点；其他情况下是错误。

## 为什么这是问题？
计算出来的张量，`requires_grad` 由它的计算图决定；只有叶子张量才有自己的标志。torch 在赋值那一行就报错。

## torch 的报错
`RuntimeError: you can only change requires_grad flags of leaf variables.`

## 示例
```python
x_adv = x + delta
x_adv.requires_grad = True
```

## 改为
```python
x_adv = (x + delta).detach().requires_grad_()
```
（如果本意是阻止梯度回传，就写 `y = y.detach()`。）

## 修复的安全性
安全：对 `y.requires_grad = False` 改为 `y = y.detach()`（正是代码想要的）。不安全：对 `True` 改为 `y = y.detach().requires_grad_()`——`y` 变成了叶子张量，算出它的那些部分不再通过它得到训练。只在加 `--unsafe-fixes` 时应用。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="3862bf2711fc",
)

RULE = Rule(
    code="GL107",
    name="requires-grad-flag-on-non-leaf",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="you can only change requires_grad flags of leaf variables.",
)

_NOT_A_LEAF = ("from a tensor that requires grad, so its `requires_grad` flag cannot be changed; "
               "torch raises here.{note}")
_NOT_A_LEAF_ZH = "从一个需要梯度的张量计算得到，所以不能修改它的 `requires_grad` 标志；torch 会在这里报错。{note}"
NOT_A_LEAF = MessageTemplate(
    "GL107.not-a-leaf", "`{name}` is not a leaf: it was computed by `{made_by}` (line {line}) " + _NOT_A_LEAF,
    zh_cn="`{name}` 不是叶子张量：它由 `{made_by}`（{line}）" + _NOT_A_LEAF_ZH)
NOT_A_LEAF_NO_LINE = MessageTemplate(
    "GL107.not-a-leaf-no-line", "`{name}` is not a leaf: it was computed by `{made_by}` " + _NOT_A_LEAF,
    zh_cn="`{name}` 不是叶子张量：它由 `{made_by}` " + _NOT_A_LEAF_ZH)
COMPUTED_HERE = MessageTemplate("GL107.computed-here", "computed here", zh_cn="在此计算得到")
DETACH_TITLE = MessageTemplate("fix.detach-flag", "`{name} = {name}.detach()`", zh_cn="`{name} = {name}.detach()`")
DETACH_REQUIRES_GRAD_TITLE = MessageTemplate("fix.detach-requires-grad", "`{name} = {name}.detach().requires_grad_()`",
                                             zh_cn="`{name} = {name}.detach().requires_grad_()`")


@RULE.on(RequiresGradEvent)
def on_requires_grad_set(event: RequiresGradEvent, ctx: RuleContext) -> None:
    target = event.target
    if target.leaf is not False or target.requires_grad is not True:
        return
    if event.form == "method" and event.flag is not False:
        return  # requires_grad_() / (True) on a non-leaf that already requires grad runs
    name = tensor_name(ctx.text(event.target_expr))
    made_by = target.desc or ctx.text(target.origin)
    related = [Related(ctx.span(target.origin), COMPUTED_HERE())] if target.origin is not None else []
    flag = True if event.flag is None else bool(event.flag)
    # `y.detach().requires_grad_()` makes `y` a leaf: what computed it no longer trains through
    # it (unsafe); `requires_grad = False` asked for exactly what `y.detach()` does (safe).
    fixes = [DetachRequiresGrad(
        title=(DETACH_REQUIRES_GRAD_TITLE if flag else DETACH_TITLE)(name=name),
        applicability=UNSAFE if flag else SAFE,
        stmt=ctx.span(event.stmt), target=name, flag=flag,
    )]
    severity, note = grad_mode_severity(ctx.grad_mode(event.state), RULE.severity)
    if target.origin is not None and hasattr(target.origin, "lineno"):
        message = NOT_A_LEAF(name=name, made_by=made_by, line=ctx.line(target.origin), note=note)
    else:
        message = NOT_A_LEAF_NO_LINE(name=name, made_by=made_by, note=note)
    ctx.report(RULE, ctx.span(event.stmt), message, severity=severity, related=related, fixes=fixes)
