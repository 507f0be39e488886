"""GL201 + GL101: losses appended with their graphs; every graph is kept alive until
the epoch summary backpropagates through all of them, which the per-step backward
already freed."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.Sigmoid(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
history = {"train": [], "eval": []}
for step in range(6):
    x = torch.randn(16, 10)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    history["train"].append(loss)
    history["eval"].append(model(torch.randn(16, 10)).pow(2).mean())  # never backpropagated
epoch_loss = torch.stack(history["train"]).mean()
epoch_loss.backward()  # stop here
print("finished")
