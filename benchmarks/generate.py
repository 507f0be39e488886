"""Generate realistic training files of a given size for the benchmarks.

Each block is a small but complete piece of training code (a module class, a
training function with an optimizer loop, an evaluation loop, a helper) with
distinct names, so the engine does the same work it does on real projects.
"""

from __future__ import annotations

import sys

HEADER = '''import torch
import torch.nn as nn
import torch.nn.functional as F

'''

BLOCK = '''
class Encoder{i}(nn.Module):
    def __init__(self, dim={dim}):
        super().__init__()
        self.proj = nn.Linear(dim, dim * 2)
        self.norm = nn.LayerNorm(dim * 2)
        self.head = nn.Linear(dim * 2, 3)

    def forward(self, x):
        h = F.gelu(self.norm(self.proj(x)))
        return self.head(h)


def make_batches_{i}(n, size, dim={dim}):
    return [(torch.randn(size, dim), torch.randint(0, 3, (size,))) for _ in range(n)]


def train_{i}(epochs=2):
    model = Encoder{i}()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    history = []
    for epoch in range(epochs):
        for x, y in make_batches_{i}(4, 8):
            optimizer.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            history.append(loss.item())
    return model, history


@torch.no_grad()
def evaluate_{i}(model, batches):
    model.eval()
    correct = 0
    for x, y in batches:
        correct += (model(x).argmax(dim=1) == y).sum().item()
    return correct


def main_{i}():
    model, history = train_{i}()
    return evaluate_{i}(model, make_batches_{i}(2, 8))
'''


def generate(lines: int) -> str:
    parts = [HEADER]
    i = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(BLOCK.format(i=i, dim=4 + i % 5))
        i += 1
    calls = "\n".join(f"    main_{k}()" for k in range(i))
    parts.append(f'\n\nif __name__ == "__main__":\n{calls}\n')
    return "".join(parts)


def generate_one_main(lines: int) -> str:
    """The same blocks, run from one ``main()`` that ``if __name__ == "__main__":`` calls."""
    head, _, calls = generate(lines).rpartition('\n\nif __name__ == "__main__":\n')
    return head + "\n\ndef main():\n" + calls + '\n\nif __name__ == "__main__":\n    main()\n'


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
