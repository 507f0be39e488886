"""A fine-tuning loop that reuses the evaluation helper, which runs under `no_grad`.

The loss has no graph, so `loss.backward()` raises.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)


def batch_loss(model, inputs, labels):
    with torch.no_grad():
        logits = model(inputs)
        return F.cross_entropy(logits, labels)


for inputs, labels in [(torch.randn(8, 10), torch.randint(0, 3, (8,))) for _ in range(3)]:
    loss = batch_loss(model, inputs, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
