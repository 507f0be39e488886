"""GL102 seed: sigmoid saves its output; relu_ changes it in place before the backward."""
import torch
from torch import nn

torch.manual_seed(0)


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 4)

    def forward(self, x):
        gate = torch.sigmoid(self.proj(x))
        gate.relu_()  # changes the output sigmoid saved for its backward
        return gate


model = Gate()
batch = torch.randn(5, 6)
gate = model(batch)
loss = gate.pow(2).mean()
loss.backward()  # stop here
print("finished")
