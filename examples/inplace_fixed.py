"""The same gated block, fixed: the clip is out of place.

`torch.sigmoid` saves its output for backward; `gate.clamp_(...)` changes that
output in place, so the backward raises the in-place version error.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class GatedBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.value = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x):
        gate = torch.sigmoid(self.gate(x))
        gate = gate.clamp(0.05, 0.95)
        return gate * self.value(x)


model = nn.Sequential(GatedBlock(), nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for x, y in [(torch.randn(16, 8), torch.randn(16, 1)) for _ in range(3)]:
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
