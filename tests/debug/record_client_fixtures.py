"""Records the probe output the client's node tests read (client/test/debug/fixtures/).

Run it after changing the snapshot shape: ``python tests/debug/record_client_fixtures.py``.
``test_client_fixtures.py`` fails when the recorded keys drift from what the probe emits.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = runpy.run_path(str(ROOT / "server" / "graphlife" / "debug" / "probe.py"))
FIXTURES = ROOT / "client" / "test" / "debug" / "fixtures"


def training_frame() -> tuple[dict, str]:
    """A stop inside a training loop with every kind of problem, and the error torch then raised."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    lstm, head = nn.LSTM(3, 4), nn.Linear(4, 1)
    hidden = (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))
    losses = []
    for step in range(3):
        out, hidden = lstm(torch.randn(5, 2, 3), hidden)
        loss = head(out).pow(2).mean()
        losses.append(loss)
        if step == 0:
            loss.backward()
    gate = torch.sigmoid(head(out))
    gate.relu_()
    penalty = gate.sum()
    try:
        penalty.backward()
    except RuntimeError as exc:
        message = str(exc)
    namespace = {"lstm": lstm, "head": head, "hidden": hidden, "losses": losses, "out": out, "loss": loss,
                 "gate": gate, "penalty": penalty, "step": 2}
    return namespace, message


def record() -> dict[str, dict]:
    namespace, message = training_frame()
    snap = PROBE["snapshot"](namespace, exception=message)
    graph = PROBE["graph"](namespace, "loss")
    return {"snapshot.json": snap, "graph.json": graph}


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, data in record().items():
        (FIXTURES / name).write_text(json.dumps(data, indent=1, default=str) + "\n")
        print(f"wrote {FIXTURES / name}")


if __name__ == "__main__":
    main()
