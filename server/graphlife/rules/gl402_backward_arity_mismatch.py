"""Backward of a custom autograd Function returns a different number of gradients than forward has inputs.

## What it does
Counts the inputs of a custom `torch.autograd.Function`'s `forward` (after
`ctx`; every input passed to `apply`, keyword or not) and the values each
`return` of `backward` gives back. Flags a `return` whose count is certainly
wrong: fewer values than inputs, or more values where an extra one is not
`None`. A list counts as one value (torch wraps a non-tuple into a 1-tuple).
When forward has default arguments, the `apply` calls of the file decide how
many inputs are passed. Unknown counts (a name bound to a tuple of unknown
length, `*args` in forward, `apply(*args)`) are never flagged.

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

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.rule_api import ModuleContext, Rule, RuleDoc
from graphlife.analysis.semantics import ApplyCall, FunctionClass, Method, Names
from graphlife.analysis.semantics.functions import (
    call_params,
    ctx_attribute,
    returns,
    takes_self_before_ctx,
    walk_body,
)
from graphlife.findings import FixRecipe, Line, MessageTemplate, Related, Severity, Span
from graphlife.recipes import ReplaceText
from graphlife.rules.source_edits import def_line_span, segment

ZH_CN = Translation(
    """自定义 autograd Function 的 backward 返回的梯度个数与 forward 的输入个数不一致。

## 它检查什么
统计自定义 `torch.autograd.Function` 的 `forward` 的输入个数（`ctx` 之后的参数；传给 `apply` 的每个输入，不论是否以关键字传入），以及 `backward` 的每个 `return` 返回的值的个数。标记个数肯定不对的 `return`：返回值比输入少，或者比输入多且多出的值不是 `None`。列表算作一个值（torch 会把非元组包成一个单元素元组）。forward 有默认参数时，由本文件中的 `apply` 调用决定传入多少个输入。个数未知的情况（绑定到长度未知的元组的名字、forward 里的 `*args`、`apply(*args)`）从不标记。

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
    translates="b996ad2feadb",
)

RULE = Rule(
    code="GL402",
    name="backward-arity-mismatch",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="function ... returned an incorrect number of gradients",
)

TENSOR = "tensor"
ONE = "one"  # a single value that is not a tuple (None, a number, a list)

#: Tensor methods that return tuples (or non-tensors); everything else called on a tensor gives one tensor.
_TUPLE_METHODS = frozenset(
    "chunk split unbind tensor_split hsplit vsplit dsplit split_with_sizes sort topk max min median mode "
    "kthvalue cummax cummin aminmax unique unique_consecutive nonzero svd qr lu slogdet frexp var_mean "
    "std_mean tolist item size dim numel stride".split()
)
#: Attributes of a tensor that are one tensor.
_SAME_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data"})
#: torch functions that return one tensor.
_TORCH_TENSOR_FUNCTIONS = frozenset(
    "mm matmul bmm mul add sub div zeros_like ones_like empty_like full_like clamp exp log sigmoid tanh sign "
    "abs cat stack einsum outer neg sqrt relu masked_fill diag_embed zeros ones empty full randn rand tensor "
    "as_tensor where mv addmm baddbmm transpose reshape".split()
)


class _Kinds:
    """Kind of a backward expression: (TENSOR | ONE, 1), ("tuple", n) or None (unknown)."""

    def __init__(self, backward: Method, names: Names) -> None:
        self.names = names
        params = call_params(backward)
        self.ctx = params[0].arg if params else None
        self.env: dict[str, tuple[str, int] | None] = {p.arg: (TENSOR, 1) for p in params[1:]}
        if backward.args.vararg:
            self.env[backward.args.vararg.arg] = None
        self._bind(backward)

    def _bind(self, backward: Method) -> None:
        simple: dict[str, list[ast.expr]] = {}
        self.tuple_literals: dict[str, ast.Tuple] = {}
        other: set[str] = set()
        augmented: dict[str, list[ast.expr]] = {}
        from_saved: set[str] = set()
        for node in walk_body(backward):
            if isinstance(node, ast.Assign):
                if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    simple.setdefault(node.targets[0].id, []).append(node.value)
                    continue
                saved = ctx_attribute(node.value, self.ctx) == "saved_tensors"
                for target in node.targets:
                    for name in _names(target):
                        (from_saved if saved and isinstance(target, (ast.Tuple, ast.List)) else other).add(name)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                augmented.setdefault(node.target.id, []).append(node.value)
            else:
                other.update(_bound_otherwise(node))
        for name in from_saved:
            if name not in other and name not in simple and name not in augmented:
                self.env[name] = (TENSOR, 1)
            else:
                self.env[name] = None
        for name in other:
            self.env[name] = None
        for _ in range(3):  # names defined from names: a few rounds reach a fixpoint in practice
            for name, values in simple.items():
                if name in other or name in from_saved:
                    continue
                kinds = [self.kind(v) for v in values]
                known = [k for k in kinds if k is not None]
                if len(known) != len(kinds) or len({k[1] for k in known}) != 1:
                    self.env[name] = None
                    continue
                labels = {k[0] for k in known}
                first = known[0]
                self.env[name] = first if len(labels) == 1 else (ONE, first[1]) if first[1] == 1 else None
                if name in augmented and self.env[name] != (TENSOR, 1):
                    self.env[name] = None
        for name in augmented:
            if name not in simple and self.env.get(name) != (TENSOR, 1):
                self.env[name] = None
        for name, values in simple.items():
            if len(values) == 1 and isinstance(values[0], ast.Tuple) and name not in other and name not in augmented:
                self.tuple_literals[name] = values[0]

    def kind(self, node: ast.expr | None) -> tuple[str, int] | None:
        if node is None:
            return (ONE, 1)
        if isinstance(node, ast.Constant):
            return (ONE, 1)
        if isinstance(node, ast.Tuple):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return None
            return ("tuple", len(node.elts))
        if isinstance(node, (ast.List, ast.ListComp, ast.Dict, ast.Set, ast.DictComp, ast.SetComp)):
            return (ONE, 1)
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.BinOp):
            left, right = self.kind(node.left), self.kind(node.right)
            if left and right and left[0] == "tuple" and right[0] == "tuple" and isinstance(node.op, ast.Add):
                return ("tuple", left[1] + right[1])
            for tup, other in ((left, node.right), (right, node.left)):
                if tup and tup[0] == "tuple" and isinstance(node.op, ast.Mult):
                    if (isinstance(other, ast.Constant) and isinstance(other.value, int)
                            and not isinstance(other.value, bool)):
                        return ("tuple", tup[1] * max(other.value, 0))
                    return None
            if (left and left[0] == TENSOR) or (right and right[0] == TENSOR):
                if (left and left[0] == "tuple") or (right and right[0] == "tuple"):
                    return None
                return (TENSOR, 1)
            return None
        if isinstance(node, ast.UnaryOp) and self.kind(node.operand) == (TENSOR, 1):
            return (TENSOR, 1)
        if isinstance(node, ast.IfExp):
            body, orelse = self.kind(node.body), self.kind(node.orelse)
            if body and orelse and body[1] == orelse[1] and (body[0] == "tuple") == (orelse[0] == "tuple"):
                return body if body == orelse else (ONE, 1) if body[1] == 1 and body[0] != "tuple" else body
            return None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and self.kind(func.value) == (TENSOR, 1):
                return None if func.attr in _TUPLE_METHODS else (TENSOR, 1)
            resolved = self.names.qualified_name(func)
            if resolved and resolved.startswith("torch.") and resolved.rsplit(".", 1)[-1] in _TORCH_TENSOR_FUNCTIONS:
                if resolved.endswith(".where") and len(node.args) + len(node.keywords) < 2:
                    return None
                return (TENSOR, 1)
            return None
        if isinstance(node, ast.Subscript) and self.kind(node.value) == (TENSOR, 1):
            return (TENSOR, 1)
        if (isinstance(node, ast.Attribute) and node.attr in _SAME_TENSOR_ATTRIBUTES
                and self.kind(node.value) == (TENSOR, 1)):
            return (TENSOR, 1)
        return None

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


def _bound_otherwise(node: ast.AST) -> set[str]:
    """Names a statement binds other than by ``name = value`` (loops, with, imports, walrus, except, del)."""
    if isinstance(node, (ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr, ast.comprehension)):
        return set(_names(node.target))
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return {name for item in node.items if item.optional_vars is not None for name in _names(item.optional_vars)}
    if isinstance(node, ast.ExceptHandler):
        return {node.name} if node.name else set()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.Delete):
        return {name for target in node.targets for name in _names(target)}
    return set()


def _names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def expected_counts(fn: FunctionClass, calls: list[ApplyCall]) -> tuple[list[str], set[int]] | None:
    """Forward's input names and the input counts its ``apply`` calls can pass (``None``: unknown)."""
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
    for call in (c for c in calls if c.fn is fn):
        count = call.argument_count()
        if count is None:
            counts = set()
            break
        if required <= count <= total:
            counts.add(count)
    return names, counts or set(range(required, total + 1))


def _wrong(kind: tuple[str, int], value: ast.expr | None, expected: int, kinds: _Kinds | None = None) -> bool:
    """Certainly wrong for ``expected`` inputs: too few values, or an extra value that is not ``None``."""
    count = kind[1]
    if count < expected:
        return True
    if count > expected:
        literal = value if isinstance(value, ast.Tuple) else None
        if literal is None and isinstance(value, ast.Name) and kinds is not None:
            literal = kinds.tuple_literals.get(value.id)
        if literal is None:
            return False  # e.g. `(g,) + (None,) * 2`: the extra values may all be None, which torch drops
        extras = literal.elts[expected:]
        return not all(isinstance(e, ast.Constant) and e.value is None for e in extras)
    return False


def _falls_through(body: list[ast.stmt]) -> bool:
    """The block can end without ``return``/``raise`` (so backward may return ``None``)."""
    if not body:
        return True
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return False
    if isinstance(last, ast.If):
        return _falls_through(last.body) or _falls_through(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _falls_through(last.body)
    if isinstance(last, ast.Try):
        return (_falls_through(last.body) and _falls_through(last.orelse)) or any(
            _falls_through(h.body) for h in last.handlers
        )
    if isinstance(last, ast.Match):
        return True
    return True


def _pad_fix(ctx: ModuleContext, ret: ast.Return, kind: tuple[str, int], target: int) -> FixRecipe | None:
    value = ret.value
    if value is None or kind[1] >= target:
        return None
    missing = target - kind[1]
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
    if kind[0] == "tuple":
        return None
    anchor = ctx.span(value)
    span = Span(anchor.end_line, anchor.end_column, anchor.end_line, anchor.end_column)
    return ReplaceText(title=PAD_TITLE(missing=missing), span=span, text=pad)


def check_module(ctx: ModuleContext) -> None:
    semantics = ctx.semantics
    model = semantics.functions
    for fn in model.classes:
        backward, forward = fn.backward, fn.forward
        if backward is None or forward is None or takes_self_before_ctx(forward) or takes_self_before_ctx(backward):
            continue  # a misbound legacy method (GL404): its arity means nothing
        expected = expected_counts(fn, model.calls)
        if expected is None:
            continue
        names, counts = expected
        kinds = _Kinds(backward, semantics.names)
        rets = returns(backward)
        if not rets:
            continue
        verdicts = []
        for ret in rets:
            kind = kinds.kind(ret.value)
            wrong = kind is not None and all(_wrong(kind, ret.value, e, kinds) for e in counts)
            verdicts.append((ret, kind, wrong))
        every_path_wrong = all(w for _, _, w in verdicts)
        if _falls_through(backward.body) and any(not _wrong((ONE, 1), None, e) for e in counts):
            every_path_wrong = False
        shown = " or ".join(str(c) for c in sorted(counts))
        for ret, kind, wrong in verdicts:
            if not wrong or kind is None:
                continue
            got = kind[1]
            inputs = ", ".join(f"`{n}`" for n in names)
            message = WRONG_COUNT(
                function=fn.name, got=got, gradients=(ONE_GRADIENT if got == 1 else GRADIENTS)(n=got),
                line=Line(forward.lineno), expected=shown, inputs=(ONE_INPUT if shown == "1" else INPUTS)(n=shown),
                names=inputs)
            fix = _pad_fix(ctx, ret, kind, max(counts))
            ctx.reporter.report(
                RULE,
                ctx.span(ret),
                message,
                severity=Severity.ERROR if every_path_wrong else Severity.WARNING,
                related=(Related(def_line_span(ctx, forward), FORWARD_TAKES(function=fn.name, n=shown)),),
                fixes=(fix,) if fix else (),
            )


RULE.check_module = check_module
