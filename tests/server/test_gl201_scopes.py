"""GL201 judges where a stored graph lives and whether a backward consumes it.

A store piles graphs up only across the loops its place outlives, and it is a leak only
when one of them runs training or evaluation steps and no backward consumes the graphs
(RULES.md, GL201). These shapes come from public training code; the clean ones were
false warnings (checked under torch: the live graph nodes stay flat), the flagged ones
keep growing. Each ``# flag`` line must get a GL201 finding, and no other line may.
"""

from __future__ import annotations

import textwrap

import pytest

from graphlife.checker import check

MODEL = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.fc = nn.Linear(12, 2)

    def forward(self, x):
        pooled = []
        for layer in self.layers:
            pooled.append(torch.tanh(layer(x)))
        return self.fc(torch.cat(pooled, 1))
"""

CLEAN = {
    # A method analyzed alone (nothing in the file calls it): the list is local, the
    # function runs no backward, the unknown caller backpropagates the output.
    "forward_alone_local_list": MODEL,
    # The same forward inlined into a training loop; `torch.cat(list, 1)` loses the
    # edges in the engine, the data flow still reaches the step's backward.
    "forward_inlined_into_training": MODEL + """
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    net(torch.randn(2, 4)).sum().backward()
    opt.step()
""",
    # ... and called once more after training, without no_grad: the list dies with the call.
    "forward_inference_call_after_training": MODEL + """
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    net(torch.randn(2, 4)).sum().backward()
    opt.step()
prediction = net(torch.randn(1, 4)).argmax(-1)
""",
    # Per-layer attention maps returned next to the output by a forward analyzed alone.
    "attention_maps_returned_alone": """\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.MultiheadAttention(8, 2, batch_first=True) for _ in range(2)])

    def forward(self, x):
        attentions = []
        for layer in self.layers:
            x, attn = layer(x, x, x)
            attentions.append(attn)
        return x, attentions
""",
    # A loss summed over decoder time steps from the number 0, backpropagated right after.
    "loss_summed_then_backward": """\
import torch
import torch.nn as nn

model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, t = torch.randn(5, 2, 4), torch.randint(0, 3, (5, 2))
for epoch in range(3):
    opt.zero_grad()
    loss = 0
    for i in range(0, len(t)):
        loss += criterion(model(x[i]), t[i])
    (loss / len(t)).backward()
    opt.step()
""",
    # A loss module sums its terms into a local total and returns it; the caller backpropagates.
    "loss_module_sum_returned": """\
import torch
import torch.nn as nn


class PairLoss(nn.Module):
    def forward(self, a, b):
        total = 0
        for x in a.chunk(2):
            for y in b.chunk(2):
                total += (x - y).pow(2).mean()
        return total


model = nn.Linear(4, 4)
loss_fn = PairLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = loss_fn(model(torch.randn(4, 4)), torch.randn(4, 4))
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
    # Episode lists local to a function, consumed by the backward of the next call.
    "episode_lists_consumed": """\
import torch
import torch.nn as nn

policy = nn.Linear(4, 2)
opt = torch.optim.Adam(policy.parameters())


def run_episode():
    values = []
    done = False
    while not done:
        values.append(policy(torch.randn(4))[1:])
        done = torch.rand(()).item() < 0.3
    return values


def finish_episode(values):
    value_loss = 0
    for value in values:
        value_loss = value_loss + (value - 1).pow(2).sum()
    opt.zero_grad()
    value_loss.backward()
    opt.step()


for episode in range(3):
    finish_episode(run_episode())
""",
}

FLAGGED = {
    # An evaluation helper called each epoch: the loop runs batches, nothing backpropagates.
    "evaluate_each_epoch": """\
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train = [(torch.randn(5, 4), torch.randn(5, 1)) for _ in range(3)]
val = [(torch.randn(5, 4), torch.randn(5, 1)) for _ in range(3)]


def evaluate(model, batches):
    outs = []
    for x, _ in batches:
        outs.append(model(x))  # flag
    return torch.cat(outs)


for epoch in range(2):
    for x, y in train:
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    preds = evaluate(model, val)
    print(preds.mean().item())
""",
    # A module method that runs the whole model over batches (it calls itself in the loop).
    "predict_method_over_batches": """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)

    def predict(self, X):
        outs = []
        for i in range(0, len(X), 4):
            outs.append(self(X[i:i + 4]))  # flag
        return torch.cat(outs)


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    net(torch.randn(4, 4)).sum().backward()
    opt.step()
print(net.predict(torch.randn(16, 4)).mean().item())
""",
    # A validation loss summed from 0 and only logged; the training backward after it
    # (in a loop of its own) never reads it.
    "validation_sum_then_training": """\
import torch
import torch.nn as nn

model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(3)]
for epoch in range(3):
    val_loss = 0
    for x, y in data:
        val_loss += criterion(model(x), y)  # flag
    for x, y in data:
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
    print(val_loss.item())
""",
    # A summed loss that nothing backpropagates.
    "loss_summed_never_backpropagated": """\
import torch
import torch.nn as nn

model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()
val = [(torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(3)]
val_loss = 0
for x, y in val:
    val_loss += criterion(model(x), y)  # flag
print(val_loss.item() / len(val))
""",
    # A layer loop in forward that appends to a module-level list: it outlives every step.
    "layer_loop_into_global_list": """\
import torch
import torch.nn as nn

ACTIVATIONS = []


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
            ACTIVATIONS.append(x)  # flag
        return x


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    net(torch.randn(2, 4)).sum().backward()
    opt.step()
""",
    # ... or to a list the module made in `__init__`, also when the method is analyzed alone.
    "layer_loop_into_self_list_alone": """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.activations = []

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
            self.activations.append(x)  # flag
        return x
""",
    # A forward's local list escapes into a list the training loop keeps.
    "returned_list_kept_by_the_loop": """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        hiddens = []
        for layer in self.layers:
            x = torch.tanh(layer(x))
            hiddens.append(x)
        return x, hiddens


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
history = []
for step in range(3):
    opt.zero_grad()
    out, hiddens = net(torch.randn(2, 4))
    out.sum().backward()
    opt.step()
    history.append(hiddens)  # flag
""",
    # Probe features collected each epoch in a list the epoch rebuilds: the loop runs
    # the probe batches and no backward reads the list (the step's backward is another loss).
    "probe_features_each_epoch": """\
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
probes = [torch.randn(2, 4) for _ in range(3)]
for epoch in range(3):
    feats = []
    for p in probes:
        feats.append(model(p))  # flag
    x, y = torch.randn(5, 4), torch.randn(5, 1)
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    print(len(feats))
""",
}


def _gl201_lines(source: str) -> list[int]:
    return sorted({f.span.line for f in check(source) if f.code == "GL201"})


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_graphs_that_die_with_the_step_are_not_reported(name: str) -> None:
    assert _gl201_lines(CLEAN[name]) == []


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_graphs_that_outlive_the_step_are_reported(name: str) -> None:
    source = FLAGGED[name]
    marked = [number for number, line in enumerate(source.splitlines(), start=1) if line.endswith("# flag")]
    assert _gl201_lines(source) == marked


def test_summed_loss_warns_without_a_backward_and_not_with_one() -> None:
    """The same inner `loss +=` loop: clean when the step's backward reads the sum, a warning when it does not."""
    body = textwrap.dedent("""\
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 3)
        criterion = nn.CrossEntropyLoss()
        x, t = torch.randn(5, 2, 4), torch.randint(0, 3, (5, 2))
        loss = 0
        for i in range(0, len(t)):
            loss += criterion(model(x[i]), t[i])
        """)
    assert _gl201_lines(body + "loss.backward()\n") == []
    findings = [f for f in check(body + "print(float(loss))\n") if f.code == "GL201"]
    assert [(f.span.line, f.severity.value) for f in findings] == [(9, "warning")]
