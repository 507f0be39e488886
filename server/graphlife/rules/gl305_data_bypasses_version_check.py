"""An in-place change through `.data` of a tensor a pending graph saved: no error, wrong gradients.

## What it does
Reports in-place changes through `.data` (`w.data.clamp_(...)`,
`p.data.mul_(...)`, `h.data /= norm`) of a tensor that a graph saved for a
backward that runs afterwards.

## Why is this bad?
`.data` skips the version counter, so torch cannot notice that the saved value
changed: the backward silently computes gradients from the new values - the
error GL102 would have raised becomes a wrong model.

## What torch says
Nothing.

## Example
```python
out = model(x)
model.fc.weight.data.clamp_(-0.01, 0.01)   # the graph saved the old weight
out.sum().backward()
```

## Use instead
```python
out.sum().backward()
optimizer.step()
with torch.no_grad():
    model.fc.weight.clamp_(-0.01, 0.01)    # after the backward, version-checked
```

## Fix safety
Unsafe: moving the `.data` change after the backward changes the gradients (to the
right ones); applied only with `--unsafe-fixes`.

## Fixture line
The statement changing `.data` in place.
"""

from __future__ import annotations

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import MessageTemplate, Related, Severity
from graphlife.recipes import UNSAFE, MoveStatementAfter

ZH_CN = Translation(
    """通过 `.data` 原地修改了一个待执行计算图所保存的张量：不报错，但梯度是错的。

## 它检查什么
报告通过 `.data` 做的原地修改（`w.data.clamp_(...)`、`p.data.mul_(...)`、`h.data /= norm`），被修改的张量被某张计算图保存、供之后执行的反向传播使用。

## 为什么这是问题？
`.data` 绕过了版本计数器，torch 无法发现保存的值已经变了：反向传播会悄悄地用新值计算梯度——本该由 GL102 报出的错误，变成了一个训练错了的模型。

## torch 的报错
不报错。

## 示例
```python
out = model(x)
model.fc.weight.data.clamp_(-0.01, 0.01)   # 计算图保存的是旧的权重
out.sum().backward()
```

## 改为
```python
out.sum().backward()
optimizer.step()
with torch.no_grad():
    model.fc.weight.clamp_(-0.01, 0.01)    # 放在反向传播之后，并受版本号检查
```

## 修复的安全性
不安全：把 `.data` 修改移到反向传播之后会改变梯度（变成正确的梯度）；只在加 `--unsafe-fixes` 时应用。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="6fe2e5b7d50a",
)

RULE = Rule(
    code="GL305",
    name="data-bypasses-version-check",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

BYPASS = MessageTemplate(
    "GL305.bypass",
    "`{change}` changes a tensor through `.data` after `{saved_by}` (line {saved}) saved it for the backward at "
    "line {backward}: `.data` skips the version check, so that backward silently uses the new values. Change it "
    "after the backward, under `torch.no_grad()`.",
    zh_cn="`{change}` 在 `{saved_by}`（{saved}）为{backward}的反向传播保存该张量之后，又通过 `.data` 修改了它："
    "`.data` 会跳过版本检查，所以那次反向传播会悄悄用上新的值。请在反向传播之后、在 `torch.no_grad()` 下修改它。",
)
SAVED_HERE = MessageTemplate("GL305.saved-here", "saved here", zh_cn="在此保存")
USES_IT = MessageTemplate("GL305.uses-it", "this backward uses it", zh_cn="这次反向传播会用到它")
MOVE_TITLE = MessageTemplate("fix.move-after-backward", "Move the change after the backward",
                             zh_cn="把这次修改移到反向传播之后")


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    state = event.state
    for nid in sorted(event.must):
        if nid in state.freed:
            continue
        node = ctx.graph.nodes[nid]
        for saved in node.saves:
            for watermark, site in state.data_bumps.get(saved.storage, ()):
                if watermark > nid:
                    message = BYPASS(change=ctx.text(site), saved_by=node.line_desc, saved=ctx.line(node.site),
                                     backward=ctx.line(event.stmt))
                    related = [Related(ctx.span(node.site), SAVED_HERE()),
                               Related(ctx.span(event.stmt), USES_IT())]
                    fixes = [MoveStatementAfter(title=MOVE_TITLE(), applicability=UNSAFE,
                                                stmt=ctx.span(site), anchor=ctx.span(event.stmt))]
                    ctx.report(RULE, ctx.span(site), message, related=related, fixes=fixes)
                    return
