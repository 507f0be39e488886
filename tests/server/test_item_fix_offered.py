"""GL201 offers `.item()` only for values the engine knows have one element.

RULES.md: "Fix: `.item()` for Python numbers (logging, sums), `.detach()` for tensors."
`.item()` raises on a tensor with more than one element, so it is offered (second,
after the always-valid `.detach()`) only when the stored value is certainly one
element: a full reduction, a loss with its default reduction, arithmetic of those.
"""

from __future__ import annotations

import pytest

from graphlife.checker import check
from graphlife.fixes import compute_fixes

TEMPLATE = """import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(4, 3)
criterion = {criterion}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for step in range(3):
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    out = model(x)
    value = {value}
    history.append(value)
"""


def _titles(criterion: str, value: str) -> list[str]:
    source = TEMPLATE.format(criterion=criterion, value=value)
    findings = [f for f in check(source) if f.code == "GL201"]
    assert findings, "the stored graph must be reported"
    return [fix.title for fix in compute_fixes(findings[0], source)]


@pytest.mark.parametrize("criterion, value", [
    ("nn.CrossEntropyLoss()", "criterion(out, y)"),
    ("nn.CrossEntropyLoss(reduction='sum')", "criterion(out, y)"),
    ("None", "F.cross_entropy(out, y)"),
    ("None", "out.mean()"),
    ("None", "out.pow(2).sum() * 0.5 + F.mse_loss(out, torch.zeros(8, 3))"),
    ("None", "torch.sum(out)"),
])
def test_item_is_offered_for_one_element(criterion: str, value: str) -> None:
    assert _titles(criterion, value) == ["Store `value.detach()`", "Store `value.item()` (a Python number)"]


@pytest.mark.parametrize("criterion, value", [
    ("nn.CrossEntropyLoss(reduction='none')", "criterion(out, y)"),
    ("None", "F.cross_entropy(out, y, reduction='none')"),
    ("None", "out"),
    ("None", "out.sum(0)"),
    ("None", "out.mean(dim=1)"),
    ("None", "out.max(1)[0]"),
    ("None", "out @ out.T"),
])
def test_item_is_not_offered_for_tensors(criterion: str, value: str) -> None:
    assert _titles(criterion, value) == ["Store `value.detach()`"]
