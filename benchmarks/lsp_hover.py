"""Language server: how long a hover takes on a large file.

Starts the real server (``python -m graphlife lsp``) over stdio like VS Code does,
opens a file, waits for its diagnostics, then hovers on names spread over the
file, as a user moving the mouse from name to name does. Three figures per file:

- *first hover, right after the diagnostics*: the hover is sent the moment the
  diagnostics arrive, before the server had a quiet moment to tell the stories;
- *a name not hovered before*: each following hover is on another name (the
  median and the slowest of them);
- *first hover after a pause*: after an edit, its diagnostics, and a quiet
  moment (the server logs when it told the version's stories; a server that
  does not is given 2 s), the first hover of the new version.

``--server-path DIR`` runs the server from another checkout's ``server`` folder
(to compare with an earlier version); ``--file PATH`` adds a real file (public
code stays outside the repository). One run; the figures depend on the load of
the machine, so the table gives the load average too.

Run: ``.venv/bin/python benchmarks/lsp_hover.py [--file PATH] [--server-path DIR] [--label TEXT] [--no-write]``.
Rows are added to ``benchmarks/RESULTS.md`` under "Language server: hover".
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import client_capabilities

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate, generate_one_main  # the checker benchmark's generated files
from lsp_latency import _client, _wait
from results_file import RESULTS

SECTION = "## Language server: hover"
#: How many names each file is hovered on.
NAMES = 6
#: The server's log line when a version's stories are told (the servers that have it).
STORIES_TOLD = "told the graph-lifetime stories of"
QUIET_SECONDS = 2.0


def spread_names(source: str, count: int = NAMES) -> list[tuple[int, int, str]]:
    """``count`` names assigned in functions, spread evenly over the file: (0-based line,
    character, name). Assigned names are where a user looks for what a tensor holds."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Assign):
                    found.extend((target.lineno - 1, target.col_offset, target.id)
                                 for target in inner.targets if isinstance(target, ast.Name))
    found = sorted(set(found))
    if len(found) <= count:
        return found
    step = len(found) / count
    return [found[int(step * index + step / 2)] for index in range(count)]


async def _hover(client, uri: str, line: int, character: int) -> tuple[float, bool]:
    """Milliseconds to the hover's answer, and whether it told a graph-lifetime story."""
    started = time.perf_counter()
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, bool(hover is not None and "graph lifetime" in hover.contents.value)


async def _stories_told(client, before: int, timeout: float) -> bool:
    """Wait until the server logs that it told a version's stories (past ``before`` messages)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(STORIES_TOLD in message.message for message in client.log_messages[before:]):
            return True
        await asyncio.sleep(0.05)
    return False


async def measure(name: str, source: str, server_path: str | None) -> dict:
    client = _client()
    env = dict(os.environ)
    if server_path:
        env["PYTHONPATH"] = server_path
    await client.start_io(sys.executable, "-m", "graphlife", "lsp", env=env)
    await client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
    folder = Path(tempfile.mkdtemp(prefix="graphlife-hover-bench-"))
    path = folder / name
    path.write_text(source, encoding="utf-8")
    uri = path.as_uri()
    names = spread_names(source)
    opened = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=source)))
    got = await _wait(client, uri, 1, timeout=120)
    open_ms = (got[0] - opened) * 1000 if got else float("inf")
    first_ms, first_story = await _hover(client, uri, names[0][0], names[0][1])
    others = [await _hover(client, uri, line, character) for line, character, _ in names[1:]]
    # An edit (a comment line at the end), its diagnostics, a quiet moment, then a hover.
    lines = source.split("\n")
    logged = len(client.log_messages)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=len(lines) - 1, character=len(lines[-1])),
                              end=types.Position(line=len(lines) - 1, character=len(lines[-1]))),
            text="\n# edited\n")]))
    await _wait(client, uri, 2, timeout=120)
    says_when = any(STORIES_TOLD in message.message for message in client.log_messages[:logged])
    if not (says_when and await _stories_told(client, logged, QUIET_SECONDS + 60)):
        await asyncio.sleep(QUIET_SECONDS)  # a server that does not say when: give it the pause
    paused_ms, _ = await _hover(client, uri, names[-1][0], names[-1][1])
    await client.shutdown_session()
    await client.stop()
    other_ms = [ms for ms, _ in others]
    return {
        "file": name, "lines": source.count("\n"), "open_ms": open_ms, "first_ms": first_ms,
        "other_median": statistics.median(other_ms), "other_max": max(other_ms), "paused_ms": paused_ms,
        "stories": int(first_story) + sum(story for _, story in others), "hovers": len(names),
    }


def report(rows: list[dict], label: str) -> str:
    load = os.getloadavg()[0]
    lines = [
        f"### {label}",
        "",
        f"`benchmarks/lsp_hover.py`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, CPython "
        f"{platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f} at the end, one run.",
        "",
        "| file | lines | open -> diagnostics (ms) | first hover, right after the diagnostics (ms) "
        "| a name not hovered before, median (ms) | max (ms) | first hover of a new version after a pause (ms) "
        "| hovers with a story |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['file']} | {row['lines']} | {row['open_ms']:.0f} | {row['first_ms']:.0f} | "
            f"{row['other_median']:.0f} | {row['other_max']:.0f} | {row['paused_ms']:.0f} | "
            f"{row['stories']} of {row['hovers']} |"
        )
    return "\n".join(lines) + "\n"


def add_to_section(text: str) -> None:
    """Append ``text`` to the "Language server: hover" section of RESULTS.md (made if missing)."""
    existing = RESULTS.read_text()
    if SECTION + "\n" not in existing:
        existing = existing.rstrip("\n") + f"\n\n{SECTION}\n\n"
    start = existing.index(SECTION + "\n")
    rest = existing[start + len(SECTION):]
    next_section = rest.find("\n## ")
    end = start + len(SECTION) + next_section + 1 if next_section >= 0 else len(existing)
    body = existing[start:end].rstrip("\n") + "\n\n" + text
    RESULTS.write_text(existing[:start] + body + ("\n" + existing[end:] if end < len(existing) else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, action="append", default=[], help="a real file to hover in too")
    parser.add_argument("--server-path", help="the `server` folder of another checkout to run instead")
    parser.add_argument("--label", default="this version", help="the heading of this run's table")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    files = [("one_call_tree_5000.py", generate(5000)), ("one_main_5000.py", generate_one_main(5000))]
    files += [(path.name, path.read_text(encoding="utf-8")) for path in args.file]
    rows = [asyncio.run(measure(name, source, args.server_path)) for name, source in files]
    text = report(rows, args.label)
    print(text)
    if not args.no_write:
        add_to_section(text)


if __name__ == "__main__":
    main()
