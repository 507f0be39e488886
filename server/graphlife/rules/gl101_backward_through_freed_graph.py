"""A backward reaches graph nodes that an earlier backward already freed.

## What it does
Follows every backward (`loss.backward()`, `torch.autograd.backward`,
`torch.autograd.grad`, `scaler.scale(loss).backward()`) through the graph it
reaches and checks whether an earlier backward without `retain_graph=True`
already consumed a node on the way that saves tensors. It sees the shapes that
span loops and functions: the same loss twice, two losses sharing an encoder,
the GAN discriminator step on an undetached `fake`, and state (an RNN hidden
state, a running tensor, `self.h`) carried from one iteration into the next.

## Why is this bad?
A backward frees the tensors each node saved for it, unless asked to keep them.
A second backward through the same nodes has nothing to compute with, so torch
stops the program - often after minutes of data loading. With carried state it
happens on the second batch, because the state still points into the graph of
the first one.

## What torch says
`RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.`

## Example
```python
hidden = None
for x, y in batches:
    out, hidden = lstm(x, hidden)
    loss = criterion(out, y)
    loss.backward()          # second batch: reaches the first batch's graph
```

## Use instead
```python
hidden = None
for x, y in batches:
    if hidden is not None:
        hidden = tuple(t.detach() for t in hidden)
    out, hidden = lstm(x, hidden)
    loss = criterion(out, y)
    loss.backward()
```
In the GAN step, give the discriminator `fake.detach()`; when two losses share
a graph, add them and call one backward. `retain_graph=True` on the earlier
backward also works, but keeps every saved tensor alive until the last one.

## Fix safety
Safe: detaching every carried name at the top of the loop (each step then trains on
its own batch, as the code meant once the second batch stopped raising); in the GAN shape,
`D(fake.detach())` for the discriminator and a fresh `D(fake)` for the generator (each
network trains on its own loss, with the weights its optimizer just updated); one backward
on the sum of two losses that share a graph (the same gradients, summed once).
Unsafe: `retain_graph=True` on the earlier backward -- it keeps every tensor that graph
saved alive until the last backward, and after an optimizer step in between the second
backward fails anyway. It is offered only where the engine shows it works, never preferred,
and never applied by `graphlife fix` or fix-all without `--unsafe-fixes`.

## Fixture line
The backward call that raises (the second backward).
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

import ast

from graphlife import phrases
from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.state import Node, State
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.fixes.proofs.carried import detach_recipe, names_text, still_carried
from graphlife.fixes.proofs.shared_graph import shared_graph_fix
from graphlife.phrases import tensor_name
from graphlife.recipes import MergeBackwards, RetainGraph

ZH_CN = Translation(
    """一次反向传播走到了之前某次反向传播已经释放过的计算图节点。

## 它检查什么
沿着每一次反向传播（`loss.backward()`、`torch.autograd.backward`、`torch.autograd.grad`、`scaler.scale(loss).backward()`）走过它能到达的计算图，检查路上某个保存了张量的节点是否已被更早的、没有加 `retain_graph=True` 的反向传播用掉。跨越循环和函数的写法它都能看出来：同一个 loss 反向传播两次，两个 loss 共用一个编码器，GAN 的判别器那一步用了没有分离的 `fake`，以及从一轮迭代带到下一轮的状态（RNN 的隐藏状态、累加的张量、`self.h`）。

## 为什么这是问题？
反向传播会释放每个节点为它保存的张量，除非明确要求保留。第二次经过同一批节点的反向传播已经没有可用的数据，torch 只能终止程序——往往是在加载了好几分钟数据之后。如果是跨迭代保留的状态，报错出现在第二个 batch，因为这个状态仍然指向第一个 batch 的计算图。

## torch 的报错
`RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.`

## 示例
```python
hidden = None
for x, y in batches:
    out, hidden = lstm(x, hidden)
    loss = criterion(out, y)
    loss.backward()          # 第二个 batch：走进了第一个 batch 的计算图
```

## 改为
```python
hidden = None
for x, y in batches:
    if hidden is not None:
        hidden = tuple(t.detach() for t in hidden)
    out, hidden = lstm(x, hidden)
    loss = criterion(out, y)
    loss.backward()
```
GAN 的那一步里，给判别器传 `fake.detach()`；两个 loss 共用一张计算图时，把它们相加后只调用一次反向传播。在前一次反向传播上加 `retain_graph=True` 也能跑通，但会让所有保存的张量一直活到最后一次反向传播。

## 修复的安全性
安全：在循环开头分离每个跨迭代传递的变量（这样每一步只在自己的 batch 上训练——第二个 batch 不再报错后，代码本来就是这个意思）；GAN 的写法里，判别器用 `D(fake.detach())`，生成器重新算一次 `D(fake)`（两个网络各自用自己的 loss、用各自优化器刚更新过的权重训练）；两个共用计算图的 loss 相加后做一次反向传播（梯度相同，只是一次求和）。不安全：在前一次反向传播上加 `retain_graph=True`——它让那张计算图保存的每个张量都活到最后一次反向传播，而且如果中间有一次优化步，第二次反向传播照样会失败。只有引擎能证明它可行时才会提供这个修复，它从不是首选，`graphlife fix` 和“全部修复”在没有 `--unsafe-fixes` 时也不会应用它。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="e6c2b793ab4d",
)

RULE = Rule(
    code="GL101",
    name="backward-through-freed-graph",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="Trying to backward through the graph a second time",
)

CARRIED = MessageTemplate(
    "GL101.carried",
    "`{root}` reaches the graph built at line {built} (`{built_by}`) in an earlier iteration, carried into this one "
    "by {name}; the backward at line {freed} already freed it{maybe}. Detach {name} at the top of the loop "
    "(line {loop}).",
    zh_cn="`{root}` 会反向传播进上一次迭代中在{built}（`{built_by}`）构建的计算图，它经由 {name} 被带入本次迭代；"
    "{freed}的反向传播已经释放了这张图{maybe}。请在循环开头（{loop}）对 {name} 调用 `detach()`。",
)
FREED = MessageTemplate(
    "GL101.freed",
    "`{root}` backpropagates through the graph built at line {built} (`{built_by}`), which the backward at "
    "line {freed} already freed{maybe}.",
    zh_cn="`{root}` 要反向传播经过在{built}（`{built_by}`）构建的计算图，而{freed}的反向传播已经释放了它{maybe}。",
)
BUILT_HERE = MessageTemplate(
    "GL101.built-here", "graph built here (`{built_by}`)",
    zh_cn="计算图在此构建（`{built_by}`）")
FREED_HERE = MessageTemplate("GL101.freed-here", "this backward freed it", zh_cn="这次反向传播释放了计算图")
MERGE_TITLE = MessageTemplate("fix.merge-backwards", "Call one backward on `{first} + {second}`",
                              zh_cn="对 `{first} + {second}` 只调用一次 `backward()`")
RETAIN_TITLE = MessageTemplate("fix.retain-graph", "Keep the graph with `retain_graph=True` (keeps its memory alive)",
                               zh_cn="用 `retain_graph=True` 保留计算图（其显存会一直占用）")


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    graph = ctx.graph
    state = event.state
    certain = [n for n in sorted(event.must) if n in state.freed and graph.nodes[n].saves_certain]
    severity = Severity.ERROR
    candidates = certain
    if not candidates:
        candidates = [
            n for n in sorted(event.may)
            if (n in state.freed or n in state.may_freed) and graph.nodes[n].saves_certain
        ]
        severity = Severity.WARNING
    if not candidates:
        return
    node = graph.nodes[candidates[-1]]
    freeing = state.freed.get(node.nid) or state.may_freed.get(node.nid)
    root = tensor_name(ctx.text(event.root_expr))
    built_line = ctx.line(node.site)
    freed_line = ctx.line(freeing) if freeing is not None else None
    carried = ctx.carried_names(set(candidates), state) if node.iteration and ctx.current_loop() is not None else []
    carried = [c for c in carried if c[0] != (root if isinstance(event.root_expr, ast.Name) else None)]
    carried = still_carried(carried)
    stmt = ctx.blame(event.stmt, event.root_expr)
    maybe = phrases.maybe(severity is Severity.ERROR)
    if carried:
        loop = carried[0][1]
        message = CARRIED(root=root, built=built_line, built_by=node.line_desc, name=names_text(carried),
                          freed=freed_line, maybe=maybe, loop=ctx.line(loop))
    else:
        message = FREED(root=root, built=built_line, built_by=node.line_desc, freed=freed_line, maybe=maybe)
    related = [Related(ctx.span(node.site), BUILT_HERE(built_by=node.line_desc))]
    if freeing is not None:
        related.append(Related(ctx.span(freeing), FREED_HERE()))
    fixes = _fixes(event, ctx, node, freeing, carried, state)
    ctx.report(RULE, ctx.span(stmt), message, severity=severity, related=related, fixes=fixes)


def _fixes(event: BackwardEvent, ctx: RuleContext, node: Node, freeing: ast.AST | None,
           carried: list[tuple[str, ast.AST]], state: State) -> list[FixRecipe]:
    fixes: list[FixRecipe] = []
    if carried:
        fixes.append(detach_recipe(ctx, carried, state))
    else:
        shared = shared_graph_fix(event, ctx, node, freeing)
        if shared is not None:
            fixes.append(shared)
    if freeing is not None and isinstance(freeing, ast.stmt) and _adjacent(ctx, freeing, event.stmt):
        first_root = _backward_root_text(ctx, freeing)
        second_root = ctx.text(event.root_expr)
        if first_root and second_root:
            fixes.append(MergeBackwards(
                title=MERGE_TITLE(first=first_root, second=second_root),
                first=ctx.span(freeing), second=ctx.span(event.stmt), first_root=first_root, second_root=second_root,
            ))
    if freeing is not None and isinstance(freeing, ast.stmt):
        call = _backward_call(freeing)
        if call is not None:
            fixes.append(RetainGraph(title=RETAIN_TITLE(),
                                     call=ctx.span(call)))
    return fixes


def _backward_call(stmt: ast.stmt) -> ast.Call | None:
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            return node
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("grad",)
                and ast.unparse(node.func).endswith("autograd.grad")):
            return node
    return None


def _backward_root_text(ctx: RuleContext, stmt: ast.stmt) -> str:
    call = _backward_call(stmt)
    if call is not None and isinstance(call.func, ast.Attribute) and call.func.attr == "backward" and not call.args:
        return ctx.text(call.func.value)
    return ""


def _adjacent(ctx: RuleContext, first: ast.stmt, second: ast.stmt) -> bool:
    parent = ctx.parent(first)
    if parent is None or ctx.parent(second) is not parent:
        return False
    for field_name in ("body", "orelse", "finalbody"):
        body = getattr(parent, field_name, None)
        if isinstance(body, list) and first in body and second in body:
            adjacent = body.index(second) == body.index(first) + 1
            return adjacent and isinstance(first, ast.Expr) and isinstance(second, ast.Expr)
    return False
