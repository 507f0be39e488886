"""A notebook's code cells, joined in cell order into one Python source.

A training notebook builds the model in one cell, the loss in the next and calls
``backward()`` in a third: graph-lifetime bugs span cells, so the cells are
analyzed together, as the kernel would run them top to bottom. Each cell keeps
its own line range in the joined source (the line map), so a finding goes back
to its cell with cell-relative positions.

IPython syntax (``%magic``, ``!shell``, ``%%cell_magic``) is not Python: those
lines (or the whole cell, for a cell magic) are blanked, keeping the line count,
so the rest of the notebook still parses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from graphlife.findings import Line, Message
from graphlife.text_lines import split_lines  # no LSP libraries: the CLI's notebook check uses this


@dataclass(frozen=True)
class CellText:
    """One code cell as the workspace holds it."""

    uri: str
    text: str
    version: int | None
    number: int = 0  # 1-based position in the notebook, markdown cells included (what the user counts)


@dataclass(frozen=True)
class JoinedCell:
    """Where a cell lives in the joined source."""

    uri: str
    version: int | None
    line_offset: int  # lines of the joined source before this cell
    lines: tuple[str, ...]  # the cell's own text, for position conversion
    number: int = 0  # 1-based position in the notebook (0 for a plain file)


def _blank_ipython(lines: list[str]) -> list[str]:
    """Blank IPython-only lines; a ``%%`` cell magic blanks the whole cell."""
    first_code = next((line for line in lines if line.strip()), "")
    if first_code.startswith("%%"):
        return ["" for _ in lines]
    out = []
    continued = False
    scan = _Scanner()
    for line in lines:
        # Inside an open bracket, a triple-quoted string or after a backslash, a line is the
        # rest of a Python statement even when it starts with `%` (`print('%d' \n % x)`).
        python = line if continued or scan.inside else _python_line(line)
        out.append(python)
        if python == line:
            scan.feed(line)
        continued = line.endswith("\\")
    return out


class _Scanner:
    """How many brackets are open, and whether a triple-quoted string is, after the lines fed."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open triple quote

    @property
    def inside(self) -> bool:
        return self.depth > 0 or self.quote is not None

    def feed(self, line: str) -> None:
        index, size = 0, len(line)
        while index < size:
            char = line[index]
            if self.quote is not None:
                if line.startswith(self.quote, index):
                    index += 3
                    self.quote = None
                    continue
                index += 2 if char == "\\" else 1
                continue
            if char == "#":
                return
            if char in "\"'":
                if line.startswith(char * 3, index):
                    self.quote = char * 3
                    index += 3
                    continue
                index += 1
                while index < size and line[index] != char:  # a one-line string
                    index += 2 if line[index] == "\\" else 1
                index += 1
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            index += 1


_HELP = re.compile(r"^\s*(\?\??[\w.]+|[\w.]+\?\??)\s*$")  # `obj?`, `??obj`
_ASSIGNED_MAGIC = re.compile(r"^(\s*[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*)[!%]")  # `files = !ls`


def _python_line(line: str) -> str:
    """A line of IPython as Python the engine can read: a magic, a shell escape or a help
    request becomes ``pass`` at its indentation (so the block around it still parses); a value
    taken from one (``files = !ls``) becomes an unknown call."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped[:1] in ("%", "!") or _HELP.match(line):
        return indent + "pass" if indent else ""
    assigned = _ASSIGNED_MAGIC.match(line)
    if assigned:
        return assigned.group(1) + "get_ipython()"
    return line


def join_cells(cells: list[CellText]) -> tuple[str, tuple[JoinedCell, ...]]:
    """The joined source and each cell's place in it."""
    parts: list[str] = []
    joined: list[JoinedCell] = []
    offset = 0
    for cell in cells:
        lines = split_lines(cell.text)
        # a trailing newline is not an extra line of code
        body = lines[:-1] if lines and lines[-1] == "" and len(lines) > 1 else lines
        joined.append(JoinedCell(cell.uri, cell.version, offset, tuple(lines), cell.number))
        parts.extend(_blank_ipython(body))
        offset += len(body)
    source = "\n".join(parts) + ("\n" if parts else "")
    return source, tuple(joined)


_LINE_NUMBERS = re.compile(r"\b(lines?) (\d+(?:(?:-|, | and )\d+)*)")


def cell_relative_lines(text: str, segment_for_line: Callable[[int], JoinedCell | None]) -> str:
    """Rewrite "line 14" / "lines 5, 6" of the joined source as lines of their cells.

    The engine's messages name lines of the source it analyzed; in a notebook
    that is the joined source, which the user never sees. ``segment_for_line``
    maps a joined line to its :class:`JoinedCell`.
    """

    def one(number: str) -> str:
        segment = segment_for_line(int(number))
        if segment is None:
            return number
        return f"{int(number) - segment.line_offset} (cell {segment.number})"

    def replace(match: re.Match) -> str:
        numbers = re.sub(r"\d+", lambda m: one(m.group(0)), match.group(2))
        return f"{match.group(1)} {numbers}"

    return _LINE_NUMBERS.sub(replace, text)


def cell_relative_text(text: str, segment_for_line: Callable[[int], JoinedCell | None], language: str) -> str:
    """``text`` in ``language``, its lines named as lines of their cells.

    A :class:`~graphlife.findings.Message` names its lines as typed arguments: each becomes
    the line in its cell (``第 6 个单元格第 3 行``), in any language. Plain text (English) is
    rewritten by :func:`cell_relative_lines`, as it always was."""
    if not isinstance(text, Message):
        return cell_relative_lines(text, segment_for_line)

    def in_cell(line: Line) -> Line:
        segment = segment_for_line(line.number) if line.path is None and line.cell is None else None
        if segment is None:
            return line
        return Line(line.number - segment.line_offset, cell=segment.number)

    return text.map_lines(in_cell).in_language(language)
