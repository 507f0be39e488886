"""A backward is given `retain_variables=`, a keyword torch removed: the call raises.

## What it does
Reports `loss.backward(retain_variables=...)`, `torch.autograd.backward(...,
retain_variables=...)` and `torch.autograd.grad(..., retain_variables=...)`, the
spelling of old tutorials (PyTorch 0.3 and before) for what is now
`retain_graph=`.

## Why is this bad?
The keyword was renamed to `retain_graph` and the old name then removed, so the
call raises before any gradient is computed - after the whole forward pass of the
first batch has run.

## What torch says
`TypeError: Tensor.backward() got an unexpected keyword argument 'retain_variables'`

## Example
```python
loss.backward(retain_variables=True)
```

## Use instead
```python
loss.backward(retain_graph=True)   # or no keyword, if no later backward needs this graph
```
Other relics of the same era still run but do nothing: `Variable(t)` returns `t`
itself, `Variable(t, requires_grad=True)` is a leaf that requires grad, and
`volatile=True` is ignored (a graph is recorded; use `with torch.no_grad():`).

## Fix safety
Safe: `retain_graph=` is the name torch gave `retain_variables=`; the graph is kept exactly
when the code asked for it, and the call runs instead of raising.

## Fixture line
The statement with the backward call.
"""

from __future__ import annotations

import ast

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.rule_api import ModuleContext, Rule, RuleDoc
from graphlife.findings import MessageTemplate, Severity
from graphlife.recipes import ReplaceText

ZH_CN = Translation(
    """反向传播用了 `retain_variables=`，这是 torch 已经移除的关键字参数：调用会报错。

## 它检查什么
报告 `loss.backward(retain_variables=...)`、`torch.autograd.backward(..., retain_variables=...)` 和 `torch.autograd.grad(..., retain_variables=...)`。这是老教程（PyTorch 0.3 及更早）的写法，对应现在的 `retain_graph=`。

## 为什么这是问题？
这个关键字参数先是改名为 `retain_graph`，旧名字随后被移除，所以调用在算出任何梯度之前就报错——而此时第一个 batch 的整个前向传播已经跑完了。

## torch 的报错
`TypeError: Tensor.backward() got an unexpected keyword argument 'retain_variables'`

## 示例
```python
loss.backward(retain_variables=True)
```

## 改为
```python
loss.backward(retain_graph=True)   # 如果后面没有反向传播还需要这张计算图，就不加这个参数
```
同一时代的其他遗留写法还能运行，但什么也不做：`Variable(t)` 返回的就是 `t` 本身，`Variable(t, requires_grad=True)` 是一个需要梯度的叶子张量，`volatile=True` 会被忽略（计算图照样会被记录；请用 `with torch.no_grad():`）。

## 修复的安全性
安全：`retain_graph=` 就是 torch 给 `retain_variables=` 起的新名字；计算图只在代码要求时被保留，调用正常运行而不再报错。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="71fb5bc6fdb6",
)

RULE = Rule(
    code="GL108",
    name="removed-autograd-keyword",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="got an unexpected keyword argument 'retain_variables'",
)

REMOVED = MessageTemplate(
    "GL108.retain-variables",
    "`{call}` raises `TypeError`: torch removed the keyword `retain_variables`. Write `retain_graph={value}` "
    "(or drop it if no later backward goes through this graph).",
    zh_cn="`{call}` 会抛出 `TypeError`：torch 已经移除了关键字参数 `retain_variables`。请写成 `retain_graph={value}`"
    "（如果之后没有反向传播再经过这张计算图，就直接去掉它）。",
)
RETAIN_GRAPH_TITLE = MessageTemplate("fix.use-retain-graph", "Use `retain_graph=`", zh_cn="改用 `retain_graph=`")

#: The autograd functions that took ``retain_variables`` (as ``Tensor.backward`` did).
_FUNCTIONS = frozenset({"torch.autograd.backward", "torch.autograd.grad"})


def _is_backward_call(ctx: ModuleContext, call: ast.Call, own: set[str]) -> bool:
    """``x.backward(...)`` on a value (not a module's own function, nor an object of a class
    of this file, whose ``backward`` may take any keyword), or an autograd function."""
    names = ctx.semantics.names
    if names.qualified_name_in(call.func, _FUNCTIONS) is not None:
        return True
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "backward" or names.qualified_name(func) is not None:
        return False
    root = func.value
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    return not (isinstance(root, ast.Name) and root.id in own)


def _own_objects(ctx: ModuleContext) -> set[str]:
    """Names the file binds to an instance of a class it defines (``recorder = Recorder()``)."""
    classes = {node.name for node in ctx.semantics.nodes(ast.ClassDef)}
    return {
        target.id
        for assign in ctx.semantics.nodes(ast.Assign)
        if isinstance(assign.value, ast.Call) and isinstance(assign.value.func, ast.Name)
        and assign.value.func.id in classes
        for target in assign.targets
        if isinstance(target, ast.Name)
    }


def _given_retain_variables(call: ast.Call) -> bool:
    return any(k.arg == "retain_variables" for k in call.keywords) if call.keywords else False


def check_module(ctx: ModuleContext) -> None:
    """Every backward call of the file given the removed keyword (in a file that uses torch)."""
    if not any(name == "torch" or name.startswith("torch.") for name in ctx.semantics.names.imported()):
        return  # `backward` means torch's only where torch is used
    own: set[str] | None = None
    for call in ctx.semantics.nodes_where(ast.Call, _given_retain_variables):
        keyword = next(k for k in call.keywords if k.arg == "retain_variables")
        own = _own_objects(ctx) if own is None else own
        if not _is_backward_call(ctx, call, own):
            continue
        value = ast.get_source_segment(ctx.source, keyword.value) or "True"
        statement = ctx.semantics.statement_of(call)
        fix = ReplaceText(title=RETAIN_GRAPH_TITLE(), span=ctx.span(keyword), text=f"retain_graph={value}")
        ctx.reporter.report(RULE, ctx.span(statement if statement is not None else call),
                            REMOVED(call=ast.get_source_segment(ctx.source, call.func) or "backward", value=value),
                            fixes=(fix,))


RULE.check_module = check_module
