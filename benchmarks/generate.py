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


FANOUT_HEADER = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    def __init__(self, width=8, depth=2, lr=1e-3, clip=1.0, stage=2):
        self.width = width
        self.depth = depth
        self.lr = lr
        self.clip = clip
        self.stage = stage


class Model(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.body = nn.Linear(width, width)
        self.head = nn.Linear(width, 2)

    def forward(self, x):
        return self.head(F.relu(self.body(x)))


class Engine:
    def __init__(self, config):
        self.config = config
        self.model = Model(config.width)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=config.lr)
        self.steps = 0
'''

FANOUT_LEVEL = '''
    def setting_{k}(self, name="width"):
        stage = self.config.stage
        if stage > {k}:
            width = self.setting_{n}(name)
        else:
            width = self.setting_{n}("depth")
        depth = self.setting_{n}(name)
        clip = self.setting_{n}("clip")
        return max(width, depth, clip, self.config.lr)
'''

FANOUT_LAST = '''
    def setting_{k}(self, name="width"):
        if name == "depth":
            return self.config.depth
        return self.config.width
'''

FANOUT_TRAIN = '''
    def train_step(self, x, y):
        self.optimizer.zero_grad()
        scale = self.setting_0()
        loss = F.cross_entropy(self.model(x), y) * scale
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip)
        self.optimizer.step()
        self.steps += 1
        return loss.item()


def main():
    engine = Engine(Config())
    for epoch in range(2):
        for step in range(4):
            x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
            engine.train_step(x, y)
    return engine.steps


if __name__ == "__main__":
    main()
'''


def generate_fanout(levels: int) -> str:
    """A training engine whose settings getters fan out: ``setting_k`` calls ``setting_{k+1}``
    three times (the shape of a large engine class's getters, each asking the next ones), and
    the training step asks ``setting_0``. Inlining every call costs 3**levels (up to the
    inlining depth); ``levels=9`` is about 140 lines."""
    parts = [FANOUT_HEADER]
    for k in range(levels):
        parts.append(FANOUT_LEVEL.format(k=k, n=k + 1))
    parts.append(FANOUT_LAST.format(k=levels))
    parts.append(FANOUT_TRAIN)
    return "".join(parts)


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
