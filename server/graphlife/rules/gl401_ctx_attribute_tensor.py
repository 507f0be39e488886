"""An input or output tensor of a custom Function stored as a ctx attribute instead of saved for backward.

## What it does
In the `forward` (or `setup_context`) of a custom `torch.autograd.Function`,
flags `ctx.name = value` when `value` is an input tensor of forward or a tensor
forward returns. Where the file calls `apply`, forward is analyzed with the
values it is given there. A Function nothing in the file applies is analyzed
alone: an input counts as a tensor when it is annotated `Tensor`, backward
returns a gradient for it, or forward uses it where only a tensor works (tensor
methods or attributes, `@`, a `torch` op's tensor argument, `save_for_backward`,
in forward or a helper it calls), and not when its annotation or default says
otherwise. Intermediate tensors (`ctx.mask = x > 0`) and non-tensors (`ctx.scale = scale`,
`ctx.shape = x.shape`) are the right use of ctx attributes and are not flagged.

## Why is this bad?
`ctx.save_for_backward` records the tensor's version: an in-place change before
the backward (an optimizer step, a running buffer updated in forward, `x += 1`)
then raises instead of silently producing wrong gradients. A ctx attribute is
not checked. An output stored on ctx also forms a reference cycle (output ->
grad_fn -> ctx -> output) that only the cyclic garbage collector frees, so the
activations live longer (with `gc.disable()` they leak).

## What torch says
Nothing: the gradients are silently wrong after an in-place change (with
`save_for_backward`: `one of the variables needed for gradient computation has
been modified by an inplace operation`).

## Example
```python
@staticmethod
def forward(ctx, x, weight):
    ctx.x = x
    ctx.weight = weight
    return x @ weight
```

## Use instead
```python
@staticmethod
def forward(ctx, x, weight):
    ctx.save_for_backward(x, weight)
    return x @ weight
```
and `x, weight = ctx.saved_tensors` in backward.

## Fix safety
Safe: `ctx.save_for_backward` keeps the same tensor for backward and lets torch check
it was not changed in place.

## Fixture line
The `ctx.x = x` assignment carries `# expect: GL401`.
"""

from __future__ import annotations

import ast

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import FunctionForwardEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc, SourceText
from graphlife.analysis.semantics import FunctionClass, Method
from graphlife.analysis.semantics.functions import ctx_attribute, save_for_backward_calls, saved_unpacking, walk_body
from graphlife.analysis.values import TupleVal, Value
from graphlife.findings import FixRecipe, Line, MessageTemplate, Related, Severity, Span
from graphlife.recipes import ReplaceText
from graphlife.rules.source_edits import merge_edits, segment, starts_its_line, unpacking_text

ZH_CN = Translation(
    """自定义 Function 的输入或输出张量被存成了 ctx 属性，而不是用 `ctx.save_for_backward` 保存。

## 它检查什么
在自定义 `torch.autograd.Function` 的 `forward`（或 `setup_context`）中，当 `value` 是 forward 的输入张量或 forward 返回的张量时，标记 `ctx.name = value`。本文件调用 `apply` 的地方，forward 按那里传入的值来分析。本文件没有调用 `apply` 的 Function 会被单独分析：如果某个输入带有 `Tensor` 类型注解，或者 backward 为它返回了梯度，或者 forward 在只有张量才能用的地方使用了它（张量方法或属性、`@`、`torch` 运算的张量参数、`save_for_backward`，无论在 forward 中还是在它调用的辅助函数中），它就被视为张量；如果它的类型注解或默认值表明它不是张量，则不视为张量。中间张量（`ctx.mask = x > 0`）和非张量（`ctx.scale = scale`、`ctx.shape = x.shape`）正是 ctx 属性的正确用法，不会被标记。

## 为什么这是问题？
`ctx.save_for_backward` 会记录张量的版本号：在反向传播之前发生原地修改（优化步、在 forward 中更新的运行时 buffer、`x += 1`）时，torch 会报错，而不是悄悄算出错误的梯度。ctx 属性不受这种检查。把输出存到 ctx 上还会形成循环引用（output -> grad_fn -> ctx -> output），只有循环垃圾回收器才能释放它，于是激活值活得更久（如果调用了 `gc.disable()`，就是内存泄漏）。

## torch 的报错
不报错：发生原地修改后梯度悄悄出错（如果用了 `save_for_backward`，则会报 `one of the variables needed for gradient computation has been modified by an inplace operation`）。

## 示例
```python
@staticmethod
def forward(ctx, x, weight):
    ctx.x = x
    ctx.weight = weight
    return x @ weight
```

## 改为
```python
@staticmethod
def forward(ctx, x, weight):
    ctx.save_for_backward(x, weight)
    return x @ weight
```
并在 backward 中用 `x, weight = ctx.saved_tensors` 取回。

## 修复的安全性
安全：`ctx.save_for_backward` 为反向传播保留的是同一个张量，并让 torch 检查它没有被原地修改过。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="e9e1a691565c",
)

RULE = Rule(
    code="GL401",
    name="ctx-attribute-tensor",
    severity=Severity.INFORMATION,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

_KEEPS = "`{ctx}.{attr} = {name}` keeps the {role} tensor `{name}` of `{function}` as a ctx attribute: "
_USE = " Use `{ctx}.save_for_backward({name})` and read it from `ctx.saved_tensors` in backward{read_at}."
_USE_ZH = "请改用 `{ctx}.save_for_backward({name})`，并在 `backward` 中从 `ctx.saved_tensors` 读取它{read_at}。"
OUTPUT_ON_CTX = MessageTemplate(
    "GL401.output",
    _KEEPS.replace("{role}", "output") + "an output stored on ctx makes a reference cycle (output -> grad_fn -> ctx -> "
    "output) that only the cyclic garbage collector frees, and in-place changes to it are not detected." + _USE,
    zh_cn="`{ctx}.{attr} = {name}` 把 `{function}` 的输出"
          "张量 `{name}` 存成了 ctx 的属性：存在 ctx 上的输出会形成循环引用"
    "（output -> grad_fn -> ctx -> output），只有循环垃圾回收器才能释放它，而且对它的原地修改也检测不到。" + _USE_ZH,
)
INPUT_ON_CTX = MessageTemplate(
    "GL401.input",
    _KEEPS.replace("{role}", "input") + "an in-place change to it before backward (an optimizer step, a buffer "
    "update, `+=`) is not detected and silently gives wrong gradients." + _USE,
    zh_cn="`{ctx}.{attr} = {name}` 把 `{function}` 的输入张"
          "量 `{name}` 存成了 ctx 的属性：在反向传播之前对它的原地修改"
    "（优化步、buffer 更新、`+=`）检测不到，会悄悄得到错误的梯度。" + _USE_ZH,
)
READ_AT = MessageTemplate(
    "GL401.read-at", " (it reads `{attr}` at line {line})",
    zh_cn="（`backward` 在{line}读取 `{attr}`）")
READS_HERE = MessageTemplate(
    "GL401.reads-here", "backward reads `{ctx}.{attr}` here",
    zh_cn="`backward` 在这里读取 `{ctx}.{attr}`")
SAVE_TITLE = MessageTemplate("fix.save-for-backward", "Save `{name}` with `save_for_backward`",
                             zh_cn="用 `save_for_backward` 保存 `{name}`")

def _stored_pairs(stmt: ast.Assign, ctx_var: str) -> list[tuple[ast.Attribute, ast.expr]]:
    """``(ctx.attr target, value)`` pairs of ``ctx.a = v`` or ``ctx.a, ctx.b = v, w``."""
    pairs: list[tuple[ast.Attribute, ast.expr]] = []
    for target in stmt.targets:
        if isinstance(target, ast.Attribute) and ctx_attribute(target, ctx_var):
            pairs.append((target, stmt.value))
        elif (isinstance(target, (ast.Tuple, ast.List)) and isinstance(stmt.value, (ast.Tuple, ast.List))
              and len(target.elts) == len(stmt.value.elts)):
            pairs += [(t, v) for t, v in zip(target.elts, stmt.value.elts)
                      if isinstance(t, ast.Attribute) and ctx_attribute(t, ctx_var)]
    return pairs


def _free_name(preferred: str, taken: set[str]) -> str:
    name = preferred if preferred.isidentifier() else "saved"
    while name in taken:
        name = f"saved_{name}"
    return name


def _fix(
    ctx: SourceText, fn: FunctionClass, method: Method, stmt: ast.Assign, attr: str, value: ast.Name, ctx_var: str
) -> FixRecipe | None:
    """Save the tensor with ``save_for_backward`` and read it from ``saved_tensors`` in backward."""
    backward = fn.backward
    if (backward is None or len(stmt.targets) != 1 or not ctx_attribute(stmt.targets[0], ctx_var)
            or not starts_its_line(ctx, stmt)):
        return None
    if backward not in fn.node.body:
        return None  # backward inherited from (and shared with) another class: leave it to the author
    back_ctx = fn.ctx_of(backward)
    direct = {id(n) for n in walk_body(backward)}
    uses = []
    for owner in (fn.forward, fn.setup_context, backward):
        owner_ctx = fn.ctx_of(owner)
        for node in ast.walk(owner) if owner is not None else ():
            if ctx_attribute(node, owner_ctx) == attr and node is not stmt.targets[0]:
                loaded = isinstance(getattr(node, "ctx", None), ast.Load)
                if owner is not backward or id(node) not in direct or not loaded:
                    return None  # read or written elsewhere (or in a closure): leave it to the author
                uses.append(node)
    unpacking = saved_unpacking(backward)
    saves = save_for_backward_calls(method, ctx_var)
    if unpacking is None or len(saves) > 1:
        return None
    taken = {n.id for n in ast.walk(backward) if isinstance(n, ast.Name)}
    taken |= {a.arg for a in ast.walk(backward.args) if isinstance(a, ast.arg)}
    local = _free_name(attr, taken)
    edits: list[tuple[Span, str]] = []
    stmt_span = ctx.span(stmt)
    line_text = ctx.lines[stmt_span.end_line - 1]
    rest = line_text[stmt_span.end_column - 1 :].strip()
    alone = rest == "" or rest.startswith("#")
    if saves:
        save = saves[0]
        # both at the top level of the method: moving a save across a branch would change what is saved
        parent = next((s for s in method.body if isinstance(s, ast.Expr) and s.value is save), None)
        if stmt not in method.body:
            return None
        if parent is None or save.keywords or any(isinstance(a, ast.Starred) for a in save.args) or not alone:
            return None
        args = [segment(ctx, a) or "" for a in save.args]
        new_save = f"{ctx_var}.save_for_backward({', '.join([*args, value.id])})"
        delete_assign = (Span(stmt_span.line, 1, stmt_span.end_line + 1, 1), "")
        if stmt_span.end_line >= len(ctx.lines) or not starts_its_line(ctx, parent):
            return None
        if parent.lineno < stmt.lineno:  # the value may not exist yet at the earlier save: save here instead
            save_span = ctx.span(parent)
            edits.append((Span(save_span.line, 1, save_span.end_line + 1, 1), ""))
            edits.append((stmt_span, new_save))
        else:
            edits.append((ctx.span(parent), new_save))
            edits.append(delete_assign)
        count = len(args)
    else:
        edits.append((stmt_span, f"{ctx_var}.save_for_backward({value.id})"))
        count = 0
    assign, names = unpacking
    if assign is not None:
        if len(names) != count:
            return None
        edits.append((ctx.span(assign), unpacking_text([*names, local], segment(ctx, assign.value) or "")))
    else:
        if count:
            return None
        first = backward.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            anchor = ctx.span(first)
            text = "\n" + _indent(ctx, first) + unpacking_text([local], f"{back_ctx}.saved_tensors")
            edits.append((Span(anchor.end_line, anchor.end_column, anchor.end_line, anchor.end_column), text))
        else:
            if not starts_its_line(ctx, first):
                return None
            anchor = ctx.span(first)
            text = unpacking_text([local], f"{back_ctx}.saved_tensors") + "\n" + _indent(ctx, first)
            edits.append((Span(anchor.line, anchor.column, anchor.line, anchor.column), text))
    edits += [(ctx.span(use), local) for use in uses]
    merged = merge_edits(ctx, edits)
    if merged is None:
        return None
    span, text = merged
    return ReplaceText(title=SAVE_TITLE(name=value.id), span=span, text=text)


def _indent(ctx: SourceText, stmt: ast.stmt) -> str:
    text = ctx.lines[stmt.lineno - 1]
    return text[: len(text) - len(text.lstrip())]


def _outputs(output: Value) -> list[Value]:
    """What forward returned: the value, and the items of a returned tuple."""
    return [output, *output.items] if isinstance(output, TupleVal) else [output]


@RULE.on(FunctionForwardEvent)
def on_forward(event: FunctionForwardEvent, ctx: RuleContext) -> None:
    """Each ``ctx.attr = name`` of the run whose value the engine knows is a tensor and is an
    input forward was given or a tensor it returned (the same value, not a copy or a result)."""
    if not event.stores or not ctx.in_checked_file(event.function):
        return
    fn = ctx.autograd_function(event.function)
    if fn is None:
        return
    outputs = _outputs(event.output)
    for store in event.stores:
        method = ctx.enclosing_function(store.stmt)
        ctx_var = fn.ctx_of(method) if method in (fn.forward, fn.setup_context) else None
        if method is None or ctx_var is None or not isinstance(store.stmt, ast.Assign):
            continue
        value = next((v for t, v in _stored_pairs(store.stmt, ctx_var) if t is store.target), None)
        if not isinstance(value, ast.Name) or not ctx.is_tensor(store.value):
            continue
        if any(store.value is output for output in outputs):
            template = OUTPUT_ON_CTX
        elif any(store.value is given or store.value == given for _, given in event.inputs):
            template = INPUT_ON_CTX
        else:
            continue
        attr = store.target.attr
        related = []
        if fn.backward is not None:
            back_ctx = fn.ctx_of(fn.backward)
            reads = [n for n in walk_body(fn.backward) if ctx_attribute(n, back_ctx) == attr]
            if reads:
                related.append(Related(ctx.span(reads[0]), READS_HERE(ctx=back_ctx, attr=attr)))
        read_at = READ_AT(attr=attr, line=Line(related[0].span.line)) if related else ""
        message = template(ctx=ctx_var, attr=attr, name=value.id, function=fn.name, read_at=read_at)
        fix = _fix(ctx, fn, method, store.stmt, attr, value, ctx_var)
        ctx.report(RULE, ctx.span(store.stmt), message, related=related, fixes=(fix,) if fix else ())
