"""In-place change of `grad_output` inside a custom Function's backward.

## What it does
Analyzes `backward` with the gradient tensors it receives and follows them
(and what is still the same tensor or a view of it: `g = grad_output`,
`g = grad_output.view(-1)`, `grad_output[:, 0]`, in backward or a helper it
calls), and flags a statement that changes one of them in place: `g[mask] = 0`,
`g *= 2`, `g.mul_(2)`, `torch.relu_(g)`, `out=g`, `F.relu(g, inplace=True)`.
A new tensor (`g = grad_output.clone()`, `g = g * 2`, `grad_output[mask]`) is
not the gradient; a name that is the gradient on one branch only is not
followed after the branch.

## Why is this bad?
`grad_output` is not yours: autograd may hand the very same tensor to other
nodes. After `out = x + MyFn.apply(x)` the skip connection receives the same
gradient tensor, and after `y.sum()` it is an expanded tensor of ones whose
elements share one memory cell: changing it in place silently changes the
gradient of the other branch (or every element at once). Nothing raises; the
model just learns something else.

## What torch says
Nothing, usually (torch 2.13 only warns `Use of index_put_ on expanded tensors
is deprecated` for the `.sum()` shape). The gradients differ from a reference
computed with a cloned `grad_output`.

## Example
```python
@staticmethod
def backward(ctx, grad_output):
    x, = ctx.saved_tensors
    grad_output[x < 0] = 0
    return grad_output
```

## Use instead
```python
@staticmethod
def backward(ctx, grad_output):
    x, = ctx.saved_tensors
    grad_input = grad_output.clone()
    grad_input[x < 0] = 0
    return grad_input
```

## Fix safety
Safe: changing a copy of `grad_output` (or computing out of place) returns the same
gradient without corrupting the tensor torch passed in.

## Fixture line
The in-place statement on the gradient carries `# expect: GL403`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import FunctionBackwardEvent, InplaceEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc, SourceText
from graphlife.findings import FixRecipe, MessageTemplate, Severity
from graphlife.recipes import OutOfPlace, ReplaceText
from graphlife.rules.source_edits import line_indent, point, segment, starts_its_line

ZH_CN = Translation(
    """在自定义 Function 的 backward 中原地修改了 `grad_output`。

## 它检查什么
用 `backward` 收到的梯度张量来分析它，并跟踪这些张量（以及仍然是同一个张量或其视图的东西：`g = grad_output`、`g = grad_output.view(-1)`、`grad_output[:, 0]`，无论在 backward 中还是在它调用的辅助函数中），标记原地修改其中之一的语句：`g[mask] = 0`、`g *= 2`、`g.mul_(2)`、`torch.relu_(g)`、`out=g`、`F.relu(g, inplace=True)`。新张量（`g = grad_output.clone()`、`g = g * 2`、`grad_output[mask]`）不是梯度；只在某一个分支上是梯度的名字，在分支之后不再跟踪。

## 为什么这是问题？
`grad_output` 不归你所有：自动求导可能把同一个张量交给其他节点。在 `out = x + MyFn.apply(x)` 之后，跳跃连接收到的是同一个梯度张量；在 `y.sum()` 之后，它是一个全 1 的扩展（expand）张量，所有元素共用同一块内存：原地修改它，会悄悄改掉另一个分支的梯度（或者一次改掉所有元素）。什么错都不报，模型只是学到了别的东西。

## torch 的报错
通常不报错（对于 `.sum()` 的情形，torch 2.13 只会警告 `Use of index_put_ on expanded tensors is deprecated`）。算出的梯度与用 clone 过的 `grad_output` 算出的参考梯度不同。

## 示例
```python
@staticmethod
def backward(ctx, grad_output):
    x, = ctx.saved_tensors
    grad_output[x < 0] = 0
    return grad_output
```

## 改为
```python
@staticmethod
def backward(ctx, grad_output):
    x, = ctx.saved_tensors
    grad_input = grad_output.clone()
    grad_input[x < 0] = 0
    return grad_input
```

## 修复的安全性
安全：修改 `grad_output` 的副本（或者用非原地写法计算）返回的梯度相同，而且不会破坏 torch 传进来的张量。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="88485ce958c0",
)

RULE = Rule(
    code="GL403",
    name="inplace-on-grad-output",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

#: Methods that return a view of (or the very same) tensor.
def _star_root(node: ast.expr, star_items: set[int]) -> str | None:
    """``grads`` for ``grads[0]`` (and views of it), when ``grads`` is backward's ``*grads``
    (``star_items``: the subscripts the flow found to be its gradients)."""
    while True:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and id(node) in star_items:
            return node.value.id
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None

CHANGED = MessageTemplate(
    "GL403.changed",
    "`{shown}` is the gradient `{function}.backward` received, changed in place here: autograd can hand "
    "the same tensor to other branches (a skip connection `x + f(x)`, the expanded ones of `.sum()`), "
    "whose gradients then silently change. Clone it first (`{name} = {name}.clone()`) or compute out of place.",
    zh_cn="`{shown}` 是 `{function}.backward` 收到的梯度，却在这里被原地修改：autograd 可能把同一个张量交给其他分支"
    "（残差连接 `x + f(x)`、`.sum()` 展开出的各个梯度），这些分支的梯度会因此被悄悄改掉。"
    "请先克隆它（`{name} = {name}.clone()`），或改用非原地计算。",
)
CLONE_TITLE = MessageTemplate(
    "fix.clone-gradient", "Clone `{name}` before changing it",
    zh_cn="在修改 `{name}` 之前先克隆它")
OUT_OF_PLACE_TITLE = MessageTemplate("fix.compute-out-of-place", "Compute it out of place", zh_cn="改用非原地计算")


def _fixes(ctx: SourceText, stmt: ast.stmt, name: str, target: ast.expr, star_items: set[int]) -> list[FixRecipe]:
    fixes: list[FixRecipe] = []
    standalone = isinstance(target, ast.Name) and (
        isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call))
    )
    clone = None
    star = _star_root(target, star_items)
    if star and starts_its_line(ctx, stmt):
        indent = line_indent(ctx, stmt.lineno)
        clone = ReplaceText(
            title=CLONE_TITLE(name=star),
            span=point(ctx, stmt.lineno, len(indent.encode("utf-8"))),
            text=f"{star} = tuple(g.clone() if g is not None else g for g in {star})\n{indent}",
        )
    elif name.isidentifier() and starts_its_line(ctx, stmt):
        indent = line_indent(ctx, stmt.lineno)
        clone = ReplaceText(
            title=CLONE_TITLE(name=name),
            span=point(ctx, stmt.lineno, len(indent.encode("utf-8"))),
            text=f"{name} = {name}.clone()\n{indent}",
        )
    if standalone:
        fixes.append(OutOfPlace(title=OUT_OF_PLACE_TITLE(), stmt=ctx.span(stmt)))
    if clone:
        fixes.append(clone)
    return fixes


@dataclass
class _Gradients:
    """The gradients the running backward received: storage -> (Function, parameter name, ``*grads``)."""

    by_storage: dict[int, tuple[str, str, str | None]] = field(default_factory=dict)


@RULE.on(FunctionBackwardEvent)
def on_backward_start(event: FunctionBackwardEvent, ctx: RuleContext) -> None:
    if not ctx.in_checked_file(event.function):
        return
    grads = ctx.unit_state(_Gradients)
    for name, tensor in event.grads:
        if tensor.storage is not None:
            grads.by_storage[tensor.storage] = (event.function.name, name, event.star)


@RULE.on(InplaceEvent)
def on_inplace(event: InplaceEvent, ctx: RuleContext) -> None:
    """An in-place change of a tensor whose storage is a received gradient's: the gradient itself
    or a view of it, however the code reached it (an alias, a view, a helper)."""
    storage = event.target.storage
    if storage is None or event.target_expr is None:
        return
    grads = ctx.unit_state(_Gradients)
    found = grads.by_storage.get(storage)
    if found is None:
        return
    function, name, star = found
    target = event.target_expr
    star_items = {id(n) for n in ast.walk(target)
                  if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == star}
    root = _root_name(target)
    shown = segment(ctx, target) or name
    if star is not None and star_items:
        item = next(n for n in ast.walk(target) if id(n) in star_items)
        name = segment(ctx, item) or name
    elif root is not None:
        name = root
    message = CHANGED(shown=shown, function=function, name=name)
    stmt = event.stmt
    ctx.report(RULE, ctx.span(stmt), message, fixes=_fixes(ctx, stmt, name, target, star_items))


def _root_name(node: ast.expr) -> str | None:
    """The name an expression of views starts from (``g`` of ``g.view(-1)[0]``)."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None
