"""`graphlife fix` over every encoding, BOM, newline style and odd line break: only the fixed line changes.

Python and LSP break lines at LF, CR LF and CR only; a form feed, ``\\v``,
``\\x1c``-``\\x1e``, U+0085, U+2028 or U+2029 is not a line break for them, but
``str.splitlines`` breaks there. A file holding one of those must get its fix on
the line the finding names, and every other byte of the file must stay as it was.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphlife.checker import check_source
from graphlife.cli import main
from graphlife.findings import Span
from graphlife.fixes import TextEdit
from graphlife.fixes.apply import apply_edits

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GAN = (FIXTURES / "GL101" / "bad_gan_discriminator_no_detach.py").read_text(encoding="utf-8")
BUGGY_LINE, FIXED_LINE = "    d_fake = D(fake)", "    d_fake = D(fake.detach())"

#: Characters ``str.splitlines`` breaks at and Python does not, by what an encoding can hold.
ODD_BREAKS = {
    "utf-8": "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
    "utf-8-sig": "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
    "latin-1": "\x0b\x0c\x1c\x1d\x1e\x85",
}
NEWLINES = {"LF": ["\n"], "CRLF": ["\r\n"], "CR": ["\r"], "mixed": ["\n", "\r\n", "\r"]}


def with_odd_breaks(source: str, odd: str) -> list[str]:
    """The lines of ``source`` with odd breaks in a comment, alone on a line (a form feed,
    as old code separates sections) and inside a string literal, before the buggy line."""
    lines = source.split("\n")
    at = lines.index("LATENT = 8") + 1
    lines[at:at] = [
        "\x0c",
        f"# section{odd}end of the comment",
        f"NOTE = 'odd{odd}text'",
        f"\x0c# after a form feed{odd}",
    ]
    return lines


def join(lines: list[str], breaks: list[str]) -> list[str]:
    """Each line with its break, taken in turn from ``breaks``; an empty line after a CR gets a CR
    too (a CR then an LF would be one CR LF break, not two)."""
    joined: list[str] = []
    for index, line in enumerate(lines):
        brk = breaks[index % len(breaks)]
        if brk == "\n" and not line and joined and joined[-1].endswith("\r"):
            brk = "\r"
        joined.append(line + brk)
    return joined


def build(encoding: str, newline_style: str) -> tuple[bytes, list[bytes], int]:
    """The file's bytes, its lines (with their breaks) and the index of the buggy line."""
    odd = ODD_BREAKS[encoding]
    lines = with_odd_breaks(GAN, odd)
    if encoding == "latin-1":
        lines[:0] = ["# -*- coding: latin-1 -*-", "# Poids appris : é, ü, ß"]
    breaks = NEWLINES[newline_style]
    text_lines = join(lines[:-1], breaks) + ([lines[-1]] if lines[-1] else [])
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    encoded = [line.encode(codec) for line in text_lines]
    if encoding == "utf-8-sig":
        encoded[0] = b"\xef\xbb\xbf" + encoded[0]
    return b"".join(encoded), encoded, lines.index(BUGGY_LINE)


def python_lines(data: bytes) -> list[bytes]:
    """``data`` split where Python splits lines, each line with its break."""
    return [match.group(0) for match in re.finditer(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", data)]


@pytest.mark.parametrize("newline_style", list(NEWLINES))
@pytest.mark.parametrize("encoding", list(ODD_BREAKS))
def test_the_fix_changes_only_its_line(tmp_path: Path, encoding: str, newline_style: str) -> None:
    original, lines, buggy = build(encoding, newline_style)
    assert python_lines(original) == lines
    path = tmp_path / "gan.py"
    path.write_bytes(original)
    main(["fix", "--no-cache", str(path)])
    fixed_lines = python_lines(path.read_bytes())
    assert len(fixed_lines) == len(lines)
    changed = [index for index, (old, new) in enumerate(zip(lines, fixed_lines, strict=True)) if old != new]
    assert changed == [buggy]
    assert fixed_lines[buggy] == lines[buggy].replace(BUGGY_LINE.encode(), FIXED_LINE.encode())


@pytest.mark.parametrize("newline_style", list(NEWLINES))
def test_an_ignore_comment_after_odd_breaks_silences_its_own_line(newline_style: str) -> None:
    lines = with_odd_breaks(GAN, ODD_BREAKS["utf-8"])
    backward = next(index for index, line in enumerate(lines) if "# expect: GL101" in line)
    breaks = NEWLINES[newline_style]
    source = "".join(join(lines, breaks))
    findings = check_source(source).findings
    assert [(f.code, f.span.line) for f in findings] == [("GL101", backward + 1)]

    def findings_with_ignore_on(line: int) -> list[int]:
        marked = list(lines)
        marked[line] += "  # graphlife: ignore[GL101]"
        text = "".join(join(marked, breaks))
        return [f.span.line for f in check_source(text).findings]

    assert findings_with_ignore_on(backward - 1) == [backward + 1]  # the line above: not silenced
    assert findings_with_ignore_on(backward) == []


def test_an_edit_past_a_line_end_lands_before_its_break() -> None:
    source = "a = 1\r\nb = 2\x0c\rc = 3\n"
    edits = [TextEdit(Span(1, 40, 1, 40), "  # one"), TextEdit(Span(2, 7, 2, 9), "  # two")]
    assert apply_edits(source, edits) == "a = 1  # one\r\nb = 2\x0c  # two\rc = 3\n"
