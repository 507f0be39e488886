"""`ctx.save_for_backward` is given something that is not a tensor.

## What it does
Looks at every `ctx.save_for_backward(...)` in the `forward` (or
`setup_context`) of a custom `torch.autograd.Function` and flags arguments that
are certainly not tensors nor `None`: numbers, strings, tuples and lists,
shapes (`x.shape`, `x.size()`), `x.item()`, `len(...)`, or a name bound only to
such values. An error when the value is certain from the forward itself; a
warning when it comes from a forward input that every `apply` call of the file
fills with a non-tensor literal (another caller could pass a tensor).

## Why is this bad?
`save_for_backward` only stores tensors (it tracks their version counters to
detect in-place changes); it refuses anything else. The call fails at the
`Fn.apply(...)` of every training step (when an input requires grad and grad
mode is on; under `torch.no_grad()` torch 2.13 does not check).

## What torch says
`TypeError: save_for_backward can only save variables, but argument 1 is of type float`

## Example
```python
@staticmethod
def forward(ctx, x, alpha):
    ctx.save_for_backward(x, alpha)
    return x * alpha
```

## Use instead
```python
@staticmethod
def forward(ctx, x, alpha):
    ctx.save_for_backward(x)
    ctx.alpha = alpha
    return x * alpha
```

## Fix safety
Safe: passing the tensors one by one, and keeping non-tensor values as ctx attributes,
saves the same values.

## Fixture line
The `ctx.save_for_backward(...)` statement carries `# expect: GL406`.
"""

from __future__ import annotations

import ast

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.rule_api import ModuleContext, Rule, RuleDoc
from graphlife.analysis.semantics import ApplyCall, FunctionClass, Method
from graphlife.analysis.semantics.functions import save_for_backward_calls, saved_unpacking, walk_body
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity, Span
from graphlife.recipes import ReplaceText
from graphlife.rules.base import is_non_tensor_literal
from graphlife.rules.source_edits import line_indent, merge_edits, segment, starts_its_line, unpacking_text

ZH_CN = Translation(
    """传给 `ctx.save_for_backward` 的东西不是张量。

## 它检查什么
检查自定义 `torch.autograd.Function` 的 `forward`（或 `setup_context`）中的每个 `ctx.save_for_backward(...)`，标记肯定既不是张量也不是 `None` 的参数：数字、字符串、元组和列表、形状（`x.shape`、`x.size()`）、`x.item()`、`len(...)`，或者只绑定到这类值的名字。如果从 forward 本身就能确定这个值，报错误；如果它来自 forward 的某个输入，而本文件中每个 `apply` 调用都给这个输入传非张量字面量，则报警告（别的调用方可能会传张量）。

## 为什么这是问题？
`save_for_backward` 只保存张量（它跟踪张量的版本计数器来发现原地修改），其他东西一律拒绝。每个训练步的 `Fn.apply(...)` 都会因此失败（在某个输入需要梯度且处于梯度模式时；在 `torch.no_grad()` 下 torch 2.13 不做检查）。

## torch 的报错
`TypeError: save_for_backward can only save variables, but argument 1 is of type float`

## 示例
```python
@staticmethod
def forward(ctx, x, alpha):
    ctx.save_for_backward(x, alpha)
    return x * alpha
```

## 改为
```python
@staticmethod
def forward(ctx, x, alpha):
    ctx.save_for_backward(x)
    ctx.alpha = alpha
    return x * alpha
```

## 修复的安全性
安全：逐个传入张量，把非张量的值留作 ctx 属性，保存的值完全相同。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="fce0cd344c93",
)

RULE = Rule(
    code="GL406",
    name="save-for-backward-non-tensor",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="save_for_backward can only save variables, but argument 1 is of type float",
)

_NOT_A_TENSOR = ("`{ctx}.save_for_backward` in `{function}.{method}` gets {names}, which {verb}: torch raises "
                 "`TypeError: save_for_backward can only save variables, but argument {first} is of type {kind}` at "
                 "`{function}.apply(...)`. Save only tensors; store `{text}` as `{ctx}.<name> = {text}`.")
_NOT_A_TENSOR_ZH = ("`{function}.{method}` 中的 `{ctx}.save_for_backward` 收到了 {names}，{verb}："
                    "调用 `{function}.apply(...)` 时 torch 会报错"
                    " `TypeError: save_for_backward can only save variables, "
                    "but argument {first} is of type {kind}`。只保存张量；把 `{text}` 存为 `{ctx}.<name> = {text}`。")
NOT_A_TENSOR = MessageTemplate("GL406.not-a-tensor", _NOT_A_TENSOR.replace("{verb}", "is not a tensor"),
                               zh_cn=_NOT_A_TENSOR_ZH.replace("{verb}", "它不是张量"))
NOT_TENSORS = MessageTemplate("GL406.not-tensors", _NOT_A_TENSOR.replace("{verb}", "are not tensors"),
                              zh_cn=_NOT_A_TENSOR_ZH.replace("{verb}", "它们不是张量"))
IS_KIND = MessageTemplate("GL406.is-kind", "`{text}` is {kind}", zh_cn="`{text}` 的类型是 {kind}")
ONE_BY_ONE_TITLE = MessageTemplate("fix.save-one-by-one", "Pass the tensors one by one", zh_cn="把张量逐个传入")
CTX_ATTRIBUTES_TITLE = MessageTemplate("fix.non-tensors-on-ctx", "Store the non-tensor values as ctx attributes",
                                       zh_cn="把非张量的值存为 ctx 的属性")


def _bound_only_to_non_tensors(method: Method, name: str) -> bool:
    """Every binding of ``name`` in the method is ``name = <non-tensor literal>`` (and it is no parameter)."""
    params = {a.arg for a in [*method.args.posonlyargs, *method.args.args, *method.args.kwonlyargs]}
    if name in params:
        return False
    simple_targets: dict[int, ast.expr] = {}
    for node in walk_body(method):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            simple_targets[id(node.targets[0])] = node.value
    stores = [
        n for n in walk_body(method) if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
    ]
    return bool(stores) and all(
        id(n) in simple_targets and is_non_tensor_literal(simple_targets[id(n)]) for n in stores
    )


def _input_filled_with_literals(fn: FunctionClass, name: str, calls: list[ApplyCall]) -> bool:
    """Every ``apply`` call of the file (at least one) passes a non-tensor literal for input ``name``."""
    inputs = [a.arg for a in fn.forward_inputs()]
    if name not in inputs:
        return False
    index = inputs.index(name)
    mine = [c for c in calls if c.fn is fn]
    if not mine:
        return False
    for call in mine:
        value = call.positional(index)
        if value is None:
            value = next((k.value for k in call.call.keywords if k.arg == name), None)
        if value is None or not is_non_tensor_literal(value):
            return False
    return True


def _literal_for(fn: FunctionClass, method: Method, arg: ast.expr, calls: list[ApplyCall]) -> ast.expr:
    """The literal behind ``arg``: itself, the value a local name is bound to, or what an ``apply`` call passes."""
    if not isinstance(arg, ast.Name):
        return arg
    for node in walk_body(method):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == arg.id):
            return node.value
    inputs = [a.arg for a in fn.forward_inputs()]
    if arg.id in inputs:
        for call in calls:
            if call.fn is fn:
                value = call.positional(inputs.index(arg.id))
                if value is not None:
                    return value
    return arg


#: Builtins that convert to a type named like them.
_CONVERSIONS = frozenset({"float", "int", "bool", "str", "tuple", "list", "dict"})


def _describe(node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        return type(node.value).__name__
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return "torch.Size"
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size"
            and not node.args):
        return "torch.Size"
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return type(node.operand.value).__name__
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONVERSIONS:
        return node.func.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        return "int"
    if isinstance(node, ast.Tuple):
        return "tuple"
    if isinstance(node, (ast.List, ast.ListComp)):
        return "list"
    return "a non-tensor type"


def _attr_name(node: ast.expr, index: int, used: set[str]) -> str:
    if isinstance(node, ast.Name):
        base = node.id
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        base = f"{node.value.id}_{node.attr}"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        base = f"{node.func.value.id}_{node.func.attr}"
    else:
        base = f"saved_{index}"
    name = base
    while name in used:
        name += "_value"
    used.add(name)
    return name


def _fix(
    ctx: ModuleContext, fn: FunctionClass, stmt: ast.stmt, call: ast.Call, bad: list[int], ctx_var: str
) -> FixRecipe | None:
    """Move the non-tensor arguments to ctx attributes, in forward and in backward's unpacking."""
    if not isinstance(stmt, ast.Expr) or stmt.value is not call or not starts_its_line(ctx, stmt):
        return None
    if not call.args or call.keywords:
        return None
    packed = call.args[bad[0]] if len(bad) == 1 else None
    if isinstance(packed, (ast.Tuple, ast.List)):
        elements = packed.elts
        if elements and not any(isinstance(e, ast.Starred) or is_non_tensor_literal(e) for e in elements):
            text = ", ".join(segment(ctx, e) or "" for e in elements)
            return ReplaceText(title=ONE_BY_ONE_TITLE(), span=ctx.span(packed), text=text)
    used = fn.ctx_attributes_used()
    moved = {i: _attr_name(call.args[i], i, used) for i in bad}
    kept = [segment(ctx, a) or "" for i, a in enumerate(call.args) if i not in moved]
    first, last = ctx.span(call.args[0]), ctx.span(call.args[-1])
    indent = line_indent(ctx, stmt.lineno)
    edits: list[tuple[Span, str]] = [(Span(first.line, first.column, last.end_line, last.end_column), ", ".join(kept))]
    stmt_span = ctx.span(stmt)
    assigns = "".join(
        f"\n{indent}{ctx_var}.{attr} = {segment(ctx, call.args[i])}" for i, attr in moved.items()
    )
    edits.append((Span(stmt_span.end_line, stmt_span.end_column, stmt_span.end_line, stmt_span.end_column), assigns))
    if fn.backward is not None:
        unpacking = saved_unpacking(fn.backward)
        if unpacking is None:
            return None
        assign, names = unpacking
        if assign is not None:
            if len(names) != len(call.args):
                return None
            back_ctx = fn.ctx_of(fn.backward)
            rest = [n for i, n in enumerate(names) if i not in moved]
            back_indent = line_indent(ctx, assign.lineno)
            lines = []
            if rest:
                lines.append(unpacking_text(rest, segment(ctx, assign.value) or ""))
            lines += [f"{names[i]} = {back_ctx}.{attr}" for i, attr in moved.items()]
            edits.append((ctx.span(assign), f"\n{back_indent}".join(lines)))
    merged = merge_edits(ctx, edits)
    if merged is None:
        return None
    span, text = merged
    return ReplaceText(title=CTX_ATTRIBUTES_TITLE(), span=span, text=text)


def check_module(ctx: ModuleContext) -> None:
    model = ctx.semantics.functions
    calls = model.calls
    for fn in model.classes:
        for method in (fn.forward, fn.setup_context):
            ctx_var = fn.ctx_of(method)
            if method is None or ctx_var is None:
                continue
            parents = {id(child): node for node in walk_body(method) for child in ast.iter_child_nodes(node)}
            for call in save_for_backward_calls(method, ctx_var):
                certain: list[int] = []
                likely: list[int] = []
                for index, arg in enumerate(call.args):
                    if isinstance(arg, ast.Starred):
                        break
                    if is_non_tensor_literal(arg) or (
                        isinstance(arg, ast.Name) and _bound_only_to_non_tensors(method, arg.id)
                    ):
                        certain.append(index)
                    elif (isinstance(arg, ast.Name) and method is fn.forward
                          and _input_filled_with_literals(fn, arg.id, calls)):
                        likely.append(index)
                bad = sorted(certain + likely)
                if not bad:
                    continue
                stmt = parents.get(id(call))
                while stmt is not None and not isinstance(stmt, ast.stmt):
                    stmt = parents.get(id(stmt))
                target = stmt if stmt is not None else call
                first = bad[0]
                arg = call.args[first]
                text = segment(ctx, arg) or "?"
                kind = _describe(_literal_for(fn, method, arg, calls))
                names = ", ".join(f"`{segment(ctx, call.args[i])}`" for i in bad)
                message = (NOT_A_TENSOR if len(bad) == 1 else NOT_TENSORS)(
                    ctx=ctx_var, function=fn.name, method=method.name, names=names, first=first, kind=kind, text=text)
                fix = _fix(ctx, fn, target, call, sorted(bad), ctx_var) if isinstance(target, ast.stmt) else None
                related = [Related(ctx.span(arg), IS_KIND(text=text, kind=kind))]
                ctx.reporter.report(
                    RULE,
                    ctx.span(target),
                    message,
                    severity=Severity.ERROR if certain else Severity.WARNING,
                    related=related,
                    fixes=(fix,) if fix else (),
                )


RULE.check_module = check_module
