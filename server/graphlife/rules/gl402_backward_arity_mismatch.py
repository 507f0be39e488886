"""Backward of a custom autograd Function returns a different number of gradients than forward has inputs.

## What it does
Counts the inputs of a custom `torch.autograd.Function`'s `forward` (after
`ctx`; every input passed to `apply`, keyword or not) and, in the analysis of
`backward` with its gradients, the values each `return` gives back on every
path that reaches it. Flags a `return` whose count is certainly wrong: fewer
values than inputs, or more values where an extra one is certainly not `None`.
A list counts as one value (torch wraps a non-tuple into a 1-tuple). Counts
follow the values: a tuple built in a name (`grads = (g, None)`), spread from
one of known length (`(*grads, None)`), or returned by an op with a fixed
number of outputs (`torch.std_mean`); `x.chunk(n)` gives at most `n`. When
forward has default arguments, the `apply` calls of the file decide how many
inputs are passed. Unknown counts (`*args` in forward, `apply(*args)`, a tuple
of unknown length such as `tuple(g for g in grads)` or `(*grads, None)` with
backward's `*grads`, `x.split(size)`, `x.unbind()`) are never flagged.

## Why is this bad?
Autograd needs exactly one gradient per forward input (`None` for inputs that
are not tensors or need no gradient). The mistake only shows at the first
`backward()` of a training step, often after the data loading finished.

## What torch says
`RuntimeError: function ScaleBackward returned an incorrect number of gradients (expected 2, got 1)`
(torch 2.13 accepts extra trailing values only when they are all `None`).

## Example
```python
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return x * factor

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.factor
```

## Use instead
```python
    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.factor, None
```

## Fix safety
Safe: returning `None` for the inputs without a gradient, or a tuple instead of a list,
is what torch expects; the gradients returned are the same.

## Fixture line
The `return` statement of backward (each wrong one) carries `# expect: GL402`.
It is an error when every `return` of backward is wrong, a warning when only
some are.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import FunctionBackwardEndEvent
from graphlife.analysis.item_counts import ONE_VALUE, ItemCount, certainly_not_none, item_count
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.semantics import ApplyCall, FunctionClass
from graphlife.analysis.semantics.functions import call_params, returns, takes_self_before_ctx
from graphlife.findings import FixRecipe, Line, MessageTemplate, Related, Severity, Span
from graphlife.recipes import ReplaceText
from graphlife.rules.source_edits import def_line_span, segment

ZH_CN = Translation(
    """自定义 autograd Function 的 backward 返回的梯度个数与 forward 的输入个数不一致。

## 它检查什么
统计自定义 `torch.autograd.Function` 的 `forward` 的输入个数（`ctx` 之后的参数；传给 `apply` 的每个输入，不论是否以关键字传入），并在用梯度分析 `backward` 时，统计每个 `return` 在到达它的每条路径上返回的值的个数。标记个数肯定不对的 `return`：返回值比输入少，或者比输入多且多出的值肯定不是 `None`。列表算作一个值（torch 会把非元组包成一个单元素元组）。个数跟随值本身：先绑定到名字上的元组（`grads = (g, None)`）、从已知长度的元组展开的元组（`(*grads, None)`），或者输出个数固定的算子的返回值（`torch.std_mean`）；`x.chunk(n)` 至多给出 `n` 个。forward 有默认参数时，由本文件中的 `apply` 调用决定传入多少个输入。个数未知的情况（forward 里的 `*args`、`apply(*args)`、长度未知的元组，例如 `tuple(g for g in grads)` 或用 backward 的 `*grads` 写的 `(*grads, None)`、`x.split(size)`、`x.unbind()`）从不标记。

## 为什么这是问题？
自动求导要求 forward 的每个输入恰好对应一个梯度（不是张量或不需要梯度的输入返回 `None`）。这个错误要到训练步第一次调用 `backward()` 时才暴露，往往是在数据加载都完成之后。

## torch 的报错
`RuntimeError: function ScaleBackward returned an incorrect number of gradients (expected 2, got 1)`
（torch 2.13 只有在多出的末尾值全是 `None` 时才接受。）

## 示例
```python
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return x * factor

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.factor
```

## 改为
```python
    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.factor, None
```

## 修复的安全性
安全：为没有梯度的输入返回 `None`，或者用元组代替列表，正是 torch 所期望的；返回的梯度不变。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="0d9c164f4ede",
)

RULE = Rule(
    code="GL402",
    name="backward-arity-mismatch",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="function ... returned an incorrect number of gradients",
)

WRONG_COUNT = MessageTemplate(
    "GL402.wrong-count",
    "backward of `{function}` returns {gradients} here, but forward (line {line}) takes {inputs} after ctx "
    "({names}): torch raises `RuntimeError: function {function}Backward returned an incorrect number of gradients "
    "(expected {expected}, got {got})` at the first backward. Return one gradient per input, `None` for inputs that "
    "need none.",
    zh_cn="`{function}` 的 `backward` 在这里返回了 {gradients}，"
    "但 `forward`（{line}）在 ctx 之后接收 {inputs}（{names}）："
    "第一次反向传播时 torch 会报错 `RuntimeError: function {function}Backward returned an incorrect number of "
    "gradients (expected {expected}, got {got})`。请为每个输入返回一个梯度，不需要梯度的输入返回 `None`。",
)
WRONG_RANGE = MessageTemplate(
    "GL402.wrong-range",
    "backward of `{function}` returns {gradients} here, but forward (line {line}) takes {inputs} after ctx "
    "({names}): torch raises `RuntimeError: function {function}Backward returned an incorrect number of gradients "
    "(expected {expected}, got ...)` at the first backward. Return one gradient per input, `None` for inputs that "
    "need none.",
    zh_cn="`{function}` 的 `backward` 在这里返回了 {gradients}，"
    "但 `forward`（{line}）在 ctx 之后接收 {inputs}（{names}）："
    "第一次反向传播时 torch 会报错 `RuntimeError: function {function}Backward returned an incorrect number of "
    "gradients (expected {expected}, got ...)`。请为每个输入返回一个梯度，不需要梯度的输入返回 `None`。",
)
GRADIENT_RANGE = MessageTemplate("GL402.gradient-range", "{low} to {high} gradients", zh_cn="{low} 到 {high} 个梯度")
ONE_GRADIENT = MessageTemplate("GL402.one-gradient", "{n} gradient", zh_cn="{n} 个梯度")
GRADIENTS = MessageTemplate("GL402.gradients", "{n} gradients", zh_cn="{n} 个梯度")
ONE_INPUT = MessageTemplate("GL402.one-input", "{n} input", zh_cn="{n} 个输入")
INPUTS = MessageTemplate("GL402.inputs", "{n} inputs", zh_cn="{n} 个输入")
FORWARD_TAKES = MessageTemplate("GL402.forward-takes", "forward of `{function}` takes {n} input(s)",
                                zh_cn="`{function}` 的 `forward` 接收 {n} 个输入")
PAD_TITLE = MessageTemplate("fix.pad-none", "Return `None` for the {missing} input(s) without a gradient",
                            zh_cn="为没有梯度的 {missing} 个输入返回 `None`")
TUPLE_TITLE = MessageTemplate("fix.return-tuple", "Return a tuple (a list counts as one gradient)",
                              zh_cn="返回一个元组（列表只算作一个梯度）")


def expected_counts(fn: FunctionClass, calls: Callable[[], list[ApplyCall]]) -> tuple[list[str], set[int]] | None:
    """Forward's input names and the input counts its ``apply`` calls can pass (``None``: unknown).
    The calls are asked for only when forward has defaults (they decide what is passed)."""
    forward = fn.forward
    if forward is None or forward.args.vararg or forward.args.kwarg:
        return None
    params = call_params(forward)
    if fn.forward_takes_ctx():
        params = params[1:]
    kwonly = forward.args.kwonlyargs
    n_defaults = len(forward.args.defaults)
    required = len(params) - min(n_defaults, len(params)) + sum(1 for d in forward.args.kw_defaults if d is None)
    total = len(params) + len(kwonly)
    names = [p.arg for p in params] + [k.arg for k in kwonly]
    if required == total:
        return names, {total}
    counts: set[int] = set()
    for call in calls():
        count = call.argument_count()
        if count is None:
            counts = set()
            break
        if required <= count <= total:
            counts.add(count)
    return names, counts or set(range(required, total + 1))


def _wrong(count: ItemCount | None, expected: int) -> bool:
    """Certainly wrong for ``expected`` inputs: too few values, or an extra value that is certainly
    not ``None`` (torch drops extra trailing ``None`` values)."""
    if count is None:
        return False
    if count.high is not None and count.high < expected:
        return True
    if count.low > expected and count.exact is not None and count.items is not None:
        return any(certainly_not_none(item) for item in count.items[expected:])
    return False


def _pad_fix(ctx: RuleContext, ret: ast.Return, count: ItemCount, target: int) -> FixRecipe | None:
    """Append ``None`` values up to ``target`` (spreading a tuple that is not written out, or
    turning a list display into a tuple)."""
    value = ret.value
    got = count.exact if count.exact is not None else count.high  # `x.chunk(2)`: two, when it is right
    if value is None or got is None or got >= target:
        return None
    missing = target - got
    pad = ", None" * missing
    if isinstance(value, ast.Tuple):
        if not value.elts:
            return None
        anchor = ctx.span(value.elts[-1])
        span = Span(anchor.end_line, anchor.end_column, anchor.end_line, anchor.end_column)
        return ReplaceText(title=PAD_TITLE(missing=missing), span=span, text=pad)
    if isinstance(value, ast.List):
        if any(isinstance(e, ast.Starred) for e in value.elts) or len(value.elts) > target:
            return None
        span = ctx.span(value)
        inner = ", ".join(segment(ctx, e) or "" for e in value.elts)
        extra = target - len(value.elts)
        text = "(" + inner + ", None" * extra + ("," if target == 1 else "") + ")"
        return ReplaceText(title=TUPLE_TITLE(), span=span, text=text)
    if count.is_tuple:  # `return helper(g)`, `return grads`: spread it, then the `None` values
        text = segment(ctx, value)
        if not text:
            return None
        return ReplaceText(title=PAD_TITLE(missing=missing), span=ctx.span(value), text=f"(*{text}{pad})")
    anchor = ctx.span(value)
    span = Span(anchor.end_line, anchor.end_column, anchor.end_line, anchor.end_column)
    return ReplaceText(title=PAD_TITLE(missing=missing), span=span, text=pad)


@dataclass
class _Verdict:
    """What one ``return`` of backward gave on the paths that reach it."""

    counts: list[ItemCount | None] = field(default_factory=list)

    def wrong(self, expected: set[int]) -> bool:
        return bool(self.counts) and all(_wrong(c, e) for c in self.counts for e in expected)


@RULE.on(FunctionBackwardEndEvent)
def on_backward_end(event: FunctionBackwardEndEvent, ctx: RuleContext) -> None:
    """Each ``return`` of backward, as the engine ran it, against the inputs forward takes."""
    if not ctx.in_checked_file(event.function):
        return
    fn = ctx.autograd_function(event.function)
    if fn is None or fn.forward is None or fn.backward is not event.backward:
        return
    forward, backward = fn.forward, event.backward
    if takes_self_before_ctx(forward) or takes_self_before_ctx(backward):
        return  # a misbound legacy method (GL404): its arity means nothing
    expected = expected_counts(fn, lambda: ctx.apply_calls(fn))
    if expected is None:
        return
    names, counts = expected
    verdicts: dict[int, tuple[ast.Return, _Verdict]] = {}
    for ret, value, state in event.returns:
        verdicts.setdefault(id(ret), (ret, _Verdict()))[1].counts.append(item_count(value, state))
    reached = {id(ret) for ret in returns(backward)}
    every_path_wrong = reached <= verdicts.keys() and all(v.wrong(counts) for _, v in verdicts.values())
    if event.falls_through and any(not _wrong(ONE_VALUE, e) for e in counts):
        every_path_wrong = False
    shown = " or ".join(str(c) for c in sorted(counts))
    inputs = ", ".join(f"`{n}`" for n in names)
    for ret, verdict in sorted(verdicts.values(), key=lambda pair: (pair[0].lineno, pair[0].col_offset)):
        if not verdict.wrong(counts):
            continue
        count = next(c for c in verdict.counts if c is not None)
        taken = (ONE_INPUT if shown == "1" else INPUTS)(n=shown)
        if count.exact is not None:
            got = count.exact
            message = WRONG_COUNT(
                function=fn.name, got=got, gradients=(ONE_GRADIENT if got == 1 else GRADIENTS)(n=got),
                line=Line(forward.lineno), expected=shown, inputs=taken, names=inputs)
        else:  # `x.chunk(3)`: one to three
            message = WRONG_RANGE(
                function=fn.name, gradients=GRADIENT_RANGE(low=count.low, high=count.high),
                line=Line(forward.lineno), expected=shown, inputs=taken, names=inputs)
        fix = _pad_fix(ctx, ret, count, max(counts)) if len(verdict.counts) == 1 else None
        ctx.report(
            RULE,
            ctx.span(ret),
            message,
            severity=Severity.ERROR if every_path_wrong else Severity.WARNING,
            related=(Related(def_line_span(ctx, forward), FORWARD_TAKES(function=fn.name, n=shown)),),
            fixes=(fix,) if fix else (),
        )
