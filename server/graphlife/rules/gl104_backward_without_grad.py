"""Backward on a value that certainly has no graph.

## What it does
Reports a backward whose root cannot require grad: it was computed under
`torch.no_grad()` or `torch.inference_mode()`, cut off by `.detach()`,
re-wrapped from a Python number or array (`torch.tensor(loss.item())`,
`torch.from_numpy(...)`), computed by a model whose parameters are all frozen
from inputs that do not require grad, or is the result of a non-differentiable
op (`argmax`, comparisons). The message points at the place the graph was lost
and, for `no_grad`, at the block or decorator that turned gradients off.

## Why is this bad?
There is no graph to backpropagate through, so nothing can receive a gradient.
Torch raises at the backward.

## What torch says
`RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn`

## Example
```python
with torch.no_grad():
    loss = criterion(model(x), y)
loss.backward()
```

## Use instead
```python
loss = criterion(model(x), y)
loss.backward()
```
Use `loss.item()` only for logging, after the backward; keep `no_grad` for
evaluation.

The quick fix undoes the break: `x.detach()` -> `x`, `torch.tensor(x.item())`
-> `x`, `use_reentrant=False`; a `no_grad` / `inference_mode` /
`set_grad_enabled(False)` block is unwrapped, and a `@torch.no_grad()`
decorator dropped, only where nothing else needs them: the block or function
runs nowhere else (one caller, or straight-line code to the backward) and holds
nothing whose result depends on gradients being off (in-place updates of
weights, `.numpy()`, an optimizer step).

## Fix safety
Safe: every fix keeps the graph the backward needs and changes nothing else the program
computes -- `x` instead of `x.detach()` or `torch.tensor(x.item())`, `torch.stack` of the
values instead of a tensor of their `.item()`, `use_reentrant=False`, a `no_grad` block or
decorator removed where nothing else needs it, or, for a helper shared with evaluation,
`no_grad` moved to the evaluation calls (each of them computes what it computed before).
The original raised at the backward, so nothing trained through that value before.

## Fixture line
The backward call that raises.
"""

from __future__ import annotations

import ast

from graphlife.analysis.events import BackwardEvent, InplaceEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.values import TensorVal, TupleVal
from graphlife.findings import FixRecipe, Related, Severity
from graphlife.fixes.proofs.no_grad import no_grad_fixes, note_inplace
from graphlife.recipes import ReplaceText, StackInsteadOfItems

RULE = Rule(
    code="GL104",
    name="backward-without-grad",
    severity=Severity.ERROR,
    doc=RuleDoc(__doc__),
    torch_message="element 0 of tensors does not require grad and does not have a grad_fn",
)


RULE.on(InplaceEvent)(note_inplace)  # the fix's proof needs the writes made with gradients off


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    root = event.root
    first = root.items[0] if isinstance(root, TupleVal) and root.items else root
    if not isinstance(first, TensorVal) or first.requires_grad is not False:
        return
    name = ctx.text(event.root_expr) or "the tensor"
    reason = first.why or "it does not require grad"
    message = f"`{name}` has no graph to backpropagate through: {reason}. Torch raises at this backward."
    related: list[Related] = []
    if first.why_site is not None:
        related.append(Related(ctx.span(first.why_site), "the graph is lost here"))
    stmt = ctx.blame(event.stmt, event.root_expr)
    fixes = _keep_the_graph(ctx, first.why_site)
    if isinstance(first.why_site, ast.stmt):
        # computed while gradients were off: the `no_grad` block or decorator around that statement
        region, fixes = no_grad_fixes(ctx, first.why_site, event.stmt)
        related.extend(region)
    ctx.report(RULE, ctx.span(stmt), message, related=related, fixes=fixes)


def _items_of_a_list(values: ast.expr) -> bool:
    """``[f(s).item() for s in xs]`` or ``[a.item(), b.item()]``: numbers taken out of their graphs."""
    elements = [values.elt] if isinstance(values, ast.ListComp) else values.elts if isinstance(values, ast.List) else []
    return bool(elements) and all(
        isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "item"
        and not e.args and not e.keywords for e in elements)


def _keep_the_graph(ctx: RuleContext, site: ast.AST | None) -> list[FixRecipe]:
    """Undo the break where it is one expression: `x.detach()` -> `x`, `torch.tensor(x.item())` -> `x`,
    `checkpoint(..., use_reentrant=True)` -> `use_reentrant=False`, `torch.tensor([v.item() for ...])` ->
    `torch.stack([v.reshape(()) for ...])`. A `no_grad` block or decorator is
    :mod:`graphlife.fixes.proofs.no_grad`'s: it is removed only where nothing else needs it."""
    if not isinstance(site, ast.Call):
        return []
    func = site.func
    if isinstance(func, ast.Attribute) and func.attr == "detach" and not site.args and not site.keywords:
        return [ReplaceText(title=f"Keep the graph: use `{ctx.text(func.value)}`",
                            span=ctx.span(site), text=ctx.text(func.value))]
    if isinstance(func, ast.Attribute) and func.attr in ("tensor", "as_tensor") and len(site.args) == 1:
        inner = site.args[0]
        if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in ("item", "tolist") and not inner.args):
            return [ReplaceText(title=f"Keep the graph: use `{ctx.text(inner.func.value)}` itself",
                                span=ctx.span(site), text=ctx.text(inner.func.value))]
        if _items_of_a_list(inner) and not site.keywords and ctx.qualified_name(func) == "torch.tensor":
            return [StackInsteadOfItems(title="Keep the graph: `torch.stack` the values instead of their `.item()`",
                                        call=ctx.span(site))]
    for keyword in site.keywords:
        if keyword.arg == "use_reentrant" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
            return [ReplaceText(title="Use `use_reentrant=False` (gradients flow to the parameters)",
                                span=ctx.span(keyword.value), text="False")]
    return []
