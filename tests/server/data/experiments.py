"""Independent experiments that the module body runs one after the other: each call is
analyzed apart (graphlife.analysis.isolation) and replayed by the language server while
its code is unchanged. Used by test_isolation.py and test_incremental.py; torch raises
at the last call (GL101)."""

import torch
import torch.nn as nn

EPOCHS = 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def evaluate_with_grad():
    model = Net()
    model.eval()
    scores = []
    for _ in range(3):
        scores.append(model(torch.randn(2, 4)).sum().item())
    return sum(scores)


def keep_retained():
    model = Net()
    loss = model(torch.randn(3, 4)).sum()
    loss.backward(retain_graph=True)
    return 0


def store_losses(epochs=EPOCHS):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = model(torch.randn(4, 4)).sum()
        loss.backward()
        optimizer.step()
        history.append(loss)
    return len(history)


def backward_twice():
    model = Net()
    loss = model(torch.randn(8, 4)).sum()
    loss.backward()
    loss.backward()


if __name__ == "__main__":
    evaluate_with_grad()
    keep_retained()
    store_losses()
    store_losses(3)
    backward_twice()
