"""`.numpy()` is called on a tensor that requires grad: torch raises.

## What it does
Reports `t.numpy()` where `t` requires grad and gradients are on: a parameter, a
leaf created with `requires_grad=True`, or a value computed from one (a model's
output, a loss, an advantage, an action sampled with `rsample`), also through
`.cpu()` or `.to(...)`, which keep the graph. Under `torch.no_grad()` torch lets
it through.

## Why is this bad?
A NumPy array cannot carry an autograd graph, so torch refuses to hand one over
instead of silently dropping the gradient. The usual cause is a `.detach()` that
was left out: values logged, plotted or passed to an environment are taken from
the training graph.

## What torch says
`RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.`

## Example
```python
delta = td_target - value_net(states)
advantages = compute_gae(delta.numpy())
```

## Use instead
```python
delta = td_target - value_net(states)
advantages = compute_gae(delta.detach().numpy())   # or compute `delta` under torch.no_grad()
```

## Fix safety
Safe: `.detach()` gives the same values without the graph, which is what `.numpy()` needs and
what torch's message asks for; nothing that trained through the tensor changes.

## Fixture line
The statement with the `.numpy()` call.
"""

from __future__ import annotations

from graphlife.analysis.events import NumpyEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import MessageTemplate, Severity
from graphlife.recipes import ReplaceText
from graphlife.rules.base import grad_mode_severity

RULE = Rule(
    code="GL109",
    name="numpy-of-tensor-requiring-grad",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__),
    torch_message="Can't call numpy() on Tensor that requires grad",
)

REQUIRES_GRAD = MessageTemplate(
    "GL109.requires-grad",
    "`{call}` raises: `{tensor}` requires grad, and a NumPy array cannot keep its graph. "
    "Write `{tensor}.detach().numpy()`.{note}",
)


@RULE.on(NumpyEvent)
def on_numpy(event: NumpyEvent, ctx: RuleContext) -> None:
    """A tensor that requires grad on every path reaching the call, with gradients on there:
    torch checks both (under ``no_grad`` even a parameter converts). In a function analyzed
    alone the mode is an assumption (then a warning)."""
    tensor = event.tensor
    mode = ctx.grad_mode(event.state)
    if tensor.requires_grad is not True or mode.enabled is not True or mode.inference is not False:
        return
    severity, note = grad_mode_severity(mode, RULE.severity)
    if tensor.nullable and severity is Severity.ERROR:
        severity, note = Severity.WARNING, ""  # not a tensor on some path: it raises otherwise there
    receiver = ctx.text(event.receiver) or "the tensor"
    receiver_span = ctx.span(event.receiver)
    fix = ReplaceText(title="Detach before `.numpy()`", span=receiver_span, text=f"{receiver}.detach()")
    ctx.report(RULE, ctx.span(event.stmt), REQUIRES_GRAD(call=ctx.text(event.call), tensor=receiver, note=note),
               severity=severity, fixes=[fix])
