"""`ctx.save_for_backward` is given something that is not a tensor.

## What it does
Looks at every `ctx.save_for_backward(...)` in the `forward` (or
`setup_context`) of a custom `torch.autograd.Function` and flags arguments that
are certainly not tensors nor `None`: numbers, strings, tuples and lists,
shapes (`x.shape`, `x.size()`), `x.item()`, `len(...)`, or a name bound only to
such values. An error when forward computes the value itself; a warning when
it is a forward input that every `apply` call analyzed with it fills with a
non-tensor, a literal or a value known to be one (another caller could pass a
tensor).

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
from dataclasses import dataclass, field

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import CtxSave, FunctionForwardEvent, UnitEndEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc, SourceText
from graphlife.analysis.semantics import FunctionClass, Method
from graphlife.analysis.semantics.functions import saved_unpacking, walk_body
from graphlife.analysis.values import HeapRef, Number, TupleVal, Value
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity, Span
from graphlife.recipes import ReplaceText
from graphlife.rules.base import is_non_tensor_literal
from graphlife.rules.source_edits import line_indent, merge_edits, segment, starts_its_line, unpacking_text

ZH_CN = Translation(
    """传给 `ctx.save_for_backward` 的东西不是张量。

## 它检查什么
检查自定义 `torch.autograd.Function` 的 `forward`（或 `setup_context`）中的每个 `ctx.save_for_backward(...)`，标记肯定既不是张量也不是 `None` 的参数：数字、字符串、元组和列表、形状（`x.shape`、`x.size()`）、`x.item()`、`len(...)`，或者只绑定到这类值的名字。如果这个值是 forward 自己算出来的，报错误；如果它是 forward 的某个输入，而与它一起分析的每个 `apply` 调用都给这个输入传非张量（字面量，或已知不是张量的值），则报警告（别的调用方可能会传张量）。

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
    translates="a1292ebb4f78",
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


def _literal_for(method: Method, arg: ast.expr) -> ast.expr:
    """The expression behind ``arg`` for the message's wording: itself, or what a local name is
    bound to in the method."""
    if not isinstance(arg, ast.Name):
        return arg
    for node in walk_body(method):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == arg.id):
            return node.value
    return arg


#: Builtins that convert to a type named like them.
_CONVERSIONS = frozenset({"float", "int", "bool", "str", "tuple", "list", "dict"})


def _value_kind(value: Value, kinds: dict[int, str]) -> str:
    """The type torch will name, when the engine knows it (empty when it does not)."""
    if isinstance(value, Number) and value.const is not None:
        return type(value.const).__name__
    if isinstance(value, TupleVal):
        return "tuple"
    if isinstance(value, HeapRef) and kinds.get(value.oid) in ("list", "dict"):
        return kinds[value.oid]
    return ""


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
    ctx: SourceText, fn: FunctionClass, stmt: ast.stmt, call: ast.Call, bad: list[int], ctx_var: str
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


def _not_a_tensor(value: Value, kinds: dict[int, str]) -> bool:
    """Certainly neither a tensor nor ``None``: a number, string, shape, tuple, or a list or dict
    (``kinds``: the heap objects' kinds of the run, by id)."""
    if isinstance(value, (Number, TupleVal)):
        return True
    return isinstance(value, HeapRef) and kinds.get(value.oid) in ("list", "dict")


@dataclass
class _Save:
    """One ``ctx.save_for_backward(...)`` as the runs of the unit saw it."""

    fn: FunctionClass
    method: Method
    call: ast.Call
    stmt: ast.stmt
    certain: set[int] = field(default_factory=set)  # computed in forward: not a tensor on any call
    #: Arguments that are an input's value: ``True`` while every run filled that input with a non-tensor.
    from_inputs: dict[int, bool] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)  # what the engine knew of each bad argument's type


@dataclass
class _Saves:
    by_call: dict[int, _Save] = field(default_factory=dict)


@RULE.on(FunctionForwardEvent)
def on_forward(event: FunctionForwardEvent, ctx: RuleContext) -> None:
    """Note what each save of the run was given: a value forward computed that is no tensor is an
    error; an input's value that is none is a warning when every run of the unit passed one."""
    if not event.saves or not ctx.in_checked_file(event.function):
        return
    fn = ctx.autograd_function(event.function)
    if fn is None:
        return
    heap = event.state.heap
    kinds = {oid: obj.kind for oid, obj in heap.items()} if any(
        isinstance(v, HeapRef) for save in event.saves for v in save.values) else {}
    inputs = [value for _, value in event.inputs]
    pending = ctx.unit_state(_Saves)
    for save in event.saves:
        method = ctx.enclosing_function(save.call)
        if method is None or method not in (fn.forward, fn.setup_context):
            continue
        entry = pending.by_call.get(id(save.call))
        if entry is None:
            entry = pending.by_call[id(save.call)] = _Save(fn, method, save.call, save.stmt)
        _note(entry, save, inputs, kinds)


def _note(entry: _Save, save: CtxSave, inputs: list[Value], kinds: dict[int, str]) -> None:
    for index, value in enumerate(save.values):
        bad = _not_a_tensor(value, kinds)
        if any(value is given for given in inputs):
            entry.from_inputs[index] = entry.from_inputs.get(index, True) and bad
        elif bad:
            entry.certain.add(index)
        if bad and not entry.kinds.get(index):
            entry.kinds[index] = _value_kind(value, kinds)


@RULE.on(UnitEndEvent)
def on_unit_end(event: UnitEndEvent, ctx: RuleContext) -> None:
    pending = ctx.take_unit_state(_Saves)
    if pending is None:
        return
    for entry in pending.by_call.values():
        _report(ctx, entry)


def _report(ctx: RuleContext, entry: _Save) -> None:
    fn, method, call = entry.fn, entry.method, entry.call
    certain = sorted(entry.certain)
    likely = sorted(i for i, bad in entry.from_inputs.items() if bad and i not in entry.certain)
    bad = sorted(certain + likely)
    if not bad:
        return
    ctx_var = fn.ctx_of(method) or "ctx"
    target = entry.stmt
    first = bad[0]
    arg = call.args[first]
    text = segment(ctx, arg) or "?"
    kind = entry.kinds.get(first) or _describe(_literal_for(method, arg))
    names = ", ".join(f"`{segment(ctx, call.args[i])}`" for i in bad)
    message = (NOT_A_TENSOR if len(bad) == 1 else NOT_TENSORS)(
        ctx=ctx_var, function=fn.name, method=method.name, names=names, first=first, kind=kind, text=text)
    fix = _fix(ctx, fn, target, call, bad, ctx_var)
    related = [Related(ctx.span(arg), IS_KIND(text=text, kind=kind))]
    ctx.report(RULE, ctx.span(target), message, severity=Severity.ERROR if certain else Severity.WARNING,
               related=related, fixes=(fix,) if fix else ())
