"""A custom autograd Function used the legacy way: instantiated and called, or with non-static methods.

## What it does
For every subclass of `torch.autograd.Function` in the file:
- flags an instance that is called: `Fn()(x)`, or `f = Fn()` / `self.f = Fn()`
  when `f(...)` / `self.f(...)` is called in the file (error, at the
  instantiation); an instance that is only created (e.g. `Fn().apply(x)`) is
  information (torch deprecates it);
- flags `forward` / `backward` defined without `@staticmethod` (information: torch
  2.13 still runs them through `Fn.apply`, which passes `ctx` as the first
  argument; a warning when the method takes `self` *and* uses its second
  parameter as the ctx, which `apply` then misbinds).

## Why is this bad?
Since PyTorch 1.3 a Function is never instantiated: `Fn.apply(...)` creates the
ctx and calls the static methods. Calling an instance raises on every call.

## What torch says
`RuntimeError: Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd function with static forward method.`
(and, at `Fn()`, `DeprecationWarning: ... should not be instantiated`)

## Example
```python
class Clip(torch.autograd.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x.clamp(-1, 1)
    ...

y = Clip()(x)
```

## Use instead
```python
class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1, 1)
    ...

y = Clip.apply(x)
```

## Fix safety
Safe: `Function.apply` and static methods taking `ctx` first are the same computation
in the form torch supports.

## Fixture line
The instantiation `Fn()` / `Fn()(x)` statement, and the `def forward` / `def
backward` line lacking `@staticmethod`, carry `# expect: GL404`.
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

import ast

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.rule_api import ModuleContext, Rule, RuleDoc
from graphlife.analysis.semantics import FunctionClass, Method, Semantics, is_classmethod, is_static
from graphlife.analysis.semantics.functions import takes_self_before_ctx, target_key
from graphlife.findings import FixRecipe, Line, MessageTemplate, Related, Severity, Span
from graphlife.recipes import ReplaceText
from graphlife.rules.source_edits import def_line_span, line_indent, merge_edits, point, report_span

ZH_CN = Translation(
    """以旧式写法使用自定义 autograd Function：实例化后调用，或者方法不是静态方法。

## 它检查什么
对本文件中 `torch.autograd.Function` 的每个子类：
- 标记被调用的实例：`Fn()(x)`，或者 `f = Fn()` / `self.f = Fn()` 且本文件中调用了 `f(...)` / `self.f(...)`（错误，报在实例化处）；只创建不调用的实例（例如 `Fn().apply(x)`）报信息（torch 已弃用这种写法）；
- 标记没有 `@staticmethod` 的 `forward` / `backward`（信息：torch 2.13 仍会通过 `Fn.apply` 运行它们，`apply` 把 `ctx` 作为第一个参数传入；如果方法接收 `self`，*同时*又把第二个参数当作 ctx 使用，`apply` 会把参数绑错，这时报警告）。

## 为什么这是问题？
从 PyTorch 1.3 起，Function 不再实例化：`Fn.apply(...)` 创建 ctx 并调用静态方法。调用实例的话，每次调用都会报错。

## torch 的报错
`RuntimeError: Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd function with static forward method.`
（在 `Fn()` 处还有 `DeprecationWarning: ... should not be instantiated`）

## 示例
```python
class Clip(torch.autograd.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x.clamp(-1, 1)
    ...

y = Clip()(x)
```

## 改为
```python
class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1, 1)
    ...

y = Clip.apply(x)
```

## 修复的安全性
安全：`Function.apply` 和以 `ctx` 为第一个参数的静态方法，是同一个计算在 torch 所支持的形式下的写法。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="bfec15cbac80",
)

RULE = Rule(
    code="GL404",
    name="legacy-function",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="Legacy autograd function with non-static forward method is deprecated",
)
MISBOUND = MessageTemplate(
    "GL404.misbound",
    "`{function}.{method}` is not a @staticmethod and takes `{first}` before its ctx `{ctx}`: `{function}.apply(...)` "
    "passes the ctx as the first argument, so `{ctx}` gets an input (TypeError or wrong results). Declare it "
    "`@staticmethod` and drop `{first}`.",
    zh_cn="`{function}.{method}` 不是 @staticmethod，并且在 ctx 参"
          "数 `{ctx}` 之前还有 `{first}`：`{function}.apply(...)` "
    "会把 ctx 作为第一个参数传入，于是 `{ctx}` 收到的是一个输入（TypeError 或错误的结果）。请把它声明为 "
    "`@staticmethod` 并去掉 `{first}`。",
)
NOT_STATIC = MessageTemplate(
    "GL404.not-static",
    "`{function}.{method}` is not a @staticmethod: the legacy Function interface. torch 2.13 still runs it through "
    "`{function}.apply(...)` (the ctx arrives as `{first}`), but calling an instance raises `Legacy autograd function "
    "with non-static forward method is deprecated`. Declare it `@staticmethod` with `ctx` first.",
    zh_cn="`{function}.{method}` 不是 @staticmethod：这是旧版 Function 接口。torch 2.13 通过 `{function}.apply(...)` "
    "仍能运行它（ctx 作为 `{first}` 传入），但调用实例会报错 `Legacy autograd function with non-static forward method "
    "is deprecated`。请把它声明为 `@staticmethod`，并以 `ctx` 作为第一个参数。",
)
INSTANCE_CALLED = MessageTemplate("GL404.instance-called", "the `{function}` instance is called here",
                                  zh_cn="`{function}` 的实例在这里被调用")
AT_LINE = MessageTemplate("GL404.at-line", " (line {line})", zh_cn="（{line}）")
INSTANCE_RAISES = MessageTemplate(
    "GL404.instance-raises",
    "`{function}()` instantiates the autograd Function and the instance is called{where}: torch raises "
    "`RuntimeError: Legacy autograd function with non-static forward method is deprecated` on every call. "
    "Use `{function}.apply(...)` instead.",
    zh_cn="`{function}()` 实例化了 autograd Function，并且调用了这个实例{where}：每次调用 torch 都会报错 "
    "`RuntimeError: Legacy autograd function with non-static forward method is deprecated"
    "`。请改用 `{function}.apply(...)`。",
)
INSTANTIATED = MessageTemplate(
    "GL404.instantiated",
    "`{function}()` instantiates the autograd Function: torch warns that it `should not be instantiated` "
    "and announces an error. Call `{function}.apply(...)` on the class.",
    zh_cn="`{function}()` 实例化了 autograd Function：torch 会警告它 `should not be instantiated`，"
    "并预告将来会报错。请直接在类上调用 `{function}.apply(...)`。",
)
STATIC_TITLE = MessageTemplate("fix.make-static", "Make it a @staticmethod taking ctx first",
                               zh_cn="改成以 ctx 为第一个参数的 @staticmethod")
APPLY_TITLE = MessageTemplate("fix.use-apply", "Use `{function}.apply`", zh_cn="改用 `{function}.apply`")


def _static_fix(ctx: ModuleContext, method: Method, drop_first: bool) -> FixRecipe | None:
    first_line = min([method.lineno, *(d.lineno for d in method.decorator_list)])
    indent = line_indent(ctx, first_line)
    col = len(indent.encode("utf-8"))
    edits: list[tuple[Span, str]] = [(point(ctx, first_line, col), f"@staticmethod\n{indent}")]
    params = [*method.args.posonlyargs, *method.args.args]
    if drop_first:
        if len(params) < 2:
            return None
        a, b = ctx.span(params[0]), ctx.span(params[1])
        edits.append((Span(a.line, a.column, b.line, b.column), ""))
    elif params and params[0].arg != "ctx" and not any(
        (isinstance(n, ast.Name) and n.id == "ctx") or (isinstance(n, ast.arg) and n.arg == "ctx")
        for n in ast.walk(method)
    ):
        old = params[0].arg
        edits.append((ctx.span(params[0]), "ctx"))
        for node in ast.walk(method):
            if isinstance(node, ast.Name) and node.id == old:
                edits.append((ctx.span(node), "ctx"))
    merged = merge_edits(ctx, edits)
    if merged is None:
        return None
    span, text = merged
    return ReplaceText(title=STATIC_TITLE(), span=span, text=text)


def _uses_own_methods(fn: FunctionClass, method: Method) -> bool:
    """``self.helper(...)`` where ``helper`` is a method of the class: the ctx would not have it."""
    params = [*method.args.posonlyargs, *method.args.args]
    if not params:
        return False
    first = params[0].arg
    return any(
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == first
        and node.attr in fn.methods
        for node in ast.walk(method)
    )


def _check_methods(ctx: ModuleContext, fn: FunctionClass) -> None:
    for name in ("forward", "backward"):
        method = fn.methods.get(name)
        if method is None or is_static(method) or is_classmethod(method):
            continue
        params = [*method.args.posonlyargs, *method.args.args]
        misbound = takes_self_before_ctx(method)
        if misbound:
            message = MISBOUND(function=fn.name, method=name, first=params[0].arg, ctx=params[1].arg)
            severity = Severity.WARNING
        else:
            message = NOT_STATIC(function=fn.name, method=name, first=params[0].arg if params else "self")
            severity = Severity.INFORMATION
        # State set up in `__init__` lives on the instance, which `apply` never creates: no safe rewrite.
        keeps_state = "__init__" in fn.methods or _uses_own_methods(fn, method)
        fix = None if keeps_state else _static_fix(ctx, method, drop_first=misbound)
        ctx.reporter.report(RULE, def_line_span(ctx, method), message, severity=severity, fixes=(fix,) if fix else ())


def _call_of_bound_instance(semantics: Semantics, target: ast.expr, assign: ast.Assign) -> ast.Call | None:
    """A call of what ``target`` was bound to: ``f(...)`` in the same function (or anywhere, for a
    module-level name), ``self.f(...)`` in the same class."""
    key = target_key(target)
    if key is None:
        return None
    wanted: tuple[type[ast.AST], ...] = (
        (ast.ClassDef,) if isinstance(target, ast.Attribute) else (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    )
    scope: ast.AST = next((a for a in semantics.ancestors(assign) if isinstance(a, wanted)), semantics.tree)
    for candidate in ast.walk(scope):
        if isinstance(candidate, ast.Call) and target_key(candidate.func) == key:
            return candidate
    return None


def check_module(ctx: ModuleContext) -> None:
    semantics = ctx.semantics
    classes = semantics.functions.classes
    by_name = {fn.name: fn for fn in classes}
    for fn in classes:
        _check_methods(ctx, fn)
    if not classes:
        return
    for node in semantics.nodes(ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in by_name):
            continue
        fn = by_name[node.func.id]
        parent = semantics.parent(node)
        related: list[Related] = []
        severity = Severity.INFORMATION
        if isinstance(parent, ast.Call) and parent.func is node:
            severity = Severity.ERROR
        elif isinstance(parent, ast.Assign) and parent.value is node:
            for target in parent.targets:
                call = _call_of_bound_instance(semantics, target, parent)
                if call is not None:
                    severity = Severity.ERROR
                    related.append(Related(ctx.span(call), INSTANCE_CALLED(function=fn.name)))
        if severity is Severity.ERROR:
            where = AT_LINE(line=Line(related[0].span.line)) if related else ""
            message = INSTANCE_RAISES(function=fn.name, where=where)
        else:
            message = INSTANTIATED(function=fn.name)
        fixes: tuple[FixRecipe, ...] = ()
        if not node.args and not node.keywords:
            if isinstance(parent, ast.Attribute) and parent.value is node and parent.attr == "apply":
                replacement = fn.name  # `Fn().apply(x)` -> `Fn.apply(x)`
            else:
                replacement = f"{fn.name}.apply"
            fixes = (
                ReplaceText(title=APPLY_TITLE(function=fn.name), span=ctx.span(node), text=replacement),
            )
        ctx.reporter.report(
            RULE, report_span(ctx, node, semantics.statement_of(node)), message,
            severity=severity, related=related, fixes=fixes,
        )


RULE.check_module = check_module
