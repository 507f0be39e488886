"""``graphlife fix`` on a notebook: the cells analyzed together, each fix written into its cell.

Why cell by cell: the engine reads a notebook as its code cells joined in order (as the
editor does), so a finding and its fix are in the coordinates of the joined text. A fix
is applied only when each of its edits lies inside one cell and touches only lines that
are the cell's own code (not an IPython line the join blanked); the edit is then moved
into that cell's coordinates. Rounds repeat, as for a file, until nothing changes.
Everything else in the notebook (outputs, metadata, markdown cells) stays as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from graphlife.config import Config
from graphlife.findings import Span
from graphlife.fixes import TextEdit
from graphlife.fixes.apply import MAX_ROUNDS, apply_edits, choose_fixes
from graphlife.fixes.verify import Analyze, FixVerifier, Modules, engine_analyze, new_errors
from graphlife.text_lines import source_lines, source_lines_keepends

#: The cells' texts -> the joined source the engine reads, and each cell's first line in it
#: minus one (the front end's own join, so a notebook is analyzed as it is everywhere else).
Join = Callable[[list[str]], tuple[str, list[int]]]


def fix_cells(cells: Sequence[str], join: Join, path: str | None = None, config: Config | None = None, *,
              unsafe: bool = False, modules: Modules | None = None, within_one_cell: bool = False,
              analyze: Analyze | None = None) -> list[str]:
    """The code cells' texts with the best accepted fix of every finding applied (each
    analysis following the notebook's imports when ``modules`` is given, as the editor's does).
    With ``within_one_cell``, only fixes whose edits all lie in one cell (the editor's on-save
    fix-all of a cell, which may edit that cell alone: a fix across cells is never split).
    ``analyze`` replaces the checker (the editor's incremental one)."""
    # edited with a final newline each (a line added after a cell's last line must start a
    # line of its own); the cells that had none get theirs back at the end
    texts = [text if text.endswith("\n") or not text else text + "\n" for text in cells]
    analyze = analyze or engine_analyze(path, config, modules)
    for _ in range(MAX_ROUNDS):
        source, offsets = join(texts)
        findings = analyze(source)
        if findings is None:
            break
        placer = _Placer(source, texts, offsets)
        allowed = placer.fits_one_cell if within_one_cell else placer.fits
        chosen = choose_fixes(source, findings, FixVerifier(source, analyze, findings), unsafe, allowed=allowed)
        if not chosen:
            break
        fixed = list(texts)
        per_cell: dict[int, list[TextEdit]] = {}
        for fix in chosen:
            for cell, edit in placer.place(fix) or ():
                per_cell.setdefault(cell, []).append(edit)
        for cell, cell_edits in per_cell.items():
            fixed[cell] = apply_edits(fixed[cell], cell_edits)
        after = analyze(join(fixed)[0])
        if after is None or new_errors(findings, after) or fixed == texts:
            break
        texts = fixed
    return [text[:-1] if not original.endswith("\n") and text.endswith("\n") else text
            for original, text in zip(cells, texts, strict=True)]


class _Placer:
    """Moves edits of the joined source into the cells they fall in."""

    def __init__(self, source: str, cells: list[str], offsets: list[int]) -> None:
        self.joined = source_lines(source)
        self.cells = [source_lines(text) for text in cells]
        self.offsets = offsets

    def fits(self, edits: Sequence[TextEdit]) -> bool:
        """Every edit falls inside one cell's own code."""
        return self.place(edits) is not None

    def fits_one_cell(self, edits: Sequence[TextEdit]) -> bool:
        """Every edit falls inside the own code of one and the same cell."""
        placed = self.place(edits)
        return placed is not None and len({cell for cell, _ in placed}) == 1

    def place(self, edits: Sequence[TextEdit]) -> list[tuple[int, TextEdit]] | None:
        placed = []
        for edit in edits:
            where = self._one(edit)
            if where is None:
                return None
            placed.append(where)
        return placed

    def _one(self, edit: TextEdit) -> tuple[int, TextEdit] | None:
        """The cell an edit falls in, and the edit in its coordinates: inside one cell's lines,
        or (an insertion after a cell's last line) at its end."""
        span = edit.span
        end_line = span.end_line - 1 if span.end_column == 1 and span.end_line > span.line else span.end_line
        candidates = [i for i, offset in enumerate(self.offsets)
                      if offset + 1 <= span.line and end_line <= offset + len(self.cells[i])
                      and span.line <= offset + len(self.cells[i])]
        if not candidates:
            candidates = [i for i, offset in enumerate(self.offsets)
                          if span.line == span.end_line == offset + len(self.cells[i]) + 1
                          and span.column == span.end_column == 1]
        for index in candidates[:1]:
            offset, lines = self.offsets[index], self.cells[index]
            first, last = offset + 1, offset + len(lines)
            touched = range(span.line, min(end_line, last) + 1)
            if any(self._line(n) != lines[n - first] for n in touched if n <= last):
                return None  # a line the join changed (an IPython magic): not the cell's own code
            local = Span(span.line - offset, span.column, span.end_line - offset, span.end_column)
            return index, TextEdit(local, edit.new_text)
        return None

    def _line(self, number: int) -> str:
        return self.joined[number - 1] if 0 < number <= len(self.joined) else ""


def fix_notebook(text: str, join: Join, path: str | None = None, config: Config | None = None, *,
                 unsafe: bool = False) -> str:
    """A notebook file's text with its code cells fixed (the same text when nothing changes)."""
    notebook = json.loads(text)
    code = [cell for cell in notebook.get("cells", []) if cell.get("cell_type") == "code"]
    sources = [_source_text(cell.get("source", "")) for cell in code]
    fixed = fix_cells(sources, join, path, config, unsafe=unsafe)
    if fixed == sources:
        return text
    for cell, before, after in zip(code, sources, fixed, strict=True):
        if before != after:
            cell["source"] = source_lines_keepends(after) if isinstance(cell.get("source"), list) else after
    indent = _indent_of(text)
    return json.dumps(notebook, indent=indent, ensure_ascii=False) + ("\n" if text.endswith("\n") else "")


def _source_text(source: object) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _indent_of(text: str) -> int:
    """The indentation the notebook was written with (Jupyter writes 1), so that only the
    changed cells show up in a diff."""
    for line in source_lines(text)[1:2]:
        return max(len(line) - len(line.lstrip(" ")), 1)
    return 1
