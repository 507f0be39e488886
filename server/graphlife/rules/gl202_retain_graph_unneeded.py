"""`retain_graph=True` on a backward after which nothing backpropagates through that graph again.

## What it does
Remembers every backward with `retain_graph=True` and reports those whose graph
no later backward (or `torch.autograd.grad`) reaches.

## Why is this bad?
Retaining keeps every saved activation of the graph alive until the last
reference to its output dies - memory for nothing, and often a sign that the
argument was added to silence GL101 instead of fixing the graph.

## What torch says
Nothing.

## Example
```python
loss.backward(retain_graph=True)
optimizer.step()
```

## Use instead
```python
loss.backward()
optimizer.step()
```

## Fix safety
Safe: dropping `retain_graph=True` frees the graph earlier; nothing backpropagates
through it again, so every gradient is the same.

## Fixture line
The backward call with the unneeded `retain_graph=True`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent, OpaqueCallEvent, UnitEndEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import MessageTemplate, Severity
from graphlife.recipes import DropKeyword

ZH_CN = Translation(
    """反向传播用了 `retain_graph=True`，但之后再也没有反向传播经过这张计算图。

## 它检查什么
记住每一次带 `retain_graph=True` 的反向传播，报告那些之后没有任何反向传播（或 `torch.autograd.grad`）再用到其计算图的调用。

## 为什么这是问题？
保留计算图会让它保存的每个激活值一直活着，直到指向其输出的最后一个引用消失——白白占用内存；而且这往往说明这个参数是为了让 GL101 不再报错才加上的，而不是真正修好了计算图。

## torch 的报错
不报错。

## 示例
```python
loss.backward(retain_graph=True)
optimizer.step()
```

## 改为
```python
loss.backward()
optimizer.step()
```

## 修复的安全性
安全：去掉 `retain_graph=True` 会让计算图更早被释放；之后没有反向传播再经过它，所以每个梯度都不变。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="7affbdb22865",
)

RULE = Rule(
    code="GL202",
    name="retain-graph-unneeded",
    severity=Severity.INFORMATION,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

UNNEEDED = MessageTemplate(
    "GL202.unneeded",
    "`retain_graph=True` keeps the graph of `{root}` alive, "
    "but no later backward goes through it: drop the argument to free the saved activations now.",
    zh_cn="`retain_graph=True` 让 `{root}` 的计算图一直存活，但之后没有任何反向传播再经过它："
    "去掉这个参数，保存的激活值就能立即释放。")
THIS_BACKWARD = MessageTemplate("phrase.this-backward", "this backward", zh_cn="这次反向传播")
DROP_TITLE = MessageTemplate("fix.drop-retain-graph", "Remove `retain_graph=True`", zh_cn="去掉 `retain_graph=True`")



@dataclass
class GL202State:
    """The backwards of the running unit, in order, with the statement each is written in
    (where the argument to drop is); judged when the unit ends."""

    backwards: list[tuple[BackwardEvent, ast.stmt]] = field(default_factory=list)
    backward_seqs: list[int] = field(default_factory=list)  # when each backward ran (event order)
    #: Calls the engine cannot follow that were given graphs, with when they ran.
    opaque: list[tuple[int, OpaqueCallEvent]] = field(default_factory=list)
    seq: int = 0


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    data = ctx.unit_state(GL202State)
    data.seq += 1
    data.backwards.append((event, event.stmt))
    data.backward_seqs.append(data.seq)


@RULE.on(OpaqueCallEvent)
def on_opaque_call(event: OpaqueCallEvent, ctx: RuleContext) -> None:
    data = ctx.unit_state(GL202State)
    data.seq += 1
    data.opaque.append((data.seq, event))


@RULE.on(UnitEndEvent)
def on_unit_end(event: UnitEndEvent, ctx: RuleContext) -> None:
    data = ctx.take_unit_state(GL202State)
    if data is None:
        return
    backwards = data.backwards
    current_seq = data.backward_seqs
    needed: set[int] = set()
    for index, (current, stmt) in enumerate(backwards):
        if current.retain_graph is not True or not current.may:
            continue
        # Where the engine lost edges (a partial graph: an input it could not interpret), the
        # retained graph may hold more than it sees, and a later graph may reach it unseen.
        handed_out = any(ctx.graph.nodes[n].partial for n in current.may) or any(
            opaque.nodes & current.may for seq, opaque in data.opaque if seq > current_seq[index]
        )
        # A backward a hook runs (inside another backward) is followed by the rest of that one.
        later = bool(current.enclosing_may & current.may) or any(
            (other.may & current.may)
            # a later backward on a value we could not interpret may well reach it, and so may one
            # whose graph lost its way through a call we cannot follow that was given this graph
            # (a feature extractor built by a library: `extractor(fake)`), or that reaches a part
            # of the retained graph the engine could not see
            or not other.may
            or (handed_out and any(ctx.graph.nodes[n].partial for n in other.may))
            for other, _ in backwards[index + 1:]
        )
        if later:
            needed.add(id(stmt))
    reported = set()
    for current, stmt in backwards:
        if current.retain_graph is not True or not current.may or id(stmt) in needed or id(stmt) in reported:
            continue
        if current.create_graph is True:
            continue  # higher-order gradients need the graph kept (torch measures it retained and used)
        if not any(ctx.graph.nodes[n].saves_certain for n in current.may):
            continue
        reported.add(id(stmt))
        message = UNNEEDED(root=ctx.text(current.root_expr) or THIS_BACKWARD())
        fixes = [DropKeyword(title=DROP_TITLE(), call=ctx.span(current.call), keyword="retain_graph")]
        ctx.report(RULE, ctx.span(stmt), message, fixes=fixes)
