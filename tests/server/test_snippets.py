"""The snippets in snippets/python.json are the correct patterns graphlife recommends.

Each snippet body, with its placeholders expanded to their defaults (what a user
gets by pressing Tab through it), must

- pass ``graphlife check`` clean, alone and inside a small runnable program, and
- run under torch (CPU) inside that program, which then checks the snippet did
  what it claims (parameters moved, the hidden state was cut, no graph kept, ...).

A snippet without a harness here fails the test, so a new snippet gets one.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from graphlife.checker import check

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = json.loads((ROOT / "snippets" / "python.json").read_text(encoding="utf-8"))

# Placeholder syntax of VS Code snippets (only what our snippets may use).
_DEFAULT = re.compile(r"\$\{\d+:([^${}]*)\}")  # ${1:default} without nested placeholders
_CHOICE = re.compile(r"\$\{\d+\|([^|,]*)[^|]*\|\}")  # ${1|first,second|}
_TABSTOP = re.compile(r"\$\{\d+\}|\$\d+")  # $0, $1, ${2}


_ESCAPES = {"\\\\": "\x00", "\\$": "\x01", "\\}": "\x02"}  # \\ \$ \} stand for themselves


def expand(body: list[str] | str) -> str:
    """The text a user gets when every placeholder keeps its default."""
    text = "\n".join(body) if isinstance(body, list) else body
    for escaped, stand_in in _ESCAPES.items():
        text = text.replace(escaped, stand_in)
    previous = None
    while previous != text:  # innermost first, so nested defaults expand too
        previous = text
        text = _DEFAULT.sub(lambda m: m.group(1), text)
    text = _CHOICE.sub(lambda m: m.group(1), text)
    text = _TABSTOP.sub("", text)
    if "$" in text:
        raise AssertionError(f"unexpanded snippet syntax left in:\n{text}")
    for escaped, stand_in in _ESCAPES.items():
        text = text.replace(stand_in, escaped[1:])
    return text.replace("\t", "    ")


def test_expand_handles_the_snippet_syntax():
    assert expand(["${1:model}(${2:x})$0"]) == "model(x)"
    assert expand(["${1:a ${2:b}}", "\t${3|sum,mean|}", "\\$5"]) == "a b\n    sum\n$5"
    with pytest.raises(AssertionError):
        expand(["${1:x"])


# name -> (setup before the snippet, checks after it). Each program is seeded and small.
HARNESS: dict[str, tuple[str, str]] = {
    "graphlife: training step": (
        """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        criterion = nn.MSELoss()
        loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
        before = [p.detach().clone() for p in model.parameters()]
        """,
        """
        assert all(
            not torch.equal(b, p) for b, p in zip(before, model.parameters())
        ), "the step did not move the parameters"
        assert loss.grad_fn is not None
        """,
    ),
    "graphlife: gradient accumulation": (
        """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        criterion = nn.MSELoss()
        accumulation_steps = 2
        loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(4)]
        # What the first step must do: SGD on the mean gradient of the first two micro-batches.
        reference = nn.Linear(4, 1)
        reference.load_state_dict(model.state_dict())
        reference_loss = (
            criterion(reference(loader[0][0]), loader[0][1]) + criterion(reference(loader[1][0]), loader[1][1])
        ) / 2
        reference_loss.backward()
        expected = [p.detach() - 0.1 * p.grad for p in reference.parameters()]
        snapshots = []
        sgd_step = optimizer.step
        def recording_step():
            sgd_step()
            snapshots.append([p.detach().clone() for p in model.parameters()])
        optimizer.step = recording_step
        """,
        """
        assert len(snapshots) == len(loader) // accumulation_steps
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(snapshots[0], expected)), "not the mean gradient"
        assert all(p.grad is None for p in model.parameters()), "gradients must be zeroed after the last step"
        """,
    ),
    "graphlife: GAN step": (
        """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        generator = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 4))
        discriminator = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
        g_optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
        d_optimizer = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
        criterion = nn.BCEWithLogitsLoss()
        noise = torch.randn(16, 2)
        real = torch.randn(16, 4)
        g_before = [p.detach().clone() for p in generator.parameters()]
        d_before = [p.detach().clone() for p in discriminator.parameters()]
        """,
        """
        assert all(not torch.equal(b, p) for b, p in zip(g_before, generator.parameters())), "generator not updated"
        assert all(
            not torch.equal(b, p) for b, p in zip(d_before, discriminator.parameters())
        ), "discriminator not updated"
        """,
    ),
    "graphlife: truncated BPTT": (
        """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        rnn = nn.LSTM(3, 5, batch_first=True)  # an LSTM: the hidden state is a tuple (h, c)
        head = nn.Linear(5, 1)
        optimizer = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)
        criterion = nn.MSELoss()
        loader = [(torch.randn(2, 4, 3), torch.randn(2, 4, 1)) for _ in range(4)]
        """,
        """
        assert isinstance(hidden, tuple) and len(hidden) == 2
        # The carried state still has this batch's graph; the next loop turn would detach it.
        assert all(h.grad_fn is not None for h in hidden)
        # Same loop with a GRU: the hidden state is one tensor and the snippet detaches it too.
        rnn = nn.GRU(3, 5, batch_first=True)
        optimizer = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)
        hidden = None
        for inputs, targets in loader:
            if hidden is not None:
                hidden = tuple(h.detach() for h in hidden) if isinstance(hidden, tuple) else hidden.detach()
            optimizer.zero_grad(set_to_none=True)
            outputs, hidden = rnn(inputs, hidden)
            loss = criterion(head(outputs), targets)
            loss.backward()
            optimizer.step()
        assert isinstance(hidden, torch.Tensor)
        """,
    ),
    "graphlife: WGAN-GP gradient penalty": (
        """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        critic = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        generator = nn.Linear(2, 4)
        critic_optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
        real = torch.randn(16, 4)
        fake = generator(torch.randn(16, 2))
        before = [p.detach().clone() for p in critic.parameters()]
        """,
        """
        assert gradient_penalty.requires_grad, "the penalty must be differentiable (create_graph=True)"
        # (The last bias gets no gradient from a WGAN loss: it cancels between real and fake.)
        assert not torch.equal(before[0], critic[0].weight), "the critic was not updated"
        assert all(p.grad is None for p in generator.parameters()), "the critic step must not reach the generator"
        """,
    ),
    "graphlife: mixed precision (torch.amp)": (
        """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        device = torch.device("cpu")
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        criterion = nn.MSELoss()
        loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
        before = [p.detach().clone() for p in model.parameters()]
        """,
        """
        assert scaler.is_enabled()
        assert all(
            not torch.equal(b, p) for b, p in zip(before, model.parameters())
        ), "the scaled step did not move the parameters"
        """,
    ),
    "graphlife: activation checkpointing": (
        """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        block = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
        inputs = torch.randn(3, 4)  # does not require grad: the reentrant mode would lose the gradients
        """,
        """
        hidden.sum().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in block.parameters())
        """,
    ),
    "graphlife: custom autograd.Function": (
        """
        import torch
        torch.manual_seed(0)
        """,
        """
        x = torch.randn(3, 4, dtype=torch.double, requires_grad=True)
        w = torch.randn(4, dtype=torch.double, requires_grad=True)
        assert torch.autograd.gradcheck(ScaleBy.apply, (x, w))
        out = ScaleBy.apply(x, w)
        out.sum().backward()
        assert torch.allclose(w.grad, x.detach().sum(0))
        """,
    ),
    "graphlife: validation loop": (
        """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        criterion = nn.MSELoss()
        val_loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
        """,
        """
        assert isinstance(val_loss, float) and val_loss > 0
        assert model.training, "the loop must put the model back in training mode"
        """,
    ),
}


def program(name: str) -> str:
    setup, checks = HARNESS[name]
    parts = [textwrap.dedent(setup).strip(), expand(SNIPPETS[name]["body"]), textwrap.dedent(checks).strip(), ""]
    return "\n".join(parts)


def describe(findings) -> str:
    return "\n".join(f"{f.code} line {f.span.line}: {f.message}" for f in findings)


def test_every_snippet_has_a_harness_and_the_manifest_contributes_the_file():
    assert set(SNIPPETS) == set(HARNESS), "add a harness for each new snippet (and drop the ones of removed snippets)"
    manifest = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    assert {"language": "python", "path": "./snippets/python.json"} in manifest["contributes"]["snippets"]
    prefixes = [p for s in SNIPPETS.values() for p in s["prefix"]]
    assert len(prefixes) == len(set(prefixes)), "two snippets share a prefix"
    assert all(s["description"] for s in SNIPPETS.values())


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_body_passes_graphlife_check(name):
    body = expand(SNIPPETS[name]["body"])
    compile(body, name, "exec")
    findings = check(body, f"{name}.py")
    assert not findings, f"{name} (body alone):\n{describe(findings)}"
    findings = check(program(name), f"{name}.py")
    assert not findings, f"{name} (in its harness):\n{describe(findings)}\n---\n{program(name)}"


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_runs_under_torch(name):
    pytest.importorskip("torch")
    source = program(name)
    exec(compile(source, f"<snippet {name}>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the repository's own snippets
