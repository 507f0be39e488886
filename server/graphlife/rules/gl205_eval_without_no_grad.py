"""A loop runs the model forward, never calls backward, and records graphs for nothing.

## What it does
Reports a loop that calls a model while gradients are on, never calls
backward, and whose graphs no later backward uses - in evaluation code (the
model was put in `eval()` mode, or the loop is in a function whose name says
evaluate / validate / test / predict / infer).

## Why is this bad?
Every forward records a graph and saves activations for a backward that never
comes: slower, and more memory, for nothing.

## What torch says
Nothing.

## Example
```python
model.eval()
for x, y in val_loader:
    correct += (model(x).argmax(1) == y).sum().item()
```

## Use instead
```python
model.eval()
with torch.inference_mode():
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
```
(`torch.no_grad()` when the results feed a later graph.)

## Fix safety
Safe: `with torch.no_grad():` around a loop that never calls backward computes the same
outputs without keeping their graphs.

## Fixture line
The `for`/`while` line of the loop.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent, LoopEndEvent, UnitEndEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import MessageTemplate, Severity
from graphlife.recipes import WrapNoGrad

ZH_CN = Translation(
    """循环里运行模型的前向传播却从不调用反向传播，白白记录了计算图。

## 它检查什么
报告这样的循环：在启用梯度时调用模型，从不调用反向传播，之后也没有反向传播用到它的计算图——出现在评估代码里（模型被设为 `eval()` 模式，或者循环所在函数的名字表明是 evaluate / validate / test / predict / infer）。

## 为什么这是问题？
每次前向传播都会记录计算图，并为一个永远不会到来的反向传播保存激活值：更慢，也更占内存，毫无用处。

## torch 的报错
不报错。

## 示例
```python
model.eval()
for x, y in val_loader:
    correct += (model(x).argmax(1) == y).sum().item()
```

## 改为
```python
model.eval()
with torch.inference_mode():
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
```
（如果结果还要参与之后的计算图，用 `torch.no_grad()`。）

## 修复的安全性
安全：在从不调用反向传播的循环外面包一层 `with torch.no_grad():`，输出完全相同，只是不再保留它们的计算图。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="ea91681b18d8",
)

RULE = Rule(
    code="GL205",
    name="eval-without-no-grad",
    severity=Severity.INFORMATION,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

EVAL_NAME = re.compile(r"(eval|valid|test|predict|infer)", re.I)

NO_BACKWARD = MessageTemplate(
    "GL205.no-backward",
    "This loop runs the model with gradients on but never calls backward: every forward records a graph "
    "and keeps activations for nothing. Wrap it in `with torch.inference_mode():` (or `torch.no_grad()`).",
    zh_cn="这个循环在开启梯度记录的情况下运行模型，却从不调用 `backward()`：每次前向传播都会记录计算图，"
    "白白保留激活值。请用 `with torch.inference_mode():`（或 `torch.no_grad()`）包住它。")
WRAP_TITLE = MessageTemplate("fix.wrap-loop-no-grad", "Wrap the loop in `with torch.no_grad():`",
                             zh_cn="用 `with torch.no_grad():` 包住这个循环")



@dataclass
class GL205State:
    """The loops of the running unit that ran the model with gradients and no backward, with the
    graph nodes they made that no later backward used (yet); reported when the unit ends."""

    pending: list[tuple[ast.stmt, set[int]]] = field(default_factory=list)


@RULE.on(LoopEndEvent)
def on_loop_end(event: LoopEndEvent, ctx: RuleContext) -> None:
    if event.backwards or event.last_node <= event.first_node or ctx.grad_mode(event.state).enabled is not True:
        return
    nodes = range(event.first_node, event.last_node)
    if not any(ctx.graph.nodes[n].leaves for n in nodes):
        return  # no parameter took part: no model forward with gradients
    in_eval = any(event.state.heap.get(ref.oid) is not None and event.state.heap[ref.oid].extra.get("training") is False
                  for ref, _ in event.module_calls)
    function = ctx.enclosing_function(event.loop)
    if function is not None and function.name == "forward":
        return  # a model's own loop over its layers or time steps: one forward, run by whoever calls it
    named = function is not None and EVAL_NAME.search(function.name) is not None
    if not (in_eval or named):
        return
    ctx.unit_state(GL205State).pending.append((event.loop, set(nodes)))


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    for _, nodes in ctx.unit_state(GL205State).pending:
        nodes -= event.may  # a later backward used these graphs


@RULE.on(UnitEndEvent)
def on_unit_end(event: UnitEndEvent, ctx: RuleContext) -> None:
    data = ctx.take_unit_state(GL205State)
    for loop, nodes in data.pending if data is not None else ():
        if not nodes:
            continue
        message = NO_BACKWARD()
        fixes = [WrapNoGrad(title=WRAP_TITLE(), stmt=ctx.span(loop))]
        ctx.report(RULE, ctx.span(loop), message, fixes=fixes)
