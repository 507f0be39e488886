"""Speed of `graphlife check`, in one run: against its floor (`ast.parse`), on public
training files, on shapes whose cost multiplies, at start-up, and against TorchFix.

Usage: ``python benchmarks/bench_check.py [--public DIR] [--torchfix PATH_TO_torchfix]``
(or ``make bench``). Writes the tables to ``benchmarks/RESULTS.md`` (section
"Checker"; ``--no-write`` only prints them).

What is measured, and why so:

- *Engine / parse*: CPU time of ``check_source`` (parse, rules, engine) in this process,
  against CPU time of ``ast.parse`` of the same text with the cycle collector off (the
  floor: no analysis can cost less than reading the file), median of ``--repeat`` runs
  each. Generated files (``benchmarks/generate.py``), the large public training files of
  ``benchmarks/public_files.toml`` (read from ``--public DIR``, ``$GRAPHLIFE_BENCH_PUBLIC``
  or ``.cache/public``, laid out ``<owner>+<name>/<path>``; ``make bench-public`` fetches
  them; missing ones are named and skipped), and shapes whose cost grows with their
  structure (``benchmarks/shapes.py``), where the number of statements the engine ran
  shows whether the work grows linearly or multiplies from one size to the next.
- *Start-up*: CPU time of the whole process ``python -m graphlife check`` of a 10-line
  file against ``python -c pass`` (each child's own CPU time, from ``os.wait4``), run in
  turns, median. Bytecode is compiled first, as an installed package has it.
- *Other passes over the same tree*: a visit of every node that does nothing, and pyflakes
  (``--pyflakes PYTHON``: an interpreter with pyflakes installed; ``make bench`` makes one),
  each against ``ast.parse`` in the same process: where a pure-Python analysis starts from.
- *TorchFix*: the same process against ``torchfix`` on the generated files (TorchFix runs
  from its own virtualenv, ``make bench`` makes one, because it pins its own libcst).

Ratios, not seconds, are what to compare between runs: the machine's load changes
seconds much more than ratios measured back to back. Nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import generate as generated  # noqa: E402
import public_files  # noqa: E402
import results_file  # noqa: E402
import shapes  # noqa: E402

SECTION = "## Checker"

#: A 10-line training file: what start-up is measured with.
SMALL_FILE = """import torch
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 3)
    loss = model(x).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(loss.item())
"""


def cpu_median(fn: Callable[[], object], repeat: int, *, collector: bool = True) -> float:
    """Median CPU seconds of ``fn``; the collector runs before each call (not timed), so no
    call pays for the garbage of the one before, and is off during it when ``collector`` is False."""
    times = []
    for _ in range(repeat):
        gc.collect()
        if not collector:
            gc.disable()
        try:
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        finally:
            gc.enable()
    return statistics.median(times)


def child_cpu(cmd: list[str]) -> float:
    """CPU seconds (user + system) of one child process, its output discarded."""
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return usage.ru_utime + usage.ru_stime


def children_in_turns(commands: list[list[str]], repeat: int) -> list[float]:
    """Median child CPU seconds of each command, the commands run in turns (load drifts)."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(repeat):
        for index, cmd in enumerate(commands):
            times[index].append(child_cpu(cmd))
    return [statistics.median(t) for t in times]


# -- engine against its floor ------------------------------------------------------------


class Engine:
    """``check_source`` with a counter of the statements the engine ran (counted in a
    separate run, so that the count costs the timed runs nothing)."""

    def __init__(self) -> None:
        from graphlife.analysis import interpreter
        from graphlife.checker import check_source

        self.check_source = check_source
        self.interpreter = interpreter
        check_source("import torch\n", "warmup.py")  # imports and tables are not per file

    def check(self, source: str, path: str):
        return self.check_source(source, path, time_budget=120)

    def statements_run(self, source: str, path: str) -> int:
        cls = self.interpreter.Interpreter
        original = cls.exec_stmt
        count = 0

        def counting(interp, stmt, state):
            nonlocal count
            count += 1
            return original(interp, stmt, state)

        cls.exec_stmt = counting
        try:
            self.check(source, path)
        finally:
            cls.exec_stmt = original
        return count


def measure_file(engine: Engine, label: str, source: str, path: str, repeat: int) -> dict:
    parse = cpu_median(lambda: ast.parse(source), repeat, collector=False)
    result = engine.check(source, path)
    seconds = cpu_median(lambda: engine.check(source, path), repeat)
    print(f"  {label}: parse {parse * 1e3:.1f} ms, engine {seconds * 1e3:.0f} ms", flush=True)
    return {"label": label, "lines": len(source.splitlines()), "parse": parse, "engine": seconds,
            "findings": len(result.findings), "notes": result.notes, "source": source}


def engine_rows(engine: Engine, sizes: list[int], public: list[tuple[public_files.PublicFile, Path]],
                repeat: int) -> list[dict]:
    rows = []
    for size in sizes:
        rows.append(measure_file(engine, f"generated ({size:,})", generated.generate(size),
                                 f"train_{size}.py", repeat))
    for file, location in public:
        source = location.read_text(encoding="utf-8")
        label = f"{file.name} (`{file.path}` @ {file.commit[:10]})"
        rows.append(measure_file(engine, label, source, str(location), repeat))
    return rows


def shape_rows(engine: Engine, sizes: dict[str, list[int]], repeat: int) -> list[dict]:
    rows = []
    for shape, make in shape_generators().items():
        previous = None
        for size in sizes[shape]:
            source = make(size)
            row = measure_file(engine, f"{shape} {size}", source, f"{shape}_{size}.py", repeat)
            row.update(shape=shape, size=size, statements=engine.statements_run(source, f"{shape}_{size}.py"))
            row["growth"] = row["statements"] / previous["statements"] if previous else None
            rows.append(row)
            previous = row
    return rows


def shape_generators() -> dict[str, Callable[[int], str]]:
    """The fan-out of ``generate.py`` when it has one, else this bench's own (``shapes.py``)."""
    fanout = getattr(generated, "generate_fanout", None) or shapes.generate_fanout
    return {"fan-out": fanout, "nested loops": shapes.generate_nested_loops}


# -- what other passes over the same tree cost ---------------------------------------------

#: Run by the pyflakes interpreter: for each file, the median CPU time of ``ast.parse`` (collector
#: off) and of parse + pyflakes' checker, in that one process, printed as JSON.
PYFLAKES_SCRIPT = """
import ast, gc, json, statistics, sys, time
from pyflakes.checker import Checker
def median(fn, repeat, collector=True):
    times = []
    for _ in range(repeat):
        gc.collect()
        if not collector:
            gc.disable()
        start = time.process_time(); fn(); times.append(time.process_time() - start)
        gc.enable()
    return statistics.median(times)
repeat, paths = int(sys.argv[1]), sys.argv[2:]
rows = []
for path in paths:
    source = open(path, encoding="utf-8").read()
    parse = median(lambda: ast.parse(source), repeat, collector=False)
    flakes = median(lambda: Checker(ast.parse(source), filename=path), repeat)
    rows.append({"parse": parse, "pyflakes": flakes})
print(json.dumps(rows))
"""


class _EveryNode(ast.NodeVisitor):
    """Visits every node and does nothing: the least any analysis written as a visitor pays."""


def _visit_ratio(source: str, repeat: int) -> float:
    parse = cpu_median(lambda: ast.parse(source), repeat, collector=False)
    tree = ast.parse(source)
    return cpu_median(lambda: _EveryNode().visit(tree), repeat) / parse


def floor_rows(sources: list[tuple[str, str]], pyflakes: str | None, repeat: int) -> list[dict]:
    """For each (label, text): ``ast.parse``, a visit of every node that does nothing, and parse +
    pyflakes (a linter that only resolves names, one pass, in pure Python), each against
    ``ast.parse`` of the same text measured in the same process."""
    rows = [{"label": label, "visit": _visit_ratio(source, repeat), "pyflakes": None} for label, source in sources]
    if pyflakes:
        with tempfile.TemporaryDirectory() as folder:
            paths = []
            for index, (_, source) in enumerate(sources):
                path = Path(folder) / f"file_{index}.py"
                path.write_text(source, encoding="utf-8")
                paths.append(str(path))
            done = subprocess.run([pyflakes, "-c", PYFLAKES_SCRIPT, str(repeat), *paths],
                                  capture_output=True, text=True, check=False)
            if done.returncode == 0:
                for row, measured in zip(rows, json.loads(done.stdout), strict=True):
                    row["pyflakes"] = measured["pyflakes"] / measured["parse"]
            else:
                print(f"pyflakes not run: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    return rows


# -- processes -----------------------------------------------------------------------------


def startup(repeat: int) -> tuple[float, float]:
    """Median CPU of ``python -c pass`` and of ``python -m graphlife check`` of a 10-line file."""
    import graphlife

    compileall.compile_dir(str(Path(graphlife.__file__).parent), quiet=1)  # as installed: with bytecode
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "small.py"
        path.write_text(SMALL_FILE)
        check = [sys.executable, "-m", "graphlife", "check", str(path)]
        child_cpu(check)  # warm the file cache; makes the folder's `.graphlife_cache/`
        # A file and folder saved a minute ago, as those a check in CI or pre-commit reads: a
        # result is kept for reuse only when the stats of its inputs are older than a file
        # system's time resolution lets one trust (2 s), so what was written just now (the file,
        # and the folder the cache was just made in) is checked again until then.
        saved = time.time() - 60
        for written in (path, Path(folder)):
            os.utime(written, (saved, saved))
        child_cpu(check)  # stores the result the timed runs are answered from
        bare, checked = children_in_turns([[sys.executable, "-c", "pass"], check], repeat)
    return bare, checked


def torchfix_rows(torchfix: str | None, sizes: list[int], repeat: int) -> list[tuple[int, float, float | None]]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            source = generated.generate(size)
            path = Path(folder) / f"train_{size}.py"
            path.write_text(source)
            commands = [[sys.executable, "-m", "graphlife", "check", str(path)]]
            if torchfix:
                commands.append([torchfix, str(path)])
            times = children_in_turns(commands, repeat)
            rows.append((len(source.splitlines()), times[0], times[1] if torchfix else None))
    return rows


# -- the report ----------------------------------------------------------------------------


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{model}, {os.cpu_count()} cores, {system}, Python {platform.python_version()}"


def load() -> str:
    try:
        return "load average " + " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 0.1 else f"{seconds * 1e3:,.0f} ms"


def floor_table(rows: list[dict], floors: list[dict], pyflakes: str | None) -> list[str]:
    """The engine's ratio beside what simpler passes over the same tree cost against the same floor."""
    out = [
        "",
        "### Other passes over the same tree, against the same floor",
        "",
        ("Each against `ast.parse` of the same text, measured in the same process. *visit every node*: an "
         "`ast.NodeVisitor` that does nothing (the least an analysis written in Python as a walk of the tree "
         "pays); *pyflakes*: parse + pyflakes' checker, a linter in pure Python that resolves names in one "
         "pass, with no values, no calls followed and no loops run"
         + ("" if pyflakes else " (not run: give `--pyflakes PYTHON`, an interpreter with pyflakes installed; "
            "`make bench` makes one)") + "; *graphlife*: the ratio of the table above."),
        "",
        "| file | visit every node / parse | pyflakes / parse | graphlife / parse |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row, floor in zip(rows, floors, strict=True):
        flakes = f"{floor['pyflakes']:.2f}x" if floor["pyflakes"] is not None else "not run"
        out.append(f"| {row['label']} | {floor['visit']:.2f}x | {flakes} | {row['engine'] / row['parse']:.1f}x |")
    return out


def render(args, started: str, load_before: str, rows: list[dict], floors: list[dict], missing: list[str],
           shape_table: list[dict], start: tuple[float, float],
           torchfix: list[tuple[int, float, float | None]]) -> str:
    out = [
        SECTION,
        "",
        (f"`benchmarks/bench_check.py`, one run, {started}; {machine()}; {load_before} at the start, "
         f"{load()} at the end (a shared machine: other jobs inflate the CPU times, the ratios much less). "
         f"CPU times, median of {args.repeat} runs unless said."),
        "",
        "### Engine against its floor",
        "",
        ("*engine*: `check_source` in process (parse, rules, engine, findings); *parse*: `ast.parse` of the "
         "same text with the cycle collector off. The project's target: the whole analysis of a file at "
         "most 3x its `ast.parse`."),
        "",
        "| file | lines | ast.parse | engine | engine / parse | findings | notes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        out.append(f"| {row['label']} | {row['lines']:,} | {milliseconds(row['parse'])} | "
                   f"{milliseconds(row['engine'])} | "
                   f"{row['engine'] / row['parse']:.1f}x | {row['findings']} | {'; '.join(row['notes']) or '-'} |")
    if missing:
        out += ["", "Public files not found (`make bench-public` fetches them, or give `--public DIR`): "
                + "; ".join(missing) + "."]
    out += floor_table(rows, floors, args.pyflakes)
    out += [
        "",
        "### Shapes whose cost multiplies",
        "",
        ("`benchmarks/shapes.py` (the fan-out of `benchmarks/generate.py` when it has one): *statements run* "
         "counts the statements the engine interpreted (inlined calls and unrolled loop iterations each "
         "count again); *growth* is that count over the previous size's. A growth that stays near the "
         "ratio of the sizes is linear; a constant factor per step is exponential."),
        "",
        "| shape | size | lines | statements run | growth | engine | engine / parse |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in shape_table:
        growth = f"{row['growth']:.2f}x" if row["growth"] else "-"
        out.append(f"| {row['shape']} | {row['size']} | {row['lines']} | {row['statements']:,} | {growth} | "
                   f"{milliseconds(row['engine'])} | {row['engine'] / row['parse']:.1f}x |")
    bare, checked = start
    out += [
        "",
        "### Start-up",
        "",
        (f"Whole processes, each child's CPU time (`os.wait4`), run in turns, median of {args.startup_repeat}. "
         "Target: `graphlife check` of a 10-line file at most 3x `python -c pass`."),
        "",
        "| `python -c pass` | `python -m graphlife check` (10 lines) | ratio |",
        "| ---: | ---: | ---: |",
        f"| {milliseconds(bare)} | {milliseconds(checked)} | {checked / bare:.2f}x |",
        "",
        "### Against TorchFix",
        "",
        "Whole processes on the generated files, each child's CPU time, run in turns, "
        f"median of {args.torchfix_repeat}.",
        "",
        "| lines | `graphlife check` (process) | torchfix (process) | check / torchfix |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for lines, check, fix in torchfix:
        out.append(f"| {lines:,} | {milliseconds(check)} | {milliseconds(fix) if fix else 'not run'} | "
                   f"{f'{check / fix:.2f}x' if fix else '-'} |")
    return "\n".join(out) + "\n"


def sizes(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--public", help=f"folder of the public files (default: ${public_files.ENVIRONMENT}, "
                                         "else .cache/public), laid out <owner>+<name>/<path>")
    parser.add_argument("--torchfix", default=shutil.which("torchfix"), help="the torchfix executable")
    parser.add_argument("--sizes", type=sizes, default=[1000, 5000, 20000], help="generated files, lines")
    parser.add_argument("--fanout", type=sizes, default=[2, 4, 6, 8, 10], help="fan-out depths")
    parser.add_argument("--nesting", type=sizes, default=[2, 4, 6, 8, 12], help="loop nesting depths")
    parser.add_argument("--pyflakes", metavar="PYTHON",
                        help="an interpreter with pyflakes installed, to set the engine beside (make bench makes one)")
    parser.add_argument("--torchfix-sizes", type=sizes, default=[1000, 5000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--startup-repeat", type=int, default=21)
    parser.add_argument("--torchfix-repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only; do not touch RESULTS.md")
    args = parser.parse_args()

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = load()
    root = public_files.root_folder(args.public)
    present, missing = [], []
    for file in public_files.load():
        location = file.location(root)
        (present if location.is_file() else missing).append((file, location))
    for file, location in missing:
        print(f"public file missing, skipped: {file.name} ({location})", file=sys.stderr)

    print("start-up", flush=True)
    start = startup(args.startup_repeat)
    print("engine against ast.parse", flush=True)
    engine = Engine()
    rows = engine_rows(engine, args.sizes, present, args.repeat)
    print("other passes against ast.parse", flush=True)
    floors = floor_rows([(row["label"], row["source"]) for row in rows], args.pyflakes, args.repeat)
    print("shapes", flush=True)
    shape_table = shape_rows(engine, {"fan-out": args.fanout, "nested loops": args.nesting}, args.repeat)
    print("torchfix" if args.torchfix else "torchfix: not found, not run", flush=True)
    torchfix = torchfix_rows(args.torchfix, args.torchfix_sizes, args.torchfix_repeat)

    section = render(args, started, load_before, rows, floors, [f"{f.name} ({loc})" for f, loc in missing],
                     shape_table, start, torchfix)
    print(section)
    if not args.no_write:
        results_file.write_section(SECTION, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
