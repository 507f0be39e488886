"""Speed of `graphlife check` against its floor (`ast.parse`) and against TorchFix, in one run.

Usage: `python benchmarks/bench_check.py [--torchfix PATH_TO_torchfix]` (or `make bench`).
Writes the ratios to `benchmarks/RESULTS.md` (section "Checker"). Ratios, not
seconds, are what to compare: the machine's load changes seconds, much less
ratios measured back to back in one run. TorchFix runs from its own virtualenv
(`make bench` makes one) because it pins its own libcst.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import generate  # noqa: E402

RESULTS = HERE / "RESULTS.md"
REPEAT = 5


def best_of(fn, repeat: int = REPEAT) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(cmd: list[str]) -> None:
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--torchfix", default=shutil.which("torchfix"), help="the torchfix executable")
    parser.add_argument("--sizes", default="1000,5000")
    args = parser.parse_args()

    from graphlife.checker import check_source

    check_source("import torch\n", "warmup.py")  # imports and table loading are not per file
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            source = generate(size)
            path = Path(folder) / f"train_{size}.py"
            path.write_text(source)
            parse = best_of(lambda: ast.parse(source))
            engine = best_of(lambda: check_source(source, str(path), time_budget=120), repeat=3)
            cli = best_of(lambda: run([sys.executable, "-m", "graphlife", "check", str(path)]), repeat=3)
            startup = best_of(lambda: run([sys.executable, "-m", "graphlife", "rules"]), repeat=3)
            torchfix = None
            if args.torchfix:
                torchfix = best_of(lambda: run([args.torchfix, str(path)]), repeat=3)
            rows.append((size, source.count("\n"), parse, engine, cli, startup, torchfix))

    lines = [
        "## Checker",
        "",
        f"Generated training files (`benchmarks/generate.py`), median of runs, one machine, one run "
        f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores). Target: the whole analysis of a file at most 3x its `ast.parse`.",
        "",
        "| lines | ast.parse | graphlife engine | engine / parse | `graphlife check` (process) | torchfix (process) | check / torchfix |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, count, parse, engine, cli, startup, torchfix in rows:
        tf = f"{torchfix * 1000:.0f} ms" if torchfix else "not run"
        vs = f"{cli / torchfix:.2f}x" if torchfix else "-"
        lines.append(f"| {count} | {parse * 1000:.1f} ms | {engine * 1000:.0f} ms | {engine / parse:.1f}x | "
                     f"{cli * 1000:.0f} ms (startup {startup * 1000:.0f} ms) | {tf} | {vs} |")
    lines.append("")
    section = "\n".join(lines)
    print(section)
    write_section(section)
    return 0


def write_section(section: str) -> None:
    """Replace this benchmark's section of RESULTS.md, keeping the other sections."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    start = text.find("## Checker")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section.rstrip("\n") + "\n\n" + (text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
