"""Training files whose cost for the engine grows with their shape, not their length.

The engine inlines a call that is given a tensor with a graph into its caller (up to
a depth), and runs a loop's body twice (up to a nesting depth). Two shapes stress
that, at a few sizes each, so that a benchmark can show whether its cost grows
linearly with the size or multiplies with it:

- *fan-out*: ``level_k`` calls ``level_{k-1}`` three times, threading a tensor with
  a graph through each call; the training loop calls the top level. Fully inlined,
  depth ``d`` runs ``3**d`` leaf calls for ``d + 1`` small functions.
- *nested loops*: ``d`` loops one inside the other around one training step.

``python benchmarks/shapes.py fanout 4`` prints one file.
"""

from __future__ import annotations

import sys

HEADER = '''import torch
import torch.nn as nn

torch.manual_seed(0)

'''

LEAF = '''
def level_0(h, scale):
    return torch.tanh(h) * scale
'''

LEVEL = '''

def level_{k}(h, scale):
    h = level_{j}(h, scale)
    h = level_{j}(h, scale)
    h = level_{j}(h, scale)
    return h
'''

TRAIN = '''

model = nn.Linear(8, 8)
scale = nn.Parameter(torch.ones(8))
optimizer = torch.optim.SGD([*model.parameters(), scale], lr=0.1)
for step in range(3):
    x = torch.randn(4, 8)
    optimizer.zero_grad()
    loss = {top}(model(x), scale).sum()
    loss.backward()
    optimizer.step()
'''


def generate_fanout(depth: int) -> str:
    """``depth + 1`` functions, each level calling the one below three times."""
    levels = "".join(LEVEL.format(k=k, j=k - 1) for k in range(1, depth + 1))
    return HEADER + LEAF + levels + TRAIN.format(top=f"level_{depth}")


def generate_nested_loops(depth: int) -> str:
    """One training step inside ``depth`` nested loops of two iterations each."""
    lines = [HEADER.rstrip("\n"), "", "model = nn.Linear(8, 2)",
             "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)"]
    indent = ""
    for level in range(depth):
        lines.append(f"{indent}for i{level} in range(2):")
        indent += "    "
    lines += [
        f"{indent}x = torch.randn(4, 8)",
        f"{indent}optimizer.zero_grad()",
        f"{indent}loss = model(x).pow(2).mean()",
        f"{indent}loss.backward()",
        f"{indent}optimizer.step()",
    ]
    return "\n".join(lines) + "\n"


SHAPES = {"fanout": generate_fanout, "nested-loops": generate_nested_loops}


if __name__ == "__main__":
    sys.stdout.write(SHAPES[sys.argv[1]](int(sys.argv[2])))
