"""GL101 seed: the LSTM hidden state is carried across batches without detach."""
import torch
from torch import nn

torch.manual_seed(0)
lstm = nn.LSTM(3, 8)
head = nn.Linear(8, 1)
opt = torch.optim.SGD(list(lstm.parameters()) + list(head.parameters()), lr=0.1)
hidden = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
for step in range(3):
    inputs = torch.randn(5, 2, 3)
    out, hidden = lstm(inputs, hidden)
    loss = head(out).pow(2).mean()
    opt.zero_grad()
    if step == 1:
        pass  # stop here
    loss.backward()
    opt.step()
print("finished")
