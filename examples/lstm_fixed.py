"""The same language model, fixed: truncated BPTT detaches the carried state each batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class CharLM(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens, hidden=None):
        out, hidden = self.lstm(self.embed(tokens), hidden)
        return self.head(out), hidden


model = CharLM()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
stream = torch.randint(0, 20, (4, 33))
hidden = None
for start in range(0, 32, 8):
    if hidden is not None:
        hidden = tuple(t.detach() for t in hidden)
    inputs, targets = stream[:, start:start + 8], stream[:, start + 1:start + 9]
    logits, hidden = model(inputs, hidden)
    loss = F.cross_entropy(logits.reshape(-1, 20), targets.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
