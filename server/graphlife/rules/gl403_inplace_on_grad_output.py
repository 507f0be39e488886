"""In-place change of `grad_output` inside a custom Function's backward.

## What it does
Follows the gradient parameters of `backward` (and the names that are still
the same tensor or a view of it: `g = grad_output`, `g = grad_output.view(-1)`,
`grad_output[:, 0]`) through the body, and flags a statement that changes one
of them in place: `g[mask] = 0`, `g *= 2`, `g.mul_(2)`, `torch.relu_(g)`,
`out=g`, `F.relu(g, inplace=True)`. A name rebound to a new tensor
(`g = grad_output.clone()`, `g = g * 2`) is no longer followed; a name that is
still the gradient on one branch only is not followed after the branch.

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
from collections.abc import Iterator

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.rule_api import ModuleContext, Rule, RuleDoc
from graphlife.analysis.semantics import Names
from graphlife.analysis.semantics.functions import call_params, takes_self_before_ctx
from graphlife.findings import FixRecipe, MessageTemplate, Severity
from graphlife.recipes import OutOfPlace, ReplaceText
from graphlife.rules.source_edits import line_indent, point, segment, starts_its_line

ZH_CN = Translation(
    """在自定义 Function 的 backward 中原地修改了 `grad_output`。

## 它检查什么
在 `backward` 的函数体中跟踪它的梯度参数（以及仍然是同一个张量或其视图的名字：`g = grad_output`、`g = grad_output.view(-1)`、`grad_output[:, 0]`），标记原地修改其中之一的语句：`g[mask] = 0`、`g *= 2`、`g.mul_(2)`、`torch.relu_(g)`、`out=g`、`F.relu(g, inplace=True)`。一个名字被重新绑定到新张量后（`g = grad_output.clone()`、`g = g * 2`）就不再跟踪；只在某一个分支上仍是梯度的名字，在分支之后也不再跟踪。

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
    translates="8c1a7831dd18",
)

RULE = Rule(
    code="GL403",
    name="inplace-on-grad-output",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

#: Methods that return a view of (or the very same) tensor.
_VIEW_METHODS = frozenset(
    "view view_as expand expand_as t transpose permute unsqueeze squeeze narrow select diagonal unflatten "
    "as_strided detach swapaxes swapdims movedim unfold real imag".split()
)
_VIEW_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "mH"})


def _in_place(name: str) -> bool:
    """``mul_``, ``torch.relu_``: the naming of in-place operations (not ``__dunder__``)."""
    return name.endswith("_") and not name.endswith("__")


def _basic_index(node: ast.expr) -> bool:
    """Indexing that gives a view (ints, slices, `...`, `None`), not a copy (masks, index tensors)."""
    if isinstance(node, ast.Tuple):
        return all(_basic_index(e) for e in node.elts)
    if isinstance(node, ast.Slice):
        return True
    if isinstance(node, ast.Constant):
        value = node.value
        return value is None or value is Ellipsis or (isinstance(value, int) and not isinstance(value, bool))
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return isinstance(node.operand.value, int)
    return False


class _Flow:
    """Must-alias analysis of the gradient inside one backward."""

    def __init__(self, ctx: ModuleContext, names: Names, fn_name: str, star: str | None) -> None:
        self.ctx = ctx
        self.names = names
        self.fn_name = fn_name
        self.star = star  # `*grad_outputs`: its constant-indexed elements are gradients
        self.found: list[tuple[ast.stmt, str, ast.expr]] = []
        #: The ``grads[0]`` subscripts of backward's ``*grads`` found to be gradients (by id).
        self.star_items: set[int] = set()

    # -- what is the gradient --------------------------------------------------------
    def root(self, node: ast.expr, names: frozenset[str]) -> str | None:
        """The gradient name ``node`` is (a view of), or ``None``."""
        while True:
            if isinstance(node, ast.Name):
                return node.id if node.id in names and node.id != self.star else None
            if isinstance(node, ast.Attribute) and node.attr in _VIEW_ATTRIBUTES:
                node = node.value
            elif isinstance(node, ast.Subscript):
                if (
                    self.star
                    and isinstance(node.value, ast.Name)
                    and node.value.id == self.star
                    and self.star in names
                    and _basic_index(node.slice)
                ):
                    self.star_items.add(id(node))
                    return segment(self.ctx, node) or self.star
                if not _basic_index(node.slice):
                    return None
                node = node.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in _VIEW_METHODS):
                node = node.func.value
            else:
                return None

    def mutation(self, stmt: ast.stmt, names: frozenset[str]) -> tuple[str, ast.expr] | None:
        """``(gradient name, mutated expression)`` when the statement changes a gradient in place."""
        if isinstance(stmt, ast.AugAssign):
            name = self.root(stmt.target, names)
            if name:
                return name, stmt.target
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript) and (name := self.root(target.value, names)):
                    return name, target.value
        for node in _expressions(stmt):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            resolved = self.names.qualified_name(func)
            if (
                isinstance(func, ast.Attribute)
                and _in_place(func.attr)
                and resolved is None
                and (name := self.root(func.value, names))
            ):
                return name, func.value  # `g.mul_(2)`
            if (
                resolved
                and resolved.startswith("torch.")
                and _in_place(resolved)
                and node.args
                and (name := self.root(node.args[0], names))
            ):
                return name, node.args[0]  # `torch.relu_(g)`
            for keyword in node.keywords:
                if keyword.arg == "out" and (name := self.root(keyword.value, names)):
                    return name, keyword.value
                if (
                    keyword.arg == "inplace"
                    and isinstance(keyword.value, ast.Constant)
                    and keyword.value.value is True
                    and node.args
                    and (name := self.root(node.args[0], names))
                ):
                    return name, node.args[0]
        return None

    # -- walking the body ------------------------------------------------------------
    def block(self, body: list[ast.stmt], names: frozenset[str], report: bool) -> frozenset[str]:
        for stmt in body:
            names = self.statement(stmt, names, report)
        return names

    def statement(self, stmt: ast.stmt, names: frozenset[str], report: bool) -> frozenset[str]:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return names - {stmt.name}
        if isinstance(stmt, ast.If):
            self._check(stmt.test, stmt, names, report)
            return self.block(stmt.body, names, report) & self.block(stmt.orelse, names, report)
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            if isinstance(stmt, ast.While):
                self._check(stmt.test, stmt, names, report)
                entry = names
            else:
                entry = names - set(_stored(stmt.target))
            entry = entry & self.block(stmt.body, entry, False)
            after = self.block(stmt.body, entry, report)
            return self.block(stmt.orelse, entry & after, report) & names if stmt.orelse else entry & after
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    names = names - set(_stored(item.optional_vars))
            return self.block(stmt.body, names, report)
        if isinstance(stmt, ast.Try):
            after_body = self.block(stmt.body, names, report)
            result = after_body
            for handler in stmt.handlers:
                result = result & self.block(handler.body, names & after_body - {handler.name or ""}, report)
            result = result & self.block(stmt.orelse, after_body, report)
            return self.block(stmt.finalbody, result & names, report)
        if report:
            hit = self.mutation(stmt, names)
            if hit:
                self.found.append((stmt, hit[0], hit[1]))
        if isinstance(stmt, ast.Assign):
            keep = self.root(stmt.value, names)
            for target in stmt.targets:
                names = names | {target.id} if isinstance(target, ast.Name) and keep else names - set(_stored(target))
            return names
        if isinstance(stmt, (ast.AnnAssign,)) and isinstance(stmt.target, ast.Name):
            if stmt.value is not None and self.root(stmt.value, names):
                return names | {stmt.target.id}
            return names - {stmt.target.id}
        if isinstance(stmt, ast.AugAssign):
            return names  # an in-place change keeps the name on the same tensor
        stored = [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)]
        return names - set(stored)

    def _check(self, expr: ast.expr, stmt: ast.stmt, names: frozenset[str], report: bool) -> None:
        if report:
            hit = self.mutation(ast.Expr(value=expr), names)
            if hit:
                self.found.append((stmt, hit[0], hit[1]))


def _expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """Every expression node of a simple statement (not of nested bodies)."""
    for child in ast.iter_child_nodes(stmt):
        if isinstance(child, ast.expr):
            yield from ast.walk(child)


def _stored(target: ast.AST) -> list[str]:
    """Names a target rebinds (``g[i] = v`` and ``g.x = v`` rebind nothing)."""
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


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


def _fixes(ctx: ModuleContext, stmt: ast.stmt, name: str, target: ast.expr, star_items: set[int]) -> list[FixRecipe]:
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


def check_module(ctx: ModuleContext) -> None:
    semantics = ctx.semantics
    seen: set[int] = set()
    for fn in semantics.functions.classes:
        backward = fn.backward
        if backward is None or id(backward) in seen or takes_self_before_ctx(backward):
            continue
        seen.add(id(backward))
        grads = [p.arg for p in call_params(backward)[1:]]
        star = backward.args.vararg.arg if backward.args.vararg else None
        if not grads and not star:
            continue
        flow = _Flow(ctx, semantics.names, fn.name, star)
        flow.block(backward.body, frozenset(grads + ([star] if star else [])), True)
        for stmt, name, target in flow.found:
            shown = segment(ctx, target) or name
            message = CHANGED(shown=shown, function=fn.name, name=name)
            ctx.reporter.report(RULE, ctx.span(stmt), message, fixes=_fixes(ctx, stmt, name, target, flow.star_items))


RULE.check_module = check_module
