"""State carried across iterations without `detach()`, plus `retain_graph=True`: the graph grows every step.

## What it does
Reports a backward with `retain_graph=True` inside a loop that reaches graph
nodes built in earlier iterations through carried state (an RNN hidden state, a
running average, `self.memory`).

## Why is this bad?
Each step's backward walks the whole history: memory and backward time grow
linearly per step (quadratically in total) until the run crawls or dies. If an
optimizer step follows, the parameters saved by old iterations change and
GL102 fires too.

## What torch says
Nothing (or, with an optimizer step, the in-place version error of GL102).

## Example
```python
for x in stream:
    h = cell(x, h)
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)
```

## Use instead
```python
for x in stream:
    h = cell(x, h.detach())
    loss = h.pow(2).mean()
    loss.backward()
```

## Fix safety
Unsafe: detaching the carried state at the top of the loop (and dropping
`retain_graph=True`) bounds memory, but each step's gradients then stop at the current
iteration instead of reaching back through all earlier ones -- what trains changes.
Applied only with `--unsafe-fixes`.

## Fixture line
The backward call with `retain_graph=True`.
"""

from __future__ import annotations

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.fixes.proofs.carried import detach_recipe, names_text, still_carried
from graphlife.recipes import UNSAFE

ZH_CN = Translation(
    """跨迭代传递的状态没有 `detach()`，又加了 `retain_graph=True`：计算图每一步都在变大。

## 它检查什么
报告循环中带 `retain_graph=True` 的反向传播，它通过跨迭代传递的状态（RNN 的隐藏状态、滑动平均、`self.memory`）走到了之前迭代中构建的计算图节点。

## 为什么这是问题？
每一步的反向传播都要走完整个历史：内存和反向传播时间每一步线性增长（总量是平方级），直到训练慢得走不动或者直接崩掉。如果后面还有优化步，旧迭代保存的参数会被修改，GL102 也会报出来。

## torch 的报错
不报错（如果有优化步，则是 GL102 的原地操作版本号错误）。

## 示例
```python
for x in stream:
    h = cell(x, h)
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)
```

## 改为
```python
for x in stream:
    h = cell(x, h.detach())
    loss = h.pow(2).mean()
    loss.backward()
```

## 修复的安全性
不安全：在循环开头分离传递的状态（并去掉 `retain_graph=True`）可以让内存有上界，但每一步的梯度会止于当前迭代，而不再一路回溯到之前的所有迭代——训练的内容变了。只在加 `--unsafe-fixes` 时应用。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="394a5c92c0db",
)

RULE = Rule(
    code="GL203",
    name="carried-state-grows-graph",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

GROWS = MessageTemplate(
    "GL203.grows",
    "This backward keeps the graph (`retain_graph=True`) and reaches the graph built at line {built} (`{built_by}`) "
    "in an earlier iteration{via}: the graph grows every step. Detach the carried state at the top of the loop and "
    "drop `retain_graph=True`.",
    zh_cn="这次反向传播保留了计算图（`retain_graph=True`），并且{via}连到了之前迭代中在{built}（`{built_by}`）"
    "构建的计算图：计算图每一步都在增长。请在循环开头分离（`detach()`）跨迭代保留的状态，并去掉 `retain_graph=True`。",
)

THROUGH = MessageTemplate("GL203.through", " through {names}", zh_cn="经由 {names} ")
BUILT_EARLIER = MessageTemplate("GL203.built-earlier", "built in an earlier iteration", zh_cn="在之前的迭代中构建")



@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    if event.retain_graph is not True or ctx.current_loop() is None:
        return
    current = ctx.iteration()
    depth = len(current) - 1
    older = [
        n for n in sorted(event.must)
        if len(ctx.graph.nodes[n].iteration) > depth
        and ctx.graph.nodes[n].iteration[:depth] == current[:depth]
        and ctx.graph.nodes[n].iteration[depth] < current[depth]
    ]
    if not older:
        return
    node = ctx.graph.nodes[older[-1]]
    carried = still_carried(ctx.carried_names(set(older), event.state))
    via = THROUGH(names=names_text(carried)) if carried else ""
    message = GROWS(built=ctx.line(node.site), built_by=node.line_desc, via=via)
    fixes: list[FixRecipe] = []
    if carried:
        # the original trains through the whole history; detaching truncates it (what trains changes)
        fixes.append(detach_recipe(ctx, carried, event.state, UNSAFE))
    stmt = ctx.blame(event.stmt, event.root_expr)
    related = [Related(ctx.span(node.site), BUILT_EARLIER())]
    ctx.report(RULE, ctx.span(stmt), message, related=related, fixes=fixes)
