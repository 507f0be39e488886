"""Language server: change-to-diagnostics latency and resident memory.

Starts the real server (``python -m graphlife lsp``) over stdio like VS Code
does, opens generated training modules of 1,000 and 5,000 lines, then edits one
function at a time (incremental ``didChange``) and measures the time from
sending the change to receiving the ``publishDiagnostics`` of that version,
minus the debounce. Also reports the checker alone on the same text (how much
of the latency is the engine) and the server's resident memory (VmRSS) after
opening both files.

Targets (issue 5): at most 50 ms beyond the debounce on 1,000 lines, 150 ms on
5,000 lines; resident memory under 80 MB.

Run: ``.venv/bin/python benchmarks/lsp_latency.py [--edits N] [--no-write]``.
Results are written to ``benchmarks/RESULTS.md`` under "Language server".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate, generate_one_main  # the checker benchmark's generated files

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
SECTION = "## Language server"
DEBOUNCE_MS = 300
TARGETS_MS = {1000: 50, 5000: 150}


def training_module(lines: int) -> str:
    """A realistic module of about ``lines`` lines: small training steps, every 10th with a double backward."""
    parts = ["import torch\n", "import torch.nn as nn\n", "\n"]
    index = 0
    while sum(part.count("\n") for part in parts) < lines:
        bug = "    loss.backward()\n" if index % 10 == 0 else ""
        parts.append(
            f"def step_{index}(batch):\n"
            f"    w = torch.randn(8, requires_grad=True)\n"
            f"    out = batch * w + {index}\n"
            f"    loss = (out * out).mean()\n"
            f"    loss.backward()\n"
            f"{bug}"
            f"    with torch.no_grad():\n"
            f"        w -= 0.1 * w.grad\n"
            f"    return loss.item()\n"
            f"\n\n"
        )
        index += 1
    return "".join(parts)


def _client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.published.append((time.perf_counter(), params))
        client.arrived.set()

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.CLIENT_REGISTER_CAPABILITY] = lambda client, params: None
    register_lsp_features(client, features)
    client.published = []
    client.arrived = asyncio.Event()
    return client


#: The server stops an analysis after its time box (5 s) + 5 s; nothing is published then.
WAIT_SECONDS = 20.0


async def _wait(
    client: LanguageClient, uri: str, version: int, timeout: float = WAIT_SECONDS
) -> tuple[float, int] | None:
    """When the diagnostics of ``version`` arrived and how many; ``None`` if they never came."""
    deadline = time.perf_counter() + timeout
    while True:  # event-driven: polling would steal the CPU the server needs on 2 cores
        for stamp, params in client.published:
            if params.uri == uri and params.version == version:
                return stamp, len(params.diagnostics)
        client.arrived.clear()
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return None
        try:
            await asyncio.wait_for(client.arrived.wait(), remaining)
        except asyncio.TimeoutError:
            return None


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _engine_ms(source: str, repeat: int = 3) -> float:
    from graphlife.checker import check_source

    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        check_source(source, None)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


#: The shapes measured: name -> (module text for a size, the lines an edit appends ` + 0` to).
SHAPES = {
    "functions": (training_module, "    out = batch * w"),
    "one call tree": (generate, "            logits = model(x)"),
    "one main()": (generate_one_main, "            logits = model(x)"),
}


async def _open(client: LanguageClient, path: Path, source: str) -> tuple[str, float, int]:
    uri = path.as_uri()
    opened = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=source)
        )
    )
    got = await _wait(client, uri, 1)
    return uri, (got[0] - opened) * 1000 if got else float("inf"), got[1] if got else 0


async def _edit(client: LanguageClient, uri: str, source: str, marker: str, edits: int) -> tuple[list[float], str]:
    """Append ` + 0` to ``edits`` lines starting with ``marker``, one version each; latencies beyond the debounce."""
    latencies = []
    lines = source.split("\n")
    targets = [i for i, text in enumerate(lines) if text.startswith(marker)]
    for edit in range(edits):
        version = edit + 2
        line = targets[(edit * 37) % len(targets)]
        old = lines[line]
        lines[line] = old + " + 0"
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=types.Position(line=line, character=len(old)),
                                          end=types.Position(line=line, character=len(old))),
                        text=" + 0",
                    )
                ],
            )
        )
        got = await _wait(client, uri, version)
        latencies.append((got[0] - sent) * 1000 - DEBOUNCE_MS if got else float("inf"))
    return latencies, "\n".join(lines)


async def run(edits: int) -> dict:
    client = _client()
    await client.start_io(sys.executable, "-m", "graphlife", "lsp")
    pid = client._server.pid
    client.set_configuration({"graphlife": {"debounce": DEBOUNCE_MS}})
    await client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
    results: dict = {"rss_start": _rss_mb(pid), "rows": []}
    folder = Path(tempfile.mkdtemp(prefix="graphlife-bench-"))
    for shape, (make, marker) in SHAPES.items():
        opened = []
        for size in (1000, 5000):
            source = make(size)
            uri, open_ms, findings = await _open(client, folder / f"{shape.replace(' ', '_')}_{size}.py", source)
            opened.append((size, source, uri, open_ms, findings))
        if shape == "functions":
            results["rss_open"] = _rss_mb(pid)
        results.setdefault("rss_shapes", []).append((shape, _rss_mb(pid)))
        for size, source, uri, open_ms, findings in opened:
            latencies, edited = await _edit(client, uri, source, marker, edits)
            results["rows"].append({
                "shape": shape, "size": size, "lines": source.count("\n"), "findings": findings, "open_ms": open_ms,
                "latency_median": statistics.median(latencies), "latency_max": max(latencies),
                "engine_ms": _engine_ms(edited),
            })
        if shape == "functions":
            await asyncio.sleep(1.5)  # the server trims its heap after a second of quiet
            results["rss_edited"] = _rss_mb(pid)
    await client.shutdown_session()
    await client.stop()
    return results


def report(results: dict, edits: int) -> str:
    rows = []
    for data in results["rows"]:
        target = TARGETS_MS[data["size"]]
        ok = "yes" if data["latency_median"] <= target else "**no**"
        rows.append(
            f"| {data['shape']} | {data['lines']} | {data['findings']} | {data['open_ms']:.0f} | "
            f"{data['latency_median']:.0f} | "
            f"{data['latency_max']:.0f} | {target} | {ok} | {data['engine_ms']:.0f} |"
            .replace("inf", "none (stopped)")
        )
    memory_ok = "yes" if max(results["rss_open"], results["rss_edited"]) < 80 else "**no**"
    return "\n".join(
        [
            SECTION,
            "",
            f"`benchmarks/lsp_latency.py`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.1f} at the end, debounce {DEBOUNCE_MS} ms, {edits} edits per file "
            "(one appended ` + 0` in one function each).",
            "",
            "Three shapes of file. *functions*: training steps that nothing in the file calls, so each is",
            "analyzed alone. *one call tree*: `benchmarks/generate.py`, where `if __name__ == \"__main__\":`",
            "calls every `main_i()`, which calls the training and evaluation functions; the module body",
            "inlines them all, so it is one unit of analysis. *one main()*: the same, with the `main_i()`",
            "calls in one `main()` that the module body calls.",
            "",
            "| shape | lines | findings | open -> diagnostics (ms) "
            "| change -> diagnostics beyond debounce, median (ms) "
            "| max (ms) | target (ms) | met | full check of the same text, in process (ms) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            *rows,
            "",
            f"Resident memory of the server: {results['rss_start']:.0f} MB after initialize, "
            f"{results['rss_open']:.0f} MB with both *functions* files open, {results['rss_edited']:.0f} MB after "
            f"their edits and a second of quiet (target < 80 MB: {memory_ok}). At initialize the server has",
            "imported everything it serves with: pygls and lsprotocol are about 28 MB of it, libcst 9 MB.",
            "Each open document keeps its parsed blocks (the tree is about 9 MB for 5,000 lines) and what its",
            "units reported; with the files of every shape open at once: "
            + ", ".join(f"{rss:.0f} MB after the *{shape}* pair" for shape, rss in results["rss_shapes"]) + ".",
            "",
            "The server keeps one incremental checker per document (`graphlife/incremental.py`): only the",
            "top-level blocks whose text changed are parsed again, and a unit of analysis (the module",
            "body, or a function nothing inlines) runs again only when the code it read changed; the",
            "others replay what they reported. An edit in a *functions* file costs one function. In the",
            "two call-tree shapes every function is reached from the module body, but each `main_i()`",
            "takes and returns no graph, so it is analyzed apart (`graphlife/analysis/isolation.py`)",
            "and cached on its own: after an edit the module body (and `main()`) are replayed and only",
            "the `main_i()` whose code changed runs again, alone, with the values it was given. A call",
            "that is given a model or a tensor (`train(model, loader)`) is inlined into its caller, and",
            "an edit in it runs that caller again.",
            "\"none (stopped)\": the analysis ran past the checker's time box + 5 s and the server stopped it.",
            "",
        ]
    )


def write_section(text: str) -> None:
    """Replace (or append) only the "Language server" section of RESULTS.md."""
    existing = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    if SECTION in existing:
        start = existing.index(SECTION)
        rest = existing[start + len(SECTION):]
        next_section = rest.find("\n## ")
        end = start + len(SECTION) + next_section + 1 if next_section >= 0 else len(existing)
        existing = existing[:start] + text + existing[end:]
    else:
        existing = existing.rstrip("\n") + "\n\n" + text
    RESULTS.write_text(existing)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only; do not touch RESULTS.md")
    args = parser.parse_args()
    results = asyncio.run(run(args.edits))
    text = report(results, args.edits)
    print(text)
    if not args.no_write:
        write_section(text)


if __name__ == "__main__":
    main()
