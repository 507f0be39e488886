"""Backward on a value that certainly has no graph.

## What it does
Reports a backward whose root cannot require grad: it was computed under
`torch.no_grad()` or `torch.inference_mode()`, cut off by `.detach()`,
re-wrapped from a Python number or array (`torch.tensor(loss.item())`,
`torch.from_numpy(...)`), computed by a model whose parameters are all frozen
from inputs that do not require grad, or is the result of a non-differentiable
op (`argmax`, comparisons). A gradient torch hands to a tensor hook or a full
backward hook (`self.gradients = grad_output[0]` in a Grad-CAM hook) counts too:
the hook runs inside the backward that reaches it, and that gradient has no
graph unless the backward used `create_graph=True`. The message points at the
place the graph was lost and, for `no_grad`, at the block or decorator that
turned gradients off.

## Why is this bad?
There is no graph to backpropagate through, so nothing can receive a gradient.
Torch raises at the backward.

## What torch says
`RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn`

## Example
```python
with torch.no_grad():
    loss = criterion(model(x), y)
loss.backward()
```

## Use instead
```python
loss = criterion(model(x), y)
loss.backward()
```
Use `loss.item()` only for logging, after the backward; keep `no_grad` for
evaluation.

The quick fix undoes the break: `x.detach()` -> `x`, `torch.tensor(x.item())`
-> `x`, `use_reentrant=False`; a `no_grad` / `inference_mode` /
`set_grad_enabled(False)` block is unwrapped, and a `@torch.no_grad()`
decorator dropped, only where nothing else needs them: the block or function
runs nowhere else (one caller, or straight-line code to the backward) and holds
nothing whose result depends on gradients being off (in-place updates of
weights, `.numpy()`, an optimizer step).

## Fix safety
Safe: every fix keeps the graph the backward needs and changes nothing else the program
computes -- `x` instead of `x.detach()` or `torch.tensor(x.item())`, `torch.stack` of the
values instead of a tensor of their `.item()`, `use_reentrant=False`, a `no_grad` block or
decorator removed where nothing else needs it, or, for a helper shared with evaluation,
`no_grad` moved to the evaluation calls (each of them computes what it computed before).
The original raised at the backward, so nothing trained through that value before.

## Fixture line
The backward call that raises.
"""

from __future__ import annotations

import ast

from graphlife.analysis import no_graph_reasons as reasons
from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent, InplaceEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.values import TensorVal, TupleVal
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.fixes.proofs.no_grad import no_grad_fixes, note_inplace
from graphlife.phrases import tensor_name
from graphlife.recipes import ReplaceText, StackInsteadOfItems

ZH_CN = Translation(
    """对一个肯定没有计算图的值做反向传播。

## 它检查什么
报告根节点不可能需要梯度的反向传播：它是在 `torch.no_grad()` 或 `torch.inference_mode()` 下算出来的，被 `.detach()` 切断了，从 Python 数字或数组重新包装而来（`torch.tensor(loss.item())`、`torch.from_numpy(...)`），由一个参数全部冻结、输入也不需要梯度的模型算出，或者是不可导操作（`argmax`、比较运算）的结果。torch 交给张量钩子或完整的反向传播钩子（full backward hook）的梯度也算在内（例如 Grad-CAM 钩子里的 `self.gradients = grad_output[0]`）：钩子在到达它的那次反向传播中运行，除非该次反向传播使用了 `create_graph=True`，否则这个梯度没有计算图。诊断信息会指出计算图是在哪里丢掉的；如果是 `no_grad`，还会指出关掉梯度的那个代码块或装饰器。

## 为什么这是问题？
没有计算图可以反向传播，也就没有任何张量能得到梯度。torch 在调用反向传播时报错。

## torch 的报错
`RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn`

## 示例
```python
with torch.no_grad():
    loss = criterion(model(x), y)
loss.backward()
```

## 改为
```python
loss = criterion(model(x), y)
loss.backward()
```
`loss.item()` 只用来打日志，并放在反向传播之后；`no_grad` 留给评估。

快速修复会撤销切断计算图的那一步：`x.detach()` -> `x`，`torch.tensor(x.item())` -> `x`，`use_reentrant=False`；`no_grad` / `inference_mode` / `set_grad_enabled(False)` 代码块会被拆掉、`@torch.no_grad()` 装饰器会被去掉，但只在别处都不需要它们时才这样做：这个代码块或函数不在其他地方运行（只有一个调用方，或者一路直线执行到反向传播），而且里面没有依赖“梯度已关闭”的操作（原地更新权重、`.numpy()`、优化步）。

## 修复的安全性
安全：每个修复都保留反向传播需要的计算图，程序算出的其他东西一概不变——用 `x` 代替 `x.detach()` 或 `torch.tensor(x.item())`，用这些值的 `torch.stack` 代替由它们的 `.item()` 组成的张量，`use_reentrant=False`，在别处都不需要时去掉 `no_grad` 代码块或装饰器；对于和评估共用的辅助函数，则把 `no_grad` 移到评估的调用处（每处调用算出的东西和以前一样）。原来的代码在反向传播时就会报错，所以此前并没有任何东西通过这个值训练过。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="e9516afd7110",
)

RULE = Rule(
    code="GL104",
    name="backward-without-grad",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="element 0 of tensors does not require grad and does not have a grad_fn",
)


RULE.on(InplaceEvent)(note_inplace)  # the fix's proof needs the writes made with gradients off


NO_GRAPH = MessageTemplate(
    "GL104.no-graph", "`{name}` has no graph to backpropagate through: {reason}. Torch raises at this backward.",
    zh_cn="`{name}` 没有可供反向传播的计算图：{reason}。torch 会在这次反向传播处报错。")
LOST_HERE = MessageTemplate("GL104.lost-here", "the graph is lost here", zh_cn="计算图在这里断开")
KEEP_USE = MessageTemplate("fix.keep-graph-use", "Keep the graph: use `{expr}`", zh_cn="保留计算图：改用 `{expr}`")
KEEP_USE_ITSELF = MessageTemplate("fix.keep-graph-use-itself", "Keep the graph: use `{expr}` itself",
                                  zh_cn="保留计算图：直接使用 `{expr}` 本身")
KEEP_STACK = MessageTemplate(
    "fix.keep-graph-stack", "Keep the graph: `torch.stack` the values instead of their `.item()`",
                             zh_cn="保留计算图：用 `torch.stack` 拼接这些值，而不是取它们的 `.item()`")
NON_REENTRANT = MessageTemplate(
    "fix.non-reentrant-flows", "Use `use_reentrant=False` (gradients flow to the parameters)",
                                zh_cn="使用 `use_reentrant=False`（梯度才能传到参数）")


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    root = event.root
    first = root.items[0] if isinstance(root, TupleVal) and root.items else root
    if not isinstance(first, TensorVal) or first.requires_grad is not False:
        return
    name = tensor_name(ctx.text(event.root_expr))
    reason = first.why or reasons.NO_GRAD_REQUIRED()
    message = NO_GRAPH(name=name, reason=reason)
    related: list[Related] = []
    if first.why_site is not None:
        related.append(Related(ctx.span(first.why_site), LOST_HERE()))
    stmt = ctx.blame(event.stmt, event.root_expr)
    fixes = _keep_the_graph(ctx, first.why_site)
    if isinstance(first.why_site, ast.stmt):
        # computed while gradients were off: the `no_grad` block or decorator around that statement
        region, fixes = no_grad_fixes(ctx, first.why_site, event.stmt)
        related.extend(region)
    ctx.report(RULE, ctx.span(stmt), message, related=related, fixes=fixes)


def _items_of_a_list(values: ast.expr) -> bool:
    """``[f(s).item() for s in xs]`` or ``[a.item(), b.item()]``: numbers taken out of their graphs."""
    elements = [values.elt] if isinstance(values, ast.ListComp) else values.elts if isinstance(values, ast.List) else []
    return bool(elements) and all(
        isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "item"
        and not e.args and not e.keywords for e in elements)


def _keep_the_graph(ctx: RuleContext, site: ast.AST | None) -> list[FixRecipe]:
    """Undo the break where it is one expression: `x.detach()` -> `x`, `torch.tensor(x.item())` -> `x`,
    `checkpoint(..., use_reentrant=True)` -> `use_reentrant=False`, `torch.tensor([v.item() for ...])` ->
    `torch.stack([v.reshape(()) for ...])`. A `no_grad` block or decorator is
    :mod:`graphlife.fixes.proofs.no_grad`'s: it is removed only where nothing else needs it."""
    if not isinstance(site, ast.Call):
        return []
    func = site.func
    if isinstance(func, ast.Attribute) and func.attr == "detach" and not site.args and not site.keywords:
        return [ReplaceText(title=KEEP_USE(expr=ctx.text(func.value)),
                            span=ctx.span(site), text=ctx.text(func.value))]
    if isinstance(func, ast.Attribute) and func.attr in ("tensor", "as_tensor") and len(site.args) == 1:
        inner = site.args[0]
        if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in ("item", "tolist") and not inner.args):
            return [ReplaceText(title=KEEP_USE_ITSELF(expr=ctx.text(inner.func.value)),
                                span=ctx.span(site), text=ctx.text(inner.func.value))]
        if _items_of_a_list(inner) and not site.keywords and ctx.qualified_name(func) == "torch.tensor":
            return [StackInsteadOfItems(title=KEEP_STACK(),
                                        call=ctx.span(site))]
    for keyword in site.keywords:
        if keyword.arg == "use_reentrant" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
            return [ReplaceText(title=NON_REENTRANT(),
                                span=ctx.span(keyword.value), text="False")]
    return []
