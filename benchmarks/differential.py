"""Findings before and after an engine change, on any folders of Python files.

Usage:
    python benchmarks/differential.py record OUT.json DIR_OR_FILE...   # findings of every .py file
    python benchmarks/differential.py compare BEFORE.json AFTER.json    # what changed, exit 1 if anything

Why: a change to the engine's core (how it runs calls, copies states, builds ``self``)
must not change what users see. Record on the fixtures, the examples and public
repositories before the change, again after it, and compare. Each file is checked in
process with a generous time box (``--budget``); a file whose check hit the time box is
marked, because its findings depend on the machine's speed, not on the engine. The engine
time of each file is recorded too, so a record doubles as a cost profile of a corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def python_files(roots: list[str]) -> list[str]:
    """Every ``.py`` file under the roots, sorted (a root may be a file)."""
    found: list[str] = []
    for root in roots:
        path = Path(root)
        if path.is_file():
            found.append(str(path))
            continue
        found.extend(str(p) for p in path.rglob("*.py") if p.is_file())
    return sorted(found)


def check_one(args: tuple[str, float, bool]) -> tuple[str, dict]:
    """Findings of one file, as plain data (JSON-ready); with ``project``, following its
    imports into the other modules of its project (findings there name their file)."""
    from graphlife.checker import check_source, project_modules  # imported in the worker
    from graphlife.config import Config

    path, budget, project = args
    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return path, {"skipped": f"{type(exc).__name__}"}
    start = time.process_time()
    modules = project_modules(path, Config(), _sources()) if project else None
    result = check_source(source, path, time_budget=budget, modules=modules)
    seconds = time.process_time() - start
    findings = [
        {
            **({"path": f.span.path} if f.span.path is not None else {}),
            "code": f.code,
            "severity": f.severity.value,
            "span": [f.span.line, f.span.column, f.span.end_line, f.span.end_column],
            "message": f.message,
            "related": [[r.span.line, r.span.column, r.message] for r in f.related],
            "fixes": [fix.kind for fix in f.fixes],
        }
        for f in result.findings
    ]
    timed_out = any("time" in note and "box" in note for note in result.notes)
    engine_errors = [note for note in result.notes if "internal error" in note or "failed:" in note]
    return path, {"findings": findings, "timed_out": timed_out, "engine_errors": engine_errors, "seconds": seconds}


_SOURCES: list = []


def _sources() -> object:
    """The worker's parsed files, shared by its checks (as the CLI shares them)."""
    if not _SOURCES:
        from graphlife.project.sources import SourceCache

        _SOURCES.append(SourceCache())
    return _SOURCES[0]


def record(out: str, roots: list[str], budget: float, jobs: int, project: bool = False) -> int:
    files = python_files(roots)
    results: dict[str, dict] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for path, data in pool.map(check_one, [(f, budget, project) for f in files], chunksize=4):
            results[path] = data
    Path(out).write_text(json.dumps(results, indent=0, sort_keys=True))
    count = sum(len(d.get("findings", ())) for d in results.values())
    slow = sorted(((d.get("seconds", 0.0), p) for p, d in results.items()), reverse=True)[:5]
    print(f"{len(files)} files, {count} findings -> {out}")
    for seconds, path in slow:
        print(f"  slowest: {seconds:6.2f} s  {path}")
    return 0


def compare(before_path: str, after_path: str) -> int:
    before = json.loads(Path(before_path).read_text())
    after = json.loads(Path(after_path).read_text())
    changed = 0
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path, {}), after.get(path, {})
        if old.get("timed_out") or new.get("timed_out"):
            if old.get("findings") != new.get("findings"):
                print(f"~ {path}: time box hit (before {old.get('timed_out')}, after {new.get('timed_out')});"
                      " not compared")
            continue
        if old.get("findings") != new.get("findings"):
            changed += 1
            print(f"! {path}")
            old_set = {json.dumps(f, sort_keys=True) for f in old.get("findings", ())}
            new_set = {json.dumps(f, sort_keys=True) for f in new.get("findings", ())}
            for item in sorted(old_set - new_set):
                print(f"    - {item}")
            for item in sorted(new_set - old_set):
                print(f"    + {item}")
        if new.get("engine_errors") and not old.get("engine_errors"):
            changed += 1
            print(f"! {path}: new engine error {new['engine_errors']}")
    total_old = sum(d.get("seconds", 0.0) for d in before.values())
    total_new = sum(d.get("seconds", 0.0) for d in after.values())
    print(f"{changed} files differ; engine CPU {total_old:.1f} s before, {total_new:.1f} s after")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out")
    rec.add_argument("roots", nargs="+")
    rec.add_argument("--budget", type=float, default=120.0, help="time box per file, seconds")
    rec.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    rec.add_argument("--project", action="store_true", help="follow imports into the project's other modules")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before")
    cmp_.add_argument("after")
    args = parser.parse_args()
    if args.command == "record":
        return record(args.out, args.roots, args.budget, args.jobs, args.project)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
