"""Writing one benchmark's section of ``benchmarks/RESULTS.md``.

Every benchmark script owns one ``## `` section and rewrites it with each run. A section
also holds ``### `` sub-sections written by hand below the generated tables: an experiment
that did not pay, a session's measurements of one change, a judgement of findings. A run
must keep those (they cannot be measured again by the script), so a sub-section whose
heading the new text does not write is kept, after the new text, in its old order.
"""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
EMPTY = "# Benchmark results\n\n"


def write_section(section: str, text: str, results: Path = RESULTS) -> None:
    """Replace (or append) the section headed ``section`` with ``text``, keeping the other
    sections and the sub-sections of this one that ``text`` does not write."""
    whole = results.read_text(encoding="utf-8") if results.exists() else EMPTY
    start = _heading_at(whole, section)
    if start < 0:
        results.write_text(whole.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n", encoding="utf-8")
        return
    end = whole.find("\n## ", start + 1)
    old = whole[start:end] if end >= 0 else whole[start:]
    written = headings(text)
    kept = [part for heading, part in subsections(old) if heading not in written]
    new = "\n\n".join([text.rstrip("\n"), *kept])
    after = whole[end + 1:] if end >= 0 else ""
    results.write_text(whole[:start].rstrip("\n") + "\n\n" + new + "\n" + ("\n" + after if after else ""),
                       encoding="utf-8")


def _heading_at(whole: str, section: str) -> int:
    """Where the line ``section`` starts (a whole line: "## Language server" is not
    "## Language server: hover"), or -1."""
    if whole.startswith(section + "\n"):
        return 0
    found = whole.find("\n" + section + "\n")
    return found + 1 if found >= 0 else -1


def headings(text: str) -> set[str]:
    """The ``### `` headings a text writes."""
    return {line for line in text.splitlines() if line.startswith("### ")}


def subsections(section: str) -> list[tuple[str, str]]:
    """The ``### `` sub-sections of a section: each heading line and its text up to the next."""
    parts: list[tuple[str, str]] = []
    lines = section.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("### ")]
    for n, i in enumerate(starts):
        stop = starts[n + 1] if n + 1 < len(starts) else len(lines)
        parts.append((lines[i], "\n".join(lines[i:stop]).rstrip("\n")))
    return parts
