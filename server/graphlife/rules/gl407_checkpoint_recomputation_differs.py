"""Code inside a checkpointed function that its recomputation will not replay the same way.

## What it does
Runs the function given to `torch.utils.checkpoint.checkpoint` or `checkpoint_sequential` as
the analysis runs the code around it (a function, a method, a module, a lambda, and the helpers
and modules they call, in this file or another module of the project) and looks for what a
second run of it does not repeat: numbers drawn from Python's `random` or `numpy.random`, the
clock (`time.time()`, `time.perf_counter()`), and attributes of objects or globals that the run
itself changes from their own value or from such a draw (a call counter; a value set from the
function's inputs is set again the same). It warns when such a value decides the control flow (an `if`,
a `while`, a conditional expression, an `assert`, `range(...)`) or a shape (a slice of a tensor,
`view`/`reshape` sizes), however it got there (`p = random.random() * 2`, returned by a
helper, a module imported under another name). With `preserve_rng_state=False` it also warns
on torch's own random ops and on dropout, whose masks then differ between the two runs. Code
the analysis cannot follow gives no finding.

## Why is this bad?
A checkpoint frees the activations of the block and runs the block a second
time during backward to get them back. torch restores its own random state for
that second run (unless `preserve_rng_state=False`), but not Python's or
NumPy's, not the clock and not the attributes the first run changed. When the
second run takes another branch or makes other shapes, the non-reentrant
variant stops with a `CheckpointError` (some steps only, when the draws differ;
never, when no tensor its backward saves changes shape), and the reentrant variant backpropagates through a graph that is not the one
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

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import UnreplayedDecisionEvent, UnreplayedDrawEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import MessageTemplate, Severity

ZH_CN = Translation(
    """被检查点包住的函数里，有重新计算时不会以同样方式重放的代码。

## 它检查什么
按照分析运行周围代码的方式，运行传给 `torch.utils.checkpoint.checkpoint` 或 `checkpoint_sequential` 的函数（函数、方法、模块、lambda，以及它们调用的辅助函数和模块，无论在本文件中还是在项目的其他模块中），查找第二次运行时不会重复的东西：从 Python 的 `random` 或 `numpy.random` 抽取的数、时钟（`time.time()`、`time.perf_counter()`），以及这次运行根据它们自身的值或上述抽样修改的对象属性或全局变量（例如调用计数器；根据函数输入设置的值在第二次运行时会被设置成同样的值）。当这样的值决定了控制流（`if`、`while`、条件表达式、`assert`、`range(...)`）或形状（张量的切片、`view`/`reshape` 的尺寸）时给出警告，不论它是怎样得到的（`p = random.random() * 2`、由辅助函数返回、模块以别名导入）。在 `preserve_rng_state=False` 时，它还会对 torch 自己的随机操作和 dropout 给出警告：两次运行的掩码会不同。分析无法跟进的代码不产生诊断。

## 为什么这是问题？
检查点会释放代码块的激活值，并在反向传播时把代码块再运行一遍来取回它们。torch 会为第二次运行恢复它自己的随机数状态（除非 `preserve_rng_state=False`），但不会恢复 Python 或 NumPy 的随机数状态，不会恢复时钟，也不会撤销第一次运行对属性的修改。当第二次运行走了另一个分支或产生了另一种形状时，非可重入版本会抛出 `CheckpointError`（只在两次抽样不同的那些训练步；如果反向传播保存的张量没有一个改变形状，则永远不会报错），而可重入版本会沿着一个并非前向传播所用的计算图做反向传播：梯度悄无声息地变成了另一个网络的梯度，或者形状对不上。

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
    translates="2167fac4d2a6",
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

@RULE.on(UnreplayedDecisionEvent)
def on_decision(event: UnreplayedDecisionEvent, ctx: RuleContext) -> None:
    """A value the recomputation does not give again decided the control flow or a shape inside
    the checkpointed function (the engine follows it into the helpers and modules it calls):
    reported where the value comes from (the draw, the read of the state)."""
    source = event.source
    if source.site is None:
        return
    from_state = source.key is not None
    template = {(False, "flow"): RANDOM_DECIDES_FLOW, (False, "shape"): RANDOM_DECIDES_SHAPE,
                (True, "flow"): STATE_DECIDES_FLOW, (True, "shape"): STATE_DECIDES_SHAPE}[from_state, event.what]
    message = template(source=ctx.text(source.site), function=event.function, call=ctx.line(event.checkpoint),
                       origin=source.origin)
    ctx.report(RULE, ctx.span(source.site), message)


@RULE.on(UnreplayedDrawEvent)
def on_draw(event: UnreplayedDrawEvent, ctx: RuleContext) -> None:
    """torch drew random numbers inside a checkpoint that does not restore its random state."""
    if event.draw is None:
        return
    message = TORCH_RANDOM(source=ctx.text(event.draw), function=event.function, call=ctx.line(event.checkpoint))
    ctx.report(RULE, ctx.span(event.draw), message)
