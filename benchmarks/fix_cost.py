"""What checking a fix before it is offered costs on large documents, the way the editor does it.

Usage: ``python benchmarks/fix_cost.py [--public FILE ...]`` (prints a Markdown table for
``benchmarks/RESULTS.md``, section "Fix verification"). Nothing here passes or fails.

Every fix is verified by analyzing the fixed text (:mod:`graphlife.fixes.verify`). For one
finding (the last one with a recipe) of each file, measured in this process, one after the
other, in milliseconds of wall time:

- *check*: a full check of the text (what the editor has already when the light bulb asks);
- *libcst*: parsing the text with libcst (:class:`graphlife.fixes.document.Document`), which
  every recipe needs; the editor parses once per version, for all its findings;
- *first light bulb, as before*: ``compute_fixes`` with a fresh verifier (it checks the
  unfixed text again, and each fixed text in full) and its own libcst parse;
- *first light bulb*: as the editor does now (:func:`graphlife.lsp.code_actions.fixes_for`):
  the analysis's findings as the unfixed text's, the version's libcst tree, and fixed texts
  checked by a per-document incremental checker, new (its first check is a full one);
- *next finding / next version*: the same for another finding of the same version (the
  libcst tree and the checker shared), and for the first finding after an edit elsewhere in
  the file (a new libcst parse, the checker warm);
- *fix-all*: ``fix_source`` with the same incremental checker.

The generated files are :mod:`generate` (5,000 and 20,000 lines, one call tree; a training
step with a double backward appended, since the generated code has no bug) and
:func:`lsp_latency.training_module` (the *functions* shape, one double backward in ten
steps), and any public file given with ``--public``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "server"))
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402
from lsp_latency import training_module  # noqa: E402

from graphlife.checker import check_source  # noqa: E402
from graphlife.fixes import compute_fixes, fix_source  # noqa: E402
from graphlife.fixes.document import Document  # noqa: E402
from graphlife.fixes.verify import FixVerifier, engine_analyze  # noqa: E402
from graphlife.incremental import IncrementalChecker  # noqa: E402

BUG = ("\n\ndef step_with_a_bug(batch):\n    w = torch.randn(8, requires_grad=True)\n"
       "    loss = (batch * w).sum()\n    loss.backward()\n    loss.backward()\n")


def timed(work: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = work()
    return (time.perf_counter() - started) * 1000, result


def incremental(checker: IncrementalChecker) -> Callable[[str], object]:
    def analyze(source: str):  # graphlife.fixes.verify.Analyze
        result = checker.check(source)
        return None if result.syntax_errors else result.findings
    return analyze


def measure(name: str, source: str) -> list[str]:
    check_ms, result = timed(lambda: check_source(source, None))
    findings = result.findings  # type: ignore[attr-defined]
    fixable = [f for f in findings if f.fixes]
    if not fixable:
        notes = result.notes  # type: ignore[attr-defined]
        boxed = " (time box)" if any("time box" in note for note in notes) else ""
        return [name, str(source.count("\n")), f"{len(findings)}{boxed}", f"{check_ms:.0f}", *["-"] * 6]
    finding = fixable[-1]
    parse_ms, doc = timed(lambda: Document(source))
    before_ms, _ = timed(lambda: compute_fixes(finding, source,
                                               verifier=FixVerifier(source, engine_analyze(None, None))))
    checker = IncrementalChecker()
    verifier = FixVerifier(source, incremental(checker), known=findings)
    first_ms, offered = timed(lambda: compute_fixes(finding, source, doc, verifier=verifier))  # type: ignore[arg-type]
    first_ms += parse_ms  # the editor parses the version once, at its first light bulb
    if len(fixable) > 1:
        next_ms, _ = timed(lambda: compute_fixes(fixable[0], source, doc, verifier=verifier))  # type: ignore[arg-type]
        next_finding = f"{next_ms:.0f}"
    else:
        next_finding = "-"
    edited = source.replace("import torch\n", "import torch\nimport math\n", 1)  # an edit away from the finding
    edited_findings = check_source(edited, None).findings
    moved = next(f for f in edited_findings if f.code == finding.code and f.span.line == finding.span.line + 1)
    version_ms, _ = timed(lambda: compute_fixes(moved, edited, Document(edited),
                                                verifier=FixVerifier(edited, incremental(checker), edited_findings)))
    fix_all_ms, _ = timed(lambda: fix_source(source, analyze=incremental(checker)))
    return [name, str(source.count("\n")), str(len(findings)), f"{check_ms:.0f}", f"{parse_ms:.0f}",
            f"{before_ms:.0f}", f"{first_ms:.0f} ({len(offered)} fixes)", next_finding,  # type: ignore[arg-type]
            f"{version_ms:.0f}", f"{fix_all_ms:.0f}"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", nargs="*", default=[], help="public files to measure too")
    parser.add_argument("--sizes", type=int, nargs="*", default=[5000, 20000], help="lines of the generated files")
    args = parser.parse_args(argv)
    shapes = (("one call tree + a bug", lambda n: generate(n) + BUG), ("functions", training_module))
    cases = [(shape, make(lines)) for lines in args.sizes for shape, make in shapes]
    cases += [(f"file {Path(p).name}", Path(p).read_text(encoding="utf-8")) for p in args.public]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"CPython {platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f} at the start")
    print()
    print("| shape | lines | findings | check | libcst parse | first light bulb, before | first light bulb, now "
          "| next finding | next version | fix-all |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, source in cases:
        print("| " + " | ".join(measure(name, source)) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
