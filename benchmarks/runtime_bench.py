"""What the run-time tools cost a training loop, against the same loop run plain.

The workload: a training loop on CPU (an MLP, one intra-op thread, a few
milliseconds a step) that keeps no graph across steps, so the leak watch counts
all along and never reports. In one process, blocks of ``--steps`` steps run
plain, under the leak watch as ``graphlife run --watch-graph`` installs it (the
site recorder on until the first count, then counts spaced by the 2% budget),
and under the site recorder (``--sites``); the modes are interleaved, the median
CPU time of ``--repeat`` blocks is kept and given as a ratio to the plain block.
`graphlife run` without options adds nothing to the loop (it only runs the
program and explains an error that escapes). Prints a table and rewrites the
"Run-time tools" section of benchmarks/RESULTS.md (other sections are left as
they are).

    .venv/bin/python benchmarks/runtime_bench.py [--repeat 5] [--steps 500]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from results_file import write_section  # this folder is on the path of a script run from it
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from graphlife.runtime.sites import SiteRecorder  # noqa: E402 - after the path is set
from graphlife.runtime.watch import GraphWatch  # noqa: E402

SECTION = "## Run-time tools (graphlife run)"


def make_loop() -> Callable[[int], None]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(64, 256), torch.randint(0, 10, (64,))) for _ in range(16)]
    losses: list[float] = []

    def loop(steps: int) -> None:
        for step in range(steps):
            x, y = data[step % len(data)]
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())

    return loop


@contextlib.contextmanager
def plain() -> Iterator[None]:
    yield


#: Counts the watch made per block (it counts at the first step, then as the budget allows).
WATCH_COUNTS: list[int] = []


@contextlib.contextmanager
def watched() -> Iterator[None]:
    reports: list[str] = []
    watch = GraphWatch(torch, report=reports.append)  # the defaults of --watch-graph
    watch.install()
    try:
        yield
    finally:
        watch.uninstall()
    assert not reports, reports  # the loop keeps nothing: a report would be a false alarm
    WATCH_COUNTS.append(len(watch.counts))


@contextlib.contextmanager
def sites() -> Iterator[None]:
    recorder = SiteRecorder(torch)
    recorder.start()
    try:
        yield
    finally:
        recorder.stop()


MODES = [
    ("plain loop", plain),
    ("leak watch (`--watch-graph`, 2% budget)", watched),
    ("site recorder (`--sites`)", sites),
]


def measure(repeat: int, steps: int) -> dict[str, float]:
    torch.set_num_threads(1)
    loop = make_loop()
    loop(20)  # warm up
    samples: dict[str, list[float]] = {label: [] for label, _ in MODES}
    for _ in range(repeat):
        for label, mode in MODES:  # interleaved: a burst of load hits every mode alike
            with mode():
                start = time.process_time()
                loop(steps)
                samples[label].append(time.process_time() - start)
    return {label: statistics.median(values) for label, values in samples.items()}


def count_cost() -> float:
    watch = GraphWatch(torch, budget=0.0, report=lambda text: None)
    costs = []
    for _ in range(5):
        start = time.process_time()
        watch.count("benchmark")
        costs.append(time.process_time() - start)
    return statistics.median(costs)


def render(results: dict[str, float], repeat: int, steps: int, count: float) -> str:
    import gc

    base = results[MODES[0][0]]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    counts = statistics.median(WATCH_COUNTS) if WATCH_COUNTS else 0
    lines = [
        SECTION,
        "",
        f"`benchmarks/runtime_bench.py`, one run: median of {repeat} interleaved blocks of {steps} training steps "
        f"per mode in one process; torch {torch.__version__} CPU, one intra-op thread, Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
        f"{load[0]:.2f} at the end (a shared 2-core machine). CPU time of the loop; the ratio is to the plain "
        "block of the same run. The loop keeps no graph, so the watch counts all along and never reports "
        f"(it counted {counts:g} times per block).",
        "",
        "| mode | CPU time | ratio to plain |",
        "| --- | ---: | ---: |",
    ]
    for label, _ in MODES:
        lines.append(f"| {label} | {results[label] * 1000:.0f} ms | {results[label] / base:.3f}x |")
    watch_share = counts * count / base if base else 0.0
    lines += [
        "",
        f"The watch's share expected from its counts: {counts:g} counts x {count * 1000:.1f} ms / "
        f"{base * 1000:.0f} ms = {watch_share:.1%} of the plain loop (the measured ratio also carries the noise "
        "of a shared machine).",
        "",
        f"One count of the watch (a scan of the collector's {len(gc.get_objects()):,} objects in a process that "
        f"imported torch, and of the live graphs): {count * 1000:.1f} ms CPU. With the default budget the watch "
        f"counts at the first optimizer step, then at most once every {count / 0.02:.1f} s (the count's cost / 2%), "
        "so its share of a longer run tends to the budget; `--watch-budget 0` counts at every step, which costs "
        "that much per step. `graphlife run` without options adds nothing to the loop.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    results = measure(args.repeat, args.steps)
    text = render(results, args.repeat, args.steps, count_cost())
    print(text)
    if not args.no_write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
