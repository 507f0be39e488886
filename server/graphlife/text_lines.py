"""Lines of a source as Python's tokenizer and the Language Server Protocol count them.

Why one module: a line number only means something if every part of graphlife
splits a source the same way as the thing that produced the number. ``ast``
(Python's tokenizer) and LSP both break lines at ``\\n``, ``\\r\\n`` and ``\\r`` only.
``str.splitlines`` also breaks at form feed, ``\\v``, ``\\x1c``-``\\x1e``, U+0085,
U+2028 and U+2029, so one of those in a file shifts every line after it: a fix
edit, an ignore comment or a diagnostic would land on the wrong line. Every
split of a source into lines goes through here.
"""

from __future__ import annotations

import re
import tokenize

#: The line breaks of Python and LSP, longest first so that CR LF is one break.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: The same, kept: ``split`` then returns text and break alternately.
_KEPT_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
#: Characters ``str.splitlines`` breaks at but Python and LSP do not.
_NOT_LINE_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _only_real_breaks(source: str) -> bool:
    """Whether ``str.splitlines`` (fast, in C) splits ``source`` exactly as Python does."""
    return not any(char in source for char in _NOT_LINE_BREAKS)


def split_lines(source: str) -> list[str]:
    """Lines without their breaks, as LSP sees a document: one that ends with a
    line break has an empty last line (``"a\\n"`` has two lines)."""
    return _LINE_BREAK.split(source)


def source_lines(source: str) -> list[str]:
    """Lines without their breaks, as ``str.splitlines`` would give them (no empty
    last line after a final break) but split only where Python splits."""
    if _only_real_breaks(source):
        return source.splitlines()
    lines = _LINE_BREAK.split(source)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def source_lines_keepends(source: str) -> list[str]:
    """Lines with their breaks (``"".join`` gives ``source`` back), split only where Python splits."""
    if _only_real_breaks(source):
        return source.splitlines(keepends=True)
    parts = _KEPT_LINE_BREAK.split(source)
    lines = [text + brk for text, brk in zip(parts[0::2], parts[1::2], strict=False)]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def content_length(line: str) -> int:
    """How many characters of ``line`` (one of :func:`source_lines_keepends`) come before its break."""
    if line.endswith("\r\n"):
        return len(line) - 2
    if line.endswith(("\n", "\r")):
        return len(line) - 1
    return len(line)


class LineOffsets:
    """Line and column -> offset in the source, with a column past a line's end
    placed at that end (before its break, never between CR and LF), as LSP asks.

    Lines are 1-based, columns 1-based code points; a line past the last one is
    the end of the source.
    """

    def __init__(self, source: str) -> None:
        self._starts: list[int] = []
        self._lengths: list[int] = []
        total = 0
        for line in source_lines_keepends(source):
            self._starts.append(total)
            self._lengths.append(content_length(line))
            total += len(line)
        self._end = total

    def offset(self, line: int, column: int) -> int:
        """The offset of 1-based ``line`` and ``column``, clamped to the line and the source."""
        if line - 1 >= len(self._starts):
            return self._end
        index = max(line - 1, 0)
        return self._starts[index] + min(max(column - 1, 0), self._lengths[index])


def detect_encoding(data: bytes) -> str:
    """The encoding Python reads ``data`` in (a UTF-8 BOM, a PEP 263 cookie on one of the first
    two lines, else UTF-8), with lines ended by CR alone counted as lines, as Python counts them
    (``io.BytesIO(data).readline`` would see a CR-only file as one line and miss its cookie).
    Raises ``SyntaxError`` for a cookie naming an unknown encoding, as ``tokenize`` does."""
    lines = (match.group(0) for match in _BYTE_LINES.finditer(data))  # lazy: two lines are read
    encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
    return encoding


#: A line of bytes with its break, as Python splits them.
_BYTE_LINES = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
