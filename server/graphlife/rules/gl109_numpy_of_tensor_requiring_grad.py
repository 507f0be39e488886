"""`.numpy()` is called on a tensor that requires grad: torch raises.

## What it does
Reports `t.numpy()` (and `np.array(t)`, `np.asarray(t)`, which call it) where `t`
requires grad and gradients are on: a parameter, a leaf created with
`requires_grad=True`, or a value computed from one (a model's
output, a loss, an advantage, an action sampled with `rsample`), also through
`.cpu()` or `.to(...)`, which keep the graph. Under `torch.no_grad()` torch lets
it through.

## Why is this bad?
A NumPy array cannot carry an autograd graph, so torch refuses to hand one over
instead of silently dropping the gradient. The usual cause is a `.detach()` that
was left out: values logged, plotted or passed to an environment are taken from
the training graph.

## What torch says
`RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.`

## Example
```python
delta = td_target - value_net(states)
advantages = compute_gae(delta.numpy())
```

## Use instead
```python
delta = td_target - value_net(states)
advantages = compute_gae(delta.detach().numpy())   # or compute `delta` under torch.no_grad()
```

## Fix safety
Safe: `.detach()` gives the same values without the graph, which is what `.numpy()` needs and
what torch's message asks for; nothing that trained through the tensor changes.

## Fixture line
The statement with the `.numpy()` call.
"""

from __future__ import annotations

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import NumpyEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import MessageTemplate, Severity
from graphlife.recipes import ReplaceText
from graphlife.rules.base import grad_mode_severity

ZH_CN = Translation(
    """对需要梯度的张量调用了 `.numpy()`：torch 会报错。

## 它检查什么
在记录梯度期间，报告对需要梯度的张量 `t` 调用的 `t.numpy()`（以及会调用它的 `np.array(t)`、`np.asarray(t)`）：参数、用 `requires_grad=True` 创建的叶子张量，或者由它们算出的值（模型的输出、损失、优势值、用 `rsample` 采样的动作），经过 `.cpu()` 或 `.to(...)` 之后也算，因为它们保留计算图。在 `torch.no_grad()` 下 torch 允许这样做。

## 为什么这是问题？
NumPy 数组无法携带自动求导的计算图，所以 torch 宁可拒绝转换，也不会悄悄丢掉梯度。常见的原因是漏写了 `.detach()`：用于记录、绘图或传给环境的值直接取自训练用的计算图。

## torch 的报错
`RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.`

## 示例
```python
delta = td_target - value_net(states)
advantages = compute_gae(delta.numpy())
```

## 改为
```python
delta = td_target - value_net(states)
advantages = compute_gae(delta.detach().numpy())   # 或者在 torch.no_grad() 下计算 `delta`
```

## 修复的安全性
安全：`.detach()` 给出相同的值但不带计算图，这正是 `.numpy()` 需要的，也是 torch 的报错信息所要求的；通过这个张量训练的部分不受影响。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="1d982af8ead6",
)

RULE = Rule(
    code="GL109",
    name="numpy-of-tensor-requiring-grad",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="Can't call numpy() on Tensor that requires grad",
)

REQUIRES_GRAD = MessageTemplate(
    "GL109.requires-grad",
    "`{call}` raises: `{tensor}` requires grad, and a NumPy array cannot keep its graph. "
    "Detach it first: `{tensor}.detach()`.{note}",
    zh_cn="`{call}` 会报错：`{tensor}` 需要梯度，而 NumPy 数组无法保留它的计算图。"
    "请先分离：`{tensor}.detach()`。{note}",
)
DETACH_TITLE = MessageTemplate("fix.detach-before-numpy", "Detach before `.numpy()`", zh_cn="在 `.numpy()` 之前分离")


@RULE.on(NumpyEvent)
def on_numpy(event: NumpyEvent, ctx: RuleContext) -> None:
    """A tensor that requires grad on every path reaching the call, with gradients on there:
    torch checks both (under ``no_grad`` even a parameter converts). In a function analyzed
    alone the mode is an assumption (then a warning)."""
    tensor = event.tensor
    mode = ctx.grad_mode(event.state)
    if tensor.requires_grad is not True or mode.enabled is not True or mode.inference is not False:
        return
    severity, note = grad_mode_severity(mode, RULE.severity)
    if tensor.nullable and severity is Severity.ERROR:
        severity, note = Severity.WARNING, ""  # not a tensor on some path: it raises otherwise there
    receiver = ctx.text(event.receiver) or "the tensor"
    receiver_span = ctx.span(event.receiver)
    fix = ReplaceText(title=DETACH_TITLE(), span=receiver_span, text=f"{receiver}.detach()")
    ctx.report(RULE, ctx.span(event.stmt), REQUIRES_GRAD(call=ctx.text(event.call), tensor=receiver, note=note),
               severity=severity, fixes=[fix])
