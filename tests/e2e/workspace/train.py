"""A small training script with two graph-lifetime bugs for the end-to-end test.

Line numbers matter: tests/e2e/run.mjs expects GL101 on the second
`loss.backward()` and GL103 on the manual `w -= ...` update.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]

for inputs, targets in batches:
    optimizer.zero_grad()
    loss = ((model(inputs) - targets) ** 2).mean()
    loss.backward()
    loss.backward()
    optimizer.step()

w = torch.zeros(4, 1, requires_grad=True)
lr = 0.05
for inputs, targets in batches:
    loss = ((inputs @ w - targets) ** 2).mean()
    loss.backward()
    w -= lr * w.grad
    w.grad = None
