"""The same loop, fixed: the training loss is computed with gradients on."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)


def batch_loss(model, inputs, labels):
    logits = model(inputs)
    return F.cross_entropy(logits, labels)


for inputs, labels in [(torch.randn(8, 10), torch.randint(0, 3, (8,))) for _ in range(3)]:
    loss = batch_loss(model, inputs, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
