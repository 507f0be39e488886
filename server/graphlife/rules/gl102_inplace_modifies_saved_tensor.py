"""An in-place change hits a tensor that a graph saved for a backward still to come.

## What it does
Every graph node remembers the tensors it saved for backward and the version
each had then (from a table measured on the installed torch: `sigmoid` saves its
result, `mul` saves the other operand, `Linear` saves its input but not its
output). When a backward reaches a node whose saved tensor was changed in place
since - `x += y`, `x.add_()`, `x[i] = v`, `out=`, `torch.relu_(x)`,
`F.relu(x, inplace=True)`, an `nn.ReLU(inplace=True)` module, or an
`optimizer.step()` that updates parameters a pending graph saved - the in-place
statement is reported. Changes through a view count, because views share their
base's version counter.

## Why is this bad?
The saved value is what backward needs to compute the gradient. After an
in-place change it is gone, so torch refuses to compute a wrong gradient and
raises in backward, far from the line that caused it.

## What torch says
`RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [8, 4]], which is output 0 of Sigmoid, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).`

## Example
```python
h = torch.sigmoid(self.fc(x))
h.relu_()                  # sigmoid saved h for its backward
loss = h.sum()
loss.backward()
```

## Use instead
```python
h = torch.sigmoid(self.fc(x))
h = h.relu()
```
Not every in-place op is a bug: `y = x * 2; y += 1` runs (multiplying by a
Python number saves nothing), and so does `Linear` followed by
`ReLU(inplace=True)` (`addmm` does not save its output).

## Fix safety
Safe: the out-of-place form (`x = x + y` for `x += y`, no `inplace=True`) computes the
same values; it costs one more tensor while the graph needs the old one.

## Fixture line
The statement that performs the in-place change (for an in-place module inside
`nn.Sequential`, its construction; for `optimizer.step()`, the step).
"""  # noqa: E501 - what torch says is quoted verbatim

from __future__ import annotations

import ast

from graphlife.analysis.distributions import display_op
from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.state import Node, SavedRef
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.recipes import OutOfPlace

ZH_CN = Translation(
    """原地操作修改了一个张量，而某个尚未执行的反向传播需要它被保存时的值。

## 它检查什么
计算图中的每个节点都会记住它为反向传播保存的张量，以及保存时这些张量的版本号（哪些算子保存什么，来自在已安装的 torch 上实测的表：`sigmoid` 保存它的输出，`mul` 保存另一个操作数，`Linear` 保存输入、不保存输出）。当反向传播走到某个节点，而它保存的张量在那之后被原地修改过——`x += y`、`x.add_()`、`x[i] = v`、`out=`、`torch.relu_(x)`、`F.relu(x, inplace=True)`、`nn.ReLU(inplace=True)` 模块，或者更新了某个待执行计算图所保存参数的 `optimizer.step()`——就报告那条原地操作语句。通过视图做的修改同样算数，因为视图和它的基张量共用同一个版本计数器。

## 为什么这是问题？
反向传播要用保存的值来计算梯度。原地修改之后这个值已经不在了，torch 不会算出错误的梯度，而是在反向传播时直接报错——报错的位置离真正出问题的那一行很远。

## torch 的报错
`RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [8, 4]], which is output 0 of Sigmoid, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).`

## 示例
```python
h = torch.sigmoid(self.fc(x))
h.relu_()                  # sigmoid 为它的反向传播保存了 h
loss = h.sum()
loss.backward()
```

## 改为
```python
h = torch.sigmoid(self.fc(x))
h = h.relu()
```
并不是所有原地操作都有问题：`y = x * 2; y += 1` 可以正常运行（乘以 Python 数字不保存任何张量），`Linear` 后接 `ReLU(inplace=True)` 也没问题（`addmm` 不保存它的输出）。

## 修复的安全性
安全：非原地写法（`x += y` 改为 `x = x + y`，去掉 `inplace=True`）算出的值完全相同；代价是在计算图还需要旧张量期间多占一个张量的内存。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="b3040f1db7a9",
)

RULE = Rule(
    code="GL102",
    name="inplace-modifies-saved-tensor",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="one of the variables needed for gradient computation has been modified by an inplace operation",
)

_SAVED = ("`{change_text}` {change}, but {what} saved at line {saved} for the backward at line {backward}, "
          "which will raise.")
_SAVED_ZH = "`{change_text}` {change}，但 {what}已在{saved}为{backward}的反向传播保存下来，那次反向传播会报错。"
SAVED = MessageTemplate("GL102.saved", _SAVED, zh_cn=_SAVED_ZH)
SAVED_BEFORE_STEP_CARRIED = MessageTemplate(
    "GL102.saved-before-step-carried",
    _SAVED + " The graph still to be backpropagated was built in an earlier iteration (carried state?): "
    "detach it or finish its backward first.",
    zh_cn=_SAVED_ZH + "尚待反向传播的计算图是在之前的迭代中构建的（跨迭代保留的状态？）："
    "请先分离它（`detach()`），或先完成它的反向传播。",
)
SAVED_BEFORE_STEP = MessageTemplate(
    "GL102.saved-before-step",
    _SAVED + " That backward's graph was built before the step: run it before `{change_text}`, "
    "or build the graph again after the step.",
    zh_cn=_SAVED_ZH + "那次反向传播的计算图是在优化步之前构建的：请在 `{change_text}` 之前执行它，"
    "或在优化步之后重新构建计算图。",
)
#: What was saved, with its verb (English agrees it with the noun; Chinese needs none).
OUTPUT_OF = MessageTemplate("GL102.what-output", "the output of `{op}` was", zh_cn="`{op}` 的输出")
NAMED_INPUT = MessageTemplate("GL102.what-named-input", "`{desc}` (an input of `{op}`) was",
                              zh_cn="`{desc}`（`{op}` 的输入）")
AN_INPUT = MessageTemplate("GL102.what-input", "an input was", zh_cn="它的一个输入")
PARAMETERS = MessageTemplate("GL102.what-parameters", "{desc} were", zh_cn="{desc}")
THE_PARAMETERS = MessageTemplate("GL102.what-the-parameters", "the parameters were", zh_cn="这些参数")
UPDATES_THEM = MessageTemplate("GL102.updates-in-place", "updates them in place", zh_cn="原地更新了参数")
CHANGES_IT = MessageTemplate("GL102.changes-in-place", "changes it in place", zh_cn="对它做了原地修改")
SAVED_BY = MessageTemplate("GL102.saved-by", "saved here by `{op}`", zh_cn="由 `{op}` 在此保存")
NEEDS_SAVED = MessageTemplate("GL102.needs-saved", "this backward needs the saved value",
                              zh_cn="这次反向传播需要这个保存的值")
OUT_OF_PLACE = MessageTemplate("fix.out-of-place", "Use the out-of-place form", zh_cn="改用非原地（out-of-place）写法")


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    state = event.state
    graph = ctx.graph
    for nid in sorted(event.must):
        if nid in state.freed or nid in state.may_freed:
            continue  # GL101's business: the saved tensors are gone anyway
        node = graph.nodes[nid]
        for saved in node.saves:
            versions = state.version_of(saved.storage)
            if saved.version in versions:
                continue
            bumps = state.bumps.get(saved.storage, ())
            bump_site = next((site for version, site in bumps if version > saved.version), None)
            if bump_site is None:
                continue
            _report(ctx, event, node, saved, bump_site)
            return


def _built_in_earlier_iteration(ctx: RuleContext, node: Node) -> bool:
    """Was the node made in an earlier iteration of a loop still running (a carried graph)?"""
    now = ctx.iteration()
    made = node.iteration
    depth = min(len(now), len(made))
    return made[:depth] != now[:depth]


def _report(ctx: RuleContext, event: BackwardEvent, node: Node, saved: SavedRef, bump_site: ast.AST) -> None:
    if saved.what == "result":
        what = OUTPUT_OF(op=node.line_desc)
    elif saved.what == "input":
        what = NAMED_INPUT(desc=saved.desc, op=node.line_desc) if saved.desc else AN_INPUT()
    else:
        what = PARAMETERS(desc=saved.desc) if saved.desc else THE_PARAMETERS()
    is_step = isinstance(bump_site, ast.stmt) and "step(" in ctx.text(bump_site)
    change = UPDATES_THEM() if is_step else CHANGES_IT()
    template = SAVED
    if is_step:
        template = SAVED_BEFORE_STEP_CARRIED if _built_in_earlier_iteration(ctx, node) else SAVED_BEFORE_STEP
    message = template(change_text=ctx.text(bump_site), change=change, what=what,
                       saved=ctx.line(node.site), backward=ctx.line(event.stmt))
    related = [
        Related(ctx.span(node.site), SAVED_BY(op=display_op(node.op))),
        Related(ctx.span(event.stmt), NEEDS_SAVED()),
    ]
    fixes: list[FixRecipe] = []
    if not is_step:
        construction = _construction_of(bump_site)
        fixes.append(OutOfPlace(title=OUT_OF_PLACE(), stmt=ctx.span(bump_site),
                                construction=ctx.span(construction) if construction is not None else None))
    ctx.report(RULE, ctx.span(bump_site), message, related=related, fixes=fixes)


def _construction_of(site: ast.AST) -> ast.AST | None:
    if isinstance(site, ast.Call) and any(kw.arg == "inplace" for kw in site.keywords):
        return site
    return None

