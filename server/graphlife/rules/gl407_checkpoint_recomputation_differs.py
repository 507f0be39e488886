"""Code inside a checkpointed function that its recomputation will not replay the same way.

## What it does
Follows the function given to `torch.utils.checkpoint.checkpoint` (a function
of the file, a method, a module whose class the file defines, a lambda) and
looks for what a second run of it does not repeat: Python's `random`,
`numpy.random`, the clock (`time.time()`, `datetime.now()`), and attributes of
`self` or globals that the function itself changes (a call counter). It warns
when such a value decides the control flow (an `if`, a loop, a conditional
expression) or a shape (a slice, `range(...)`, `view`/`reshape` sizes). With
`preserve_rng_state=False` it also warns on torch's own random ops and on
dropout, whose masks then differ between the two runs.

## Why is this bad?
A checkpoint frees the activations of the block and runs the block a second
time during backward to get them back. torch restores its own random state for
that second run (unless `preserve_rng_state=False`), but not Python's or
NumPy's, not the clock and not the attributes the first run changed. When the
second run takes another branch or makes other shapes, the non-reentrant
variant stops with a `CheckpointError` (some steps only, when the draws differ),
and the reentrant variant backpropagates through a graph that is not the one
the forward used: the gradients are silently those of another network, or the
shapes do not match.

## What torch says
`torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: A different number of tensors was saved during the original forward and recomputation.`
or, for the reentrant variant when a shape changed,
`RuntimeError: Mismatch in shape: grad_output[0] has a shape of ... and output[0] has a shape of ...`
and nothing at all when the reentrant variant took another branch.

## Example
```python
class Block(nn.Module):
    def forward(self, x):
        if random.random() < self.drop_prob:   # stochastic depth
            return x
        return x + self.mlp(x)

h = checkpoint(block, h, use_reentrant=False)
```

## Use instead
```python
class Block(nn.Module):
    def forward(self, x):
        keep = torch.rand(()) >= self.drop_prob   # torch's RNG: restored for the recomputation
        return x + self.mlp(x) * keep
```
Draw the random decision with torch (its state is saved and restored around the
recomputation), or make it outside the checkpointed function and pass it in;
keep counters and other state changes outside the checkpointed function.

## Fix safety
No automatic fix: where the decision should be made is the author's choice.

## Fixture line
The expression that the recomputation does not replay (the `random.random()` call,
the counter read, the dropout) carries `# expect: GL407`.
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.rule_api import ModuleContext, Rule, RuleDoc
from graphlife.analysis.semantics import CHECKPOINT_FUNCTIONS, Semantics
from graphlife.findings import Line, Message, MessageTemplate, Severity

ZH_CN = Translation(
    """被检查点包住的函数里，有重新计算时不会以同样方式重放的代码。

## 它检查什么
跟进传给 `torch.utils.checkpoint.checkpoint` 的函数（本文件中的函数、方法、类由本文件定义的模块、lambda），查找第二次运行时不会重复的东西：Python 的 `random`、`numpy.random`、时钟（`time.time()`、`datetime.now()`），以及函数自己修改的 `self` 属性或全局变量（例如调用计数器）。当这样的值决定了控制流（`if`、循环、条件表达式）或形状（切片、`range(...)`、`view`/`reshape` 的尺寸）时给出警告。在 `preserve_rng_state=False` 时，它还会对 torch 自己的随机操作和 dropout 给出警告：两次运行的掩码会不同。

## 为什么这是问题？
检查点会释放代码块的激活值，并在反向传播时把代码块再运行一遍来取回它们。torch 会为第二次运行恢复它自己的随机数状态（除非 `preserve_rng_state=False`），但不会恢复 Python 或 NumPy 的随机数状态，不会恢复时钟，也不会撤销第一次运行对属性的修改。当第二次运行走了另一个分支或产生了另一种形状时，非可重入版本会抛出 `CheckpointError`（只在两次抽样不同的那些训练步），而可重入版本会沿着一个并非前向传播所用的计算图做反向传播：梯度悄无声息地变成了另一个网络的梯度，或者形状对不上。

## torch 的报错
`torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: A different number of tensors was saved during the original forward and recomputation.`
对于形状改变的可重入版本，
`RuntimeError: Mismatch in shape: grad_output[0] has a shape of ... and output[0] has a shape of ...`
而可重入版本走了另一个分支时，什么都不会报。

## 示例
```python
class Block(nn.Module):
    def forward(self, x):
        if random.random() < self.drop_prob:   # 随机深度（stochastic depth）
            return x
        return x + self.mlp(x)

h = checkpoint(block, h, use_reentrant=False)
```

## 改为
```python
class Block(nn.Module):
    def forward(self, x):
        keep = torch.rand(()) >= self.drop_prob   # torch 的随机数：重新计算时会被恢复
        return x + self.mlp(x) * keep
```
用 torch 来抽取随机决定（它的状态会在重新计算前后保存并恢复），或者在被检查点包住的函数之外做出决定再作为参数传进去；计数器和其他状态修改放在被检查点包住的函数之外。

## 修复的安全性
没有自动修复：决定应该在哪里做出，由作者选择。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="2296a47e7d10",
)

RULE = Rule(
    code="GL407",
    name="checkpoint-recomputation-differs",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="A different number of tensors was saved during the original forward and recomputation",
)

_WHEN_THEY_DIFFER = (
    " When the two runs differ, torch stops with a `CheckpointError` (`use_reentrant=False`) or backpropagates "
    "through the path the forward did not take, silently or with a shape mismatch (`use_reentrant=True`)."
)
_WHEN_THEY_DIFFER_ZH = (
    "两次运行不一致时，torch 会抛出 `CheckpointError`（`use_reentrant=False`），或者沿着前向传播没有走过的那条路径做"
    "反向传播，要么悄无声息，要么报形状不匹配（`use_reentrant=True`）。"
)
RANDOM_DECIDES_FLOW = MessageTemplate(
    "GL407.random-decides-flow",
    "`{source}` decides the control flow inside `{function}`, which `checkpoint` at line {call} runs again during "
    "backward, and `{origin}` does not give the second run the same value." + _WHEN_THEY_DIFFER,
    zh_cn="`{source}` 决定了 `{function}` 中的控制流，而{call}的 `checkpoint` 会在反向传播时再次运行 `{function}`，"
    "`{origin}` 在第二次运行时给不出相同的值。" + _WHEN_THEY_DIFFER_ZH,
)
RANDOM_DECIDES_SHAPE = MessageTemplate(
    "GL407.random-decides-shape",
    "`{source}` decides a shape inside `{function}`, which `checkpoint` at line {call} runs again during "
    "backward, and `{origin}` does not give the second run the same value." + _WHEN_THEY_DIFFER,
    zh_cn="`{source}` 决定了 `{function}` 中的一个形状，而{call}的 `checkpoint` 会在反向传播时再次运行 `{function}`，"
    "`{origin}` 在第二次运行时给不出相同的值。" + _WHEN_THEY_DIFFER_ZH,
)
STATE_DECIDES_FLOW = MessageTemplate(
    "GL407.state-decides-flow",
    "`{source}` decides the control flow inside `{function}`, which `checkpoint` at line {call} runs again during "
    "backward, after the first run changed `{origin}`." + _WHEN_THEY_DIFFER,
    zh_cn="`{source}` 决定了 `{function}` 中的控制流，而{call}的 `checkpoint` 会在反向传播时再次运行 `{function}`，"
    "那时第一次运行已经改变了 `{origin}`。" + _WHEN_THEY_DIFFER_ZH,
)
STATE_DECIDES_SHAPE = MessageTemplate(
    "GL407.state-decides-shape",
    "`{source}` decides a shape inside `{function}`, which `checkpoint` at line {call} runs again during "
    "backward, after the first run changed `{origin}`." + _WHEN_THEY_DIFFER,
    zh_cn="`{source}` 决定了 `{function}` 中的一个形状，而{call}的 `checkpoint` 会在反向传播时再次运行 `{function}`，"
    "那时第一次运行已经改变了 `{origin}`。" + _WHEN_THEY_DIFFER_ZH,
)
TORCH_RANDOM = MessageTemplate(
    "GL407.torch-random",
    "`{source}` inside `{function}` draws from torch's random state, which `checkpoint` at line {call} does not "
    "restore for the recomputation (`preserve_rng_state=False`): backward then uses other random values than "
    "the forward did, and the gradients are silently wrong.",
    zh_cn="`{function}` 中的 `{source}` 会从 torch 的随机数状态中抽样，而{call}的 `checkpoint` 不会为重新计算恢复"
    "这个状态（`preserve_rng_state=False`）：反向传播用到的随机值与前向传播不同，梯度会悄无声息地出错。",
)

#: Modules and functions whose results a second run does not repeat (Python's state, the clock).
_NOT_REPLAYED_PREFIXES = ("random.", "numpy.random.", "secrets.", "time.", "uuid.")
_NOT_REPLAYED = frozenset({"datetime.datetime.now", "datetime.datetime.utcnow", "datetime.date.today", "os.urandom"})
#: torch's random ops and dropout: replayed only when checkpoint restores torch's RNG state.
_TORCH_RANDOM = frozenset({
    "torch.rand", "torch.randn", "torch.randint", "torch.rand_like", "torch.randn_like", "torch.randint_like",
    "torch.randperm", "torch.bernoulli", "torch.multinomial", "torch.normal", "torch.poisson",
    "torch.nn.functional.dropout", "torch.nn.functional.dropout1d", "torch.nn.functional.dropout2d",
    "torch.nn.functional.dropout3d", "torch.nn.functional.alpha_dropout", "torch.nn.functional.feature_alpha_dropout",
    "torch.dropout",
})
_DROPOUT_MODULES = frozenset({
    "torch.nn.Dropout", "torch.nn.Dropout1d", "torch.nn.Dropout2d", "torch.nn.Dropout3d", "torch.nn.AlphaDropout",
    "torch.nn.FeatureAlphaDropout",
})
#: Tensor methods whose arguments are sizes.
_SHAPE_METHODS = frozenset({"view", "reshape", "expand", "repeat", "narrow", "split", "chunk", "new_zeros",
                            "new_ones", "new_empty", "new_full", "unflatten", "tile"})

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


@dataclass(frozen=True)
class _Checkpointed:
    """A function that a checkpoint call runs, and how the call was made."""

    call: ast.Call
    function: Function
    owner: ast.ClassDef | None  # the class whose method it is (``self`` means an instance of it)
    restores_rng: bool


def check_module(ctx: ModuleContext) -> None:
    """Every checkpoint call whose function the file defines."""
    semantics = ctx.semantics
    names = semantics.names
    if not any(name.startswith("torch.utils.checkpoint") or name in ("torch", "torch.utils")
               for name in names.imported()):
        return
    reported: set[int] = set()
    for call in semantics.nodes(ast.Call):
        if names.qualified_name_in(call.func, CHECKPOINT_FUNCTIONS) is None or not call.args:
            continue
        restores = not any(k.arg == "preserve_rng_state" and isinstance(k.value, ast.Constant)
                           and k.value.value is False for k in call.keywords)
        for target in _checkpointed(semantics, call, restores):
            for node, report in _findings(ctx, target):
                if id(node) not in reported:
                    reported.add(id(node))
                    ctx.reporter.report(RULE, ctx.span(node), report)


def _checkpointed(semantics: Semantics, call: ast.Call, restores: bool) -> Iterator[_Checkpointed]:
    """The function(s) of this file that ``checkpoint(fn, ...)`` runs (none when it cannot tell):
    a lambda, a function, a method (``self.step``), or the ``forward`` of the file's modules that
    ``fn`` holds (``self.block``, ``self.blocks[i]``, ``block`` of ``for block in self.blocks``,
    ``blk = Block(...)``)."""
    fn = call.args[0]
    klass = _class_of(semantics, call)
    if isinstance(fn, ast.Lambda):
        yield _Checkpointed(call, fn, klass, restores)
        return
    if isinstance(fn, ast.Attribute) and _is_self(fn.value) and klass is not None:
        method = _method(klass, fn.attr)
        if method is not None:
            yield _Checkpointed(call, method, klass, restores)
            return
    if isinstance(fn, ast.Name):
        for node in semantics.nodes(ast.FunctionDef):
            if node.name == fn.id and not isinstance(semantics.parent(node), ast.ClassDef):
                yield _Checkpointed(call, node, None, restores)
                return
    for module_class in _module_classes(semantics, fn, klass):
        forward = _method(module_class, "forward")
        if forward is not None:
            yield _Checkpointed(call, forward, module_class, restores)


def _module_classes(semantics: Semantics, expr: ast.expr, klass: ast.ClassDef | None) -> list[ast.ClassDef]:
    """The classes of the file whose instances ``expr`` may be (an empty list when it cannot tell)."""
    if isinstance(expr, ast.Subscript):
        return _module_classes(semantics, expr.value, klass)
    if isinstance(expr, ast.Attribute) and _is_self(expr.value) and klass is not None:
        held = [value for target, value in _assignments(klass) if _is_self_attr(target, expr.attr)]
        return _constructed(semantics, held)
    if isinstance(expr, ast.Name):
        scope = semantics.enclosing_function(expr) or semantics.tree
        bound: list[ast.expr] = []
        for node in ast.walk(scope):
            if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name) \
                    and node.target.id == expr.id:
                return _module_classes(semantics, node.iter, klass)
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.id for t in node.targets):
                bound.append(node.value)
        return _constructed(semantics, bound)
    return []


def _constructed(semantics: Semantics, values: list[ast.expr]) -> list[ast.ClassDef]:
    """The classes of the file that ``values`` construct (``Block(...)``, in a list or a comprehension)."""
    found: dict[str, ast.ClassDef] = {}
    for value in values:
        for node in ast.walk(value):
            klass = semantics.class_constructed(node)
            if klass is not None:
                found.setdefault(klass.name, klass)
    return list(found.values())


def _assignments(klass: ast.ClassDef) -> Iterator[tuple[ast.expr, ast.expr]]:
    for node in ast.walk(klass):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield target, node.value


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_self_attr(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr and _is_self(node.value)


def _class_of(semantics: Semantics, node: ast.AST) -> ast.ClassDef | None:
    return next((a for a in semantics.ancestors(node) if isinstance(a, ast.ClassDef)), None)


def _method(klass: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    return next((s for s in klass.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name),
                None)


def _findings(ctx: ModuleContext, target: _Checkpointed) -> Iterator[tuple[ast.AST, Message]]:
    """What in the function a recomputation may not replay, with the message for it."""
    semantics = ctx.semantics
    function_name = target.function.name if not isinstance(target.function, ast.Lambda) else "lambda"
    call_line = Line(target.call.lineno)
    body: list[ast.AST] = [target.function.body] if isinstance(target.function, ast.Lambda) \
        else list(target.function.body)
    nodes = [n for part in body for n in ast.walk(part)]
    sources = _sources(semantics, nodes, target)
    if not target.restores_rng:
        for node in nodes:
            if isinstance(node, ast.Call) and _draws_torch_random(semantics, node, target.owner):
                yield node, TORCH_RANDOM(source=_text(ctx, node), function=function_name, call=call_line)
    if not sources:
        return
    tainted = _tainted_names(nodes, sources)
    for node in nodes:
        for decided, what in _decisions(node):
            hit = _first_source(decided, sources, tainted)
            if hit is None:
                continue
            if id(hit) not in sources and isinstance(hit, ast.Name):
                hit = tainted[hit.id]  # report where the value comes from, not where it is used
            origin = sources[id(hit)]
            state = isinstance(hit, (ast.Attribute, ast.Name))
            template = {(False, "flow"): RANDOM_DECIDES_FLOW, (False, "shape"): RANDOM_DECIDES_SHAPE,
                        (True, "flow"): STATE_DECIDES_FLOW, (True, "shape"): STATE_DECIDES_SHAPE}[state, what]
            yield hit, template(source=_text(ctx, hit), function=function_name, call=call_line, origin=origin)


def _sources(semantics: Semantics, nodes: list[ast.AST], target: _Checkpointed) -> dict[int, str]:
    """Expressions whose value a second run of the function does not repeat, with where the value
    comes from: the module (``random``, ``numpy.random``, ``time``) or the state the run changed
    (``self.calls``)."""
    names = semantics.names
    found: dict[int, str] = {}
    written = _written_state(nodes)
    for node in nodes:
        if isinstance(node, ast.Call):
            qualified = names.qualified_name(node.func) or ""
            if qualified.startswith(_NOT_REPLAYED_PREFIXES) or qualified in _NOT_REPLAYED:
                found[id(node)] = qualified.rsplit(".", 1)[0]
        elif isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            key = _state_key(node)
            if key is not None and key in written:
                found[id(node)] = key
    return found


def _written_state(nodes: list[ast.AST]) -> set[str]:
    """``self.<attr>`` and ``global`` names that the function assigns (state that outlives a run)."""
    declared = {name for node in nodes if isinstance(node, ast.Global) for name in node.names}
    written: set[str] = set()
    for node in nodes:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            key = _state_key(target)
            if key is not None and (key.startswith("self.") or key in declared):
                written.add(key)
    return written


def _state_key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return None


def _tainted_names(nodes: list[ast.AST], sources: dict[int, str]) -> dict[str, ast.AST]:
    """Local names assigned from an expression that holds a source (to a fixed point)."""
    tainted: dict[str, ast.AST] = {}
    changed = True
    while changed:
        changed = False
        for node in nodes:
            if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or node.value is None:
                continue
            hit = _first_source(node.value, sources, tainted)
            if hit is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and name.id not in tainted:
                        tainted[name.id] = hit
                        changed = True
    return tainted


def _first_source(expr: ast.AST, sources: dict[int, str], tainted: dict[str, ast.AST]) -> ast.AST | None:
    for node in ast.walk(expr):
        if id(node) in sources:
            return node
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in tainted:
            return node
    return None


def _decisions(node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """The parts of ``node`` that decide the control flow (``"flow"``) or a shape (``"shape"``)."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        yield node.test, "flow"
    elif isinstance(node, ast.comprehension):
        for test in node.ifs:
            yield test, "flow"
    elif isinstance(node, ast.Subscript):
        yield node.slice, "shape"
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "range":
            for arg in node.args:
                yield arg, "flow"
        elif isinstance(func, ast.Attribute) and func.attr in _SHAPE_METHODS:
            for arg in node.args:
                yield arg, "shape"


def _draws_torch_random(semantics: Semantics, call: ast.Call, owner: ast.ClassDef | None) -> bool:
    """A torch random op, functional dropout in training, or a dropout module held by ``self``."""
    qualified = semantics.names.qualified_name(call.func) or ""
    if qualified in _TORCH_RANDOM:
        return not _training_false(call)
    func = call.func
    if owner is not None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id == "self":
        for node in ast.walk(owner):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                isinstance(t, ast.Attribute) and t.attr == func.attr for t in node.targets
            ) and (semantics.names.qualified_name(node.value.func) or "") in _DROPOUT_MODULES:
                return True
    return False


def _training_false(call: ast.Call) -> bool:
    return any(k.arg == "training" and isinstance(k.value, ast.Constant) and k.value.value is False
               for k in call.keywords)



def _text(ctx: ModuleContext, node: ast.AST) -> str:
    return ast.get_source_segment(ctx.source, node) or ast.unparse(node)


RULE.check_module = check_module
