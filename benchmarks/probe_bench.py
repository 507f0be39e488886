"""How much a debugger stop pays for the Autograd view: the probe on a big frame.

The frame: 200 tensors (parameters of a model, intermediates of one forward, a
list of per-step losses) and a 1,000+-node graph (a deep chain of Linear+tanh
blocks). Measured, median of several runs: loading probe.py with runpy (what the
client does on every stop), ``snapshot_json`` on the frame, ``graph_json`` of the
deep graph (what "Draw Autograd Graph" costs), and, as a yardstick, the forward
pass that built the graph. Prints a table and rewrites the "Debug probe" section
of benchmarks/RESULTS.md (other sections are left as they are).

    .venv/bin/python benchmarks/probe_bench.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import platform
import runpy
import statistics
import time
from pathlib import Path

import torch
from results_file import RESULTS, write_section  # this folder is on the path of a script run from it
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
PROBE_PATH = ROOT / "server" / "graphlife" / "debug" / "probe.py"
SECTION = "## Debug probe"


def build_frame(depth: int = 500) -> tuple[dict, float]:
    """A namespace like a stopped training step; and the seconds its forward took."""
    torch.manual_seed(0)
    block = nn.Linear(16, 16)
    start = time.process_time()
    x = torch.randn(8, 16)
    activations = []
    for _ in range(depth):  # AddmmBackward0 + TanhBackward0 (+ TBackward0) per block
        x = torch.tanh(block(x))
        activations.append(x)
    loss = x.pow(2).mean()
    forward = time.process_time() - start
    namespace: dict = {"block": block, "loss": loss, "x": x}
    # 200 tensors in all: intermediates by name, in a list, and per-step losses in a dict.
    for i in range(0, 80):
        namespace[f"act_{i}"] = activations[i * 5]
    namespace["history"] = {"losses": [a.sum() for a in activations[-60:]]}
    namespace["batch"] = [torch.randn(8, 16) for _ in range(58)]
    return namespace, forward


def median_seconds(fn, repeat: int) -> float:
    """Median CPU time of this process (the probe is single-threaded; on a shared
    machine wall time mostly measures the neighbours)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def run(repeat: int) -> dict:
    namespace, forward = build_frame()
    probe = runpy.run_path(str(PROBE_PATH))
    load = median_seconds(lambda: runpy.run_path(str(PROBE_PATH)), repeat)
    text = probe["snapshot_json"](namespace)
    snap = json.loads(text)
    snapshot_s = median_seconds(lambda: probe["snapshot_json"](namespace), repeat)
    graph_text = probe["graph_json"](namespace, "loss")
    graph_s = median_seconds(lambda: probe["graph_json"](namespace, "loss"), repeat)
    loss_entry = next(t for t in snap["tensors"] if t["name"] == "loss")
    return {
        "tensors": len(snap["tensors"]),
        "graph_nodes": loss_entry["graph"]["nodes"],
        "truncated": snap["truncated"],
        "json_kib": len(text) / 1024,
        "graph_json_kib": len(graph_text) / 1024,
        "load_ms": load * 1000,
        "snapshot_ms": snapshot_s * 1000,
        "graph_ms": graph_s * 1000,
        "forward_ms": forward * 1000,
        "ratio_forward": snapshot_s / forward,
        "us_per_node_tensor": snapshot_s * 1e6 / max(1, len(snap["tensors"])),
    }


def report(r: dict, repeat: int) -> str:
    return "\n".join([
        SECTION,
        "",
        f"`benchmarks/probe_bench.py`, median of {repeat}; torch {torch.__version__} CPU, Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d', time.gmtime())} (shared 2-core machine, "
        "other jobs running). Times are CPU time of the process, median.",
        "",
        f"Frame: {r['tensors']} tensors, the loss's graph {r['graph_nodes']} nodes"
        f"{' (a bound was hit)' if r['truncated'] else ''}.",
        "",
        "| what | CPU time | note |",
        "|---|---|---|",
        f"| load probe.py (`runpy.run_path`, every stop) | {r['load_ms']:.1f} ms | |",
        f"| `snapshot_json(frame)` | {r['snapshot_ms']:.1f} ms | {r['json_kib']:.0f} KiB of JSON, "
        f"{r['us_per_node_tensor']:.0f} µs per tensor |",
        f"| `graph_json(frame, 'loss')` (draw) | {r['graph_ms']:.1f} ms | {r['graph_json_kib']:.0f} KiB, "
        "first 300 nodes drawn |",
        f"| the forward pass that built the graph | {r['forward_ms']:.1f} ms | yardstick |",
        f"| snapshot / forward | {r['ratio_forward']:.2f}x | |",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    result = run(args.repeat)
    text = report(result, args.repeat)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
        print(f"(wrote the section to {RESULTS.relative_to(ROOT)})")


if __name__ == "__main__":
    main()
