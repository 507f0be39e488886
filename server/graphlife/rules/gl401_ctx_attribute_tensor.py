"""An input or output tensor of a custom Function stored as a ctx attribute instead of saved for backward.

## What it does
In the `forward` (or `setup_context`) of a custom `torch.autograd.Function`,
flags `ctx.name = value` when `value` is an input tensor of forward or a tensor
forward returns. Inputs count as tensors when forward uses them like tensors
(tensor methods or attributes, `@`, the first argument of a `torch` function,
`save_for_backward`, a `Tensor` annotation) and nothing says otherwise (a
non-tensor default, annotation, or literal in an `apply` call of the file).
Intermediate tensors (`ctx.mask = x > 0`) and non-tensors (`ctx.scale = scale`,
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
from graphlife.analysis.rule_api import ModuleContext, Rule, RuleDoc
from graphlife.analysis.semantics import ApplyCall, FunctionClass, Method, Names
from graphlife.analysis.semantics.functions import (
    call_params,
    ctx_attribute,
    returns,
    save_for_backward_calls,
    saved_unpacking,
    walk_body,
)
from graphlife.findings import FixRecipe, Line, MessageTemplate, Related, Severity, Span
from graphlife.recipes import ReplaceText
from graphlife.rules.base import is_non_tensor_literal
from graphlife.rules.source_edits import merge_edits, segment, starts_its_line, unpacking_text

ZH_CN = Translation(
    """自定义 Function 的输入或输出张量被存成了 ctx 属性，而不是用 `ctx.save_for_backward` 保存。

## 它检查什么
在自定义 `torch.autograd.Function` 的 `forward`（或 `setup_context`）中，当 `value` 是 forward 的输入张量或 forward 返回的张量时，标记 `ctx.name = value`。如果 forward 把某个输入当作张量使用（调用张量方法或属性、`@`、作为 `torch` 函数的第一个参数、`save_for_backward`、`Tensor` 类型注解），并且没有相反的证据（非张量的默认值、类型注解，或本文件某处 `apply` 调用中传入的字面量），这个输入就被视为张量。中间张量（`ctx.mask = x > 0`）和非张量（`ctx.scale = scale`、`ctx.shape = x.shape`）正是 ctx 属性的正确用法，不会被标记。

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
    translates="c06d11ab80c1",
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

#: Attributes and methods that, used on a forward input, show it is a tensor (arbitrary objects,
#: process groups, meshes, metadata and modules have attributes too: only these count).
_TENSOR_ATTRIBUTES = frozenset(
    "shape dtype device size dim ndim numel view view_as reshape reshape_as t mT contiguous clone detach sum mean "
    "exp log sigmoid tanh relu clamp clamp_min clamp_max abs sign pow sqrt rsqrt matmul mm bmm mv mul add sub div "
    "unsqueeze squeeze expand expand_as permute transpose flatten unflatten new_zeros new_ones new_empty new_full "
    "new_tensor is_floating_point norm masked_fill gather scatter index_select chunk split cumsum softmax "
    "log_softmax type_as narrow select unbind argmax argmin where addmm grad_fn is_leaf requires_grad "
    "data_ptr stride storage_offset nelement element_size is_contiguous square reciprocal neg".split()
)
#: torch namespaces whose functions take a tensor first (not torch.distributed & co).
_TENSOR_NAMESPACES = ("torch.", "torch.nn.functional.", "torch.special.", "torch.linalg.", "torch.fft.")
_FACTORIES = frozenset(
    "zeros ones empty full randn rand arange linspace tensor as_tensor randint eye zeros_like ones_like "
    "empty_like full_like".split()
)


def _annotation_name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.rsplit(".", 1)[-1]
    return None


class _Inputs:
    """Which forward inputs are tensors: evidence from forward's body, annotations, defaults and apply calls."""

    def __init__(self, fn: FunctionClass, scopes: Names, calls: list[ApplyCall]) -> None:
        forward = fn.forward
        assert forward is not None
        self.params = fn.forward_inputs()
        names = [p.arg for p in self.params]
        defaults = dict(zip(reversed(names), reversed(forward.args.defaults)))
        self.tensor: set[str] = set()
        self.not_tensor: set[str] = set()
        for param in self.params:
            annotation = _annotation_name(param.annotation)
            if annotation == "Tensor":
                self.tensor.add(param.arg)
            elif annotation is not None or isinstance(param.annotation, ast.expr):
                self.not_tensor.add(param.arg)  # annotated as something else (or a union): trust the author
            default = defaults.get(param.arg)
            if default is not None and is_non_tensor_literal(default):
                self.not_tensor.add(param.arg)
        for call in calls:
            if call.fn is not fn:
                continue
            for index, name in enumerate(names):
                value = call.positional(index)
                if value is not None and is_non_tensor_literal(value):
                    self.not_tensor.add(name)
        body_methods = [m for m in (forward, fn.setup_context) if m is not None]
        wanted = set(names)
        for method in body_methods:
            for node in walk_body(method):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in wanted:
                    if node.attr in _TENSOR_ATTRIBUTES:
                        self.tensor.add(node.value.id)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in wanted:
                    self.not_tensor.add(node.func.id)  # called like a function or module: not a tensor
                elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                    for side in (node.left, node.right):
                        if isinstance(side, ast.Name) and side.id in wanted:
                            self.tensor.add(side.id)
                elif isinstance(node, ast.Call):
                    resolved = scopes.qualified_name(node.func)
                    namespace, _, function = (resolved or "").rpartition(".")
                    if (
                        f"{namespace}." in _TENSOR_NAMESPACES
                        and function not in _FACTORIES
                        and not function.startswith("is_")
                        and node.args
                        and isinstance(node.args[0], ast.Name)
                        and node.args[0].id in wanted
                    ):
                        self.tensor.add(node.args[0].id)
                    if ctx_attribute(node.func, fn.ctx_of(method)) == "save_for_backward":
                        self.tensor.update(a.id for a in node.args if isinstance(a, ast.Name) and a.id in wanted)
        # backward returns a gradient (not `None`) for it: torch accepts that only for tensor inputs.
        if fn.backward is not None and not forward.args.vararg:
            for ret in returns(fn.backward):
                values = ret.value.elts if isinstance(ret.value, ast.Tuple) else [ret.value]
                if len(values) != len(names) or any(isinstance(v, ast.Starred) for v in values):
                    continue
                for name, value in zip(names, values):
                    if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
                        self.tensor.add(name)
        rebound = {
            n.id for n in walk_body(forward) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        self.not_tensor |= rebound & wanted  # rebound: not necessarily the input any more

    def is_tensor(self, name: str) -> bool:
        return name in self.tensor and name not in self.not_tensor


def _outputs(fn: FunctionClass) -> set[str]:
    """Names forward returns (alone or in a returned tuple), or setup_context's ``output`` parameter."""
    names: set[str] = set()
    if fn.forward is not None:
        for ret in returns(fn.forward):
            values = ret.value.elts if isinstance(ret.value, (ast.Tuple, ast.List)) else [ret.value]
            names.update(v.id for v in values if isinstance(v, ast.Name))
    return names


def _setup_context_names(fn: FunctionClass) -> tuple[dict[str, str], set[str]]:
    """In ``setup_context(ctx, inputs, output)``: local name -> forward input name, and the output names."""
    method = fn.setup_context
    if method is None:
        return {}, set()
    params = [a.arg for a in call_params(method)]
    if len(params) < 3:
        return {}, set()
    inputs_name, output_name = params[1], params[2]
    forward_names = [a.arg for a in fn.forward_inputs()]
    local_inputs: dict[str, str] = {}
    # The whole output, when forward returns one value (elements of a returned tuple may be non-tensors).
    single = fn.forward is not None and all(
        r.value is not None and not isinstance(r.value, (ast.Tuple, ast.List)) for r in returns(fn.forward)
    )
    outputs = {output_name} if single else set()
    for stmt in method.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name):
            target = stmt.targets[0]
            if stmt.value.id == inputs_name and isinstance(target, (ast.Tuple, ast.List)):
                for index, elt in enumerate(target.elts):
                    if isinstance(elt, ast.Starred):
                        break
                    if isinstance(elt, ast.Name) and index < len(forward_names):
                        local_inputs[elt.id] = forward_names[index]
    return local_inputs, outputs


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
    ctx: ModuleContext, fn: FunctionClass, method: Method, stmt: ast.Assign, attr: str, value: ast.Name, ctx_var: str
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


def _indent(ctx: ModuleContext, stmt: ast.stmt) -> str:
    text = ctx.lines[stmt.lineno - 1]
    return text[: len(text) - len(text.lstrip())]


def check_module(ctx: ModuleContext) -> None:
    semantics = ctx.semantics
    model = semantics.functions
    for fn in model.classes:
        if fn.forward is None:
            continue
        inputs = _Inputs(fn, semantics.names, model.calls)
        outputs = _outputs(fn)
        setup_inputs, setup_outputs = _setup_context_names(fn)
        for method in (fn.forward, fn.setup_context):
            ctx_var = fn.ctx_of(method)
            if method is None or ctx_var is None:
                continue
            for stmt in walk_body(method):
                if not isinstance(stmt, ast.Assign):
                    continue
                for target, value in _stored_pairs(stmt, ctx_var):
                    if not isinstance(value, ast.Name):
                        continue
                    attr = target.attr
                    if (value.id in outputs and method is fn.forward) or (
                        method is fn.setup_context and value.id in setup_outputs
                    ):
                        template = OUTPUT_ON_CTX
                    elif (method is fn.forward and inputs.is_tensor(value.id)) or (
                        method is fn.setup_context
                        and value.id in setup_inputs
                        and inputs.is_tensor(setup_inputs[value.id])
                    ):
                        template = INPUT_ON_CTX
                    else:
                        continue
                    related = []
                    if fn.backward is not None:
                        back_ctx = fn.ctx_of(fn.backward)
                        reads = [n for n in walk_body(fn.backward) if ctx_attribute(n, back_ctx) == attr]
                        if reads:
                            related.append(Related(ctx.span(reads[0]), READS_HERE(ctx=back_ctx, attr=attr)))
                    read_at = READ_AT(attr=attr, line=Line(related[0].span.line)) if related else ""
                    message = template(ctx=ctx_var, attr=attr, name=value.id, function=fn.name, read_at=read_at)
                    fix = _fix(ctx, fn, method, stmt, attr, value, ctx_var)
                    ctx.reporter.report(RULE, ctx.span(stmt), message, related=related, fixes=(fix,) if fix else ())


RULE.check_module = check_module
