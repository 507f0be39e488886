"""An in-place change of a tensor that a module with a full backward hook handed on.

## What it does
Follows `register_full_backward_hook` and `register_full_backward_pre_hook` on
the modules the engine knows (layers of an `nn.Sequential`, attributes of a
model of the file), and reports an in-place change, while gradients are
recorded, of a tensor that such a module received or returned: `out += identity`
after a hooked `bn2`, a `ReLU(inplace=True)` right after a hooked layer, or a
hooked `ReLU(inplace=True)` itself. Only where the hook is registered on every
path to the call: a hook registered on some paths, or one that code the engine
does not see may have removed, is not reported.

## Why is this bad?
To call a full backward hook with the gradients of a module's inputs and
outputs, torch passes them through a custom autograd Function,
`BackwardHookFunction`, which returns them as views. torch forbids changing such a
view in place (autograd would have to replace the custom backward), so the
forward stops at the in-place operation. Grad-CAM and gradient-logging code meets
this as soon as the hooked layer is followed by an in-place ReLU or a residual
`+=`, as in ResNets.

## What torch says
`RuntimeError: Output 0 of BackwardHookFunction is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.`

## Example
```python
features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU(inplace=True))
features[1].register_full_backward_hook(save_gradients)
out = features(images)          # the in-place ReLU changes the hooked output
```

## Use instead
```python
features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())
features[1].register_full_backward_hook(save_gradients)
out = features(images)
```
Or write the residual out of place (`out = out + identity`), or capture the
gradient with a tensor hook (`output.register_hook(...)` in a forward hook),
which wraps nothing.

## Fix safety
Safe: the out-of-place form (`inplace=False`, `out = out + identity`) computes the
same values; it keeps one more activation alive during the forward.

## Fixture line
The statement whose in-place change torch rejects (for a module built with
`inplace=True`, the call that runs it).
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

import ast

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import InplaceEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.recipes import OutOfPlace
from graphlife.rules.gl102_inplace_modifies_saved_tensor import OUT_OF_PLACE

ZH_CN = Translation(
    """原地修改了一个由注册了完整反向传播钩子（full backward hook）的模块传出的张量。

## 它检查什么
跟进引擎已知的模块（`nn.Sequential` 的各层、本文件中模型的属性）上的 `register_full_backward_hook` 和 `register_full_backward_pre_hook`，并在记录梯度期间报告对这类模块接收或返回的张量所做的原地修改：在挂了钩子的 `bn2` 之后执行 `out += identity`、紧跟在挂了钩子的层后面的 `ReLU(inplace=True)`，或者本身挂了钩子的 `ReLU(inplace=True)`。只在每条通往这次调用的路径上都注册了钩子时报告：只在部分路径上注册的钩子，或者可能已被引擎看不到的代码移除的钩子，都不报告。

## 为什么这是问题？
为了用模块输入和输出的梯度调用完整反向传播钩子，torch 会让它们经过一个自定义 autograd Function，即 `BackwardHookFunction`，它把这些张量作为视图返回。torch 禁止原地修改这样的视图（否则自动求导就得替换掉自定义的反向传播），所以前向传播会在原地操作那一行停下。Grad-CAM 和记录梯度的代码，只要被挂钩子的层后面跟着一个原地 ReLU 或残差 `+=`（就像 ResNet 那样），就会遇到这个错误。

## torch 的报错
`RuntimeError: Output 0 of BackwardHookFunction is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.`

## 示例
```python
features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU(inplace=True))
features[1].register_full_backward_hook(save_gradients)
out = features(images)          # 原地 ReLU 修改了挂钩子那一层的输出
```

## 改为
```python
features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())
features[1].register_full_backward_hook(save_gradients)
out = features(images)
```
或者把残差写成非原地写法（`out = out + identity`），或者用张量钩子来获取梯度（在前向钩子里调用 `output.register_hook(...)`），它不会包装任何张量。

## 修复的安全性
安全：非原地写法（`inplace=False`、`out = out + identity`）计算出的值完全相同，只是在前向传播期间多保留一个激活值。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="109da3416906",
)

RULE = Rule(
    code="GL110",
    name="inplace-on-backward-hook-view",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="Output 0 of BackwardHookFunction is a view and is being modified inplace",
)

CHANGED = MessageTemplate(
    "GL110.changed",
    "`{change}` changes in place a tensor that a module with a full backward hook handed on (at `{hooked}`): "
    "torch passes it through `BackwardHookFunction`, whose output is a view it forbids changing in place, and "
    "raises here. Use the out-of-place form.",
    zh_cn="`{change}` 原地修改了一个由注册了完整反向传播钩子的模块传出的张量（在 `{hooked}` 处）：torch 让它经过 "
    "`BackwardHookFunction`，其输出是一个禁止原地修改的视图，因此会在这里报错。请改用非原地写法。",
)
HOOKED_CALL = MessageTemplate("GL110.hooked-call", "the module with the full backward hook is called here",
                              zh_cn="在这里调用了注册了完整反向传播钩子的模块")
BUILT_IN_PLACE = MessageTemplate("GL110.built-in-place", "built to work in place here", zh_cn="在这里被构造为原地操作")
NOT_IN_PLACE = MessageTemplate("fix.build-not-in-place", "Build it with `inplace=False`",
                               zh_cn="构造时改用 `inplace=False`")


@RULE.on(InplaceEvent)
def on_inplace(event: InplaceEvent, ctx: RuleContext) -> None:
    target = event.target
    if target.hook_view is None or event.via_data or target.requires_grad is not True:
        return
    if ctx.grad_mode(event.state).enabled is not True:
        return
    change_site: ast.AST = event.stmt if event.construction is None else event.site
    hooked = ctx.text(target.hook_view) or "the module"
    change = ctx.text(event.construction if event.construction is not None else change_site)
    message = CHANGED(change=change, hooked=hooked)
    related = [Related(ctx.span(target.hook_view), HOOKED_CALL())]
    fixes: list[FixRecipe] = []
    if event.construction is not None:
        related.append(Related(ctx.span(event.construction), BUILT_IN_PLACE()))
        fixes.append(OutOfPlace(title=NOT_IN_PLACE(), construction=ctx.span(event.construction)))
    else:
        fixes.append(OutOfPlace(title=OUT_OF_PLACE(), stmt=ctx.span(event.stmt)))
    ctx.report(RULE, ctx.span(change_site), message, related=related, fixes=fixes)
