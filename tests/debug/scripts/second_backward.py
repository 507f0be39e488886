"""GL101 seed: two heads share an encoder; the first backward frees the encoder's graph."""
import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
head_a, head_b = nn.Linear(16, 1), nn.Linear(16, 1)
x = torch.randn(4, 8)
features = encoder(x)
loss_a = head_a(features).pow(2).mean()
loss_b = head_b(features).abs().mean()
loss_a.backward()
loss_b.backward()  # stop here
print("finished")
