"""What `graphlife run` and its options cost a training loop, against the plain `python` run.

The workload: a training loop on CPU (an MLP, one intra-op thread, a few
milliseconds a step) that keeps no graph across steps, so the leak watch counts
for the whole run and never reports. Each mode runs the same script in a fresh
process; the script times its own loop (CPU time of the process, and wall time),
so interpreter and torch start-up are left out. Modes are interleaved, the median
of ``--repeat`` runs is kept, and each is given as a ratio to the plain run of
the same benchmark run. Prints a table and rewrites the "Run-time tools" section
of benchmarks/RESULTS.md (other sections are left as they are).

    .venv/bin/python benchmarks/runtime_bench.py [--repeat 5] [--steps 400]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
SECTION = "## Run-time tools (graphlife run)"

WORKLOAD = textwrap.dedent("""\
    import json, sys, time
    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    steps = int(sys.argv[1])
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(64, 256), torch.randint(0, 10, (64,))) for _ in range(16)]
    losses = []
    cpu, wall = time.process_time(), time.perf_counter()
    for step in range(steps):
        x, y = data[step % len(data)]
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}))
    """)

#: (label, graphlife run options; None: plain python)
MODES: list[tuple[str, list[str] | None]] = [
    ("python (plain)", None),
    ("graphlife run", []),
    ("graphlife run --watch-graph (2% budget, the default)", ["--watch-graph"]),
    ("graphlife run --sites", ["--sites"]),
]


def run_once(script: Path, options: list[str] | None, steps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
    command = [sys.executable, str(script), str(steps)]
    if options is not None:
        command = [sys.executable, "-m", "graphlife", "run", *options, str(script), str(steps)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(repeat: int, steps: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train.py"
        script.write_text(WORKLOAD)
        samples: dict[str, list[dict]] = {label: [] for label, _ in MODES}
        for _ in range(repeat):
            for label, options in MODES:  # interleaved: a burst of load hits every mode alike
                samples[label].append(run_once(script, options, steps))
    return {label: {key: statistics.median(s[key] for s in runs) for key in ("cpu", "wall")}
            for label, runs in samples.items()}


def count_cost(repeat: int) -> float:
    """CPU seconds of one count of the watch in a process that imported torch (median)."""
    import torch  # noqa: PLC0415 - the benchmark's own process, for the count alone

    sys.path.insert(0, str(ROOT / "server"))
    from graphlife.runtime.watch import GraphWatch  # noqa: PLC0415

    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    loss = model(torch.randn(64, 256)).sum()  # one live graph, as at an optimizer step
    watch = GraphWatch(torch, budget=0.0, report=lambda text: None)
    costs = []
    for _ in range(max(repeat, 3)):
        start = time.process_time()
        watch.count("benchmark")
        costs.append(time.process_time() - start)
    del loss
    return statistics.median(costs)


def render(results: dict[str, dict[str, float]], repeat: int, steps: int, count: float) -> str:
    import torch  # noqa: PLC0415 - only its version, for the table's heading

    base = results[MODES[0][0]]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    lines = [
        SECTION,
        "",
        f"`benchmarks/runtime_bench.py`, median of {repeat} interleaved runs of {steps} steps; torch "
        f"{torch.__version__} CPU, one intra-op thread, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load[0]:.2f} at the end (a shared "
        "2-core machine). The loop's own CPU and wall time (start-up excluded); ratios to the plain run of the "
        "same benchmark run. The loop keeps no graph, so the watch counts all along and never reports.",
        "",
        "| mode | CPU time | CPU / plain | wall time | wall / plain |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for label, _ in MODES:
        r = results[label]
        lines.append(f"| {label} | {r['cpu'] * 1000:.0f} ms | {r['cpu'] / base['cpu']:.3f}x | "
                     f"{r['wall'] * 1000:.0f} ms | {r['wall'] / base['wall']:.3f}x |")
    import gc  # noqa: PLC0415

    lines += [
        "",
        f"One count of the watch (a scan of the collector's {len(gc.get_objects()):,} objects in a process that "
        f"imported torch, and of the live graphs): {count * 1000:.1f} ms CPU. With the default budget the watch "
        f"counts at the first optimizer step, then at most once every {count / 0.02:.1f} s (the count's cost / 2%); "
        "`--watch-budget 0` counts at every step, which costs that much per step.",
    ]
    return "\n".join(lines) + "\n"


def write_section(text: str) -> None:
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    start = old.find(SECTION)
    if start == -1:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        end = old.find("\n## ", start + len(SECTION))
        new = old[:start] + text + (old[end + 1:] if end != -1 else "")
    RESULTS.write_text(new if new.endswith("\n") else new + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    results = measure(args.repeat, args.steps)
    text = render(results, args.repeat, args.steps, count_cost(args.repeat))
    print(text)
    if not args.no_write:
        write_section(text)


if __name__ == "__main__":
    main()
