"""Fix-all in the editor: a file as ``graphlife fix`` fixes it, a notebook cell by cell as it does.

Why a notebook has two fix-alls: VS Code runs a notebook's on-save actions in two steps
(``notebook.codeActionsOnSave``). A ``notebook.source.*`` action is asked for once, on the
first cell, and may edit every cell; then each ``source.*`` action is asked for on every cell
at once, and each may edit only its own cell. So:

- ``notebook.source.fixAll.graphlife`` (and the "Fix all graphlife problems" menu entry on a
  cell) is :func:`graphlife.fixes.notebooks.fix_cells` on the whole notebook: the best safe
  fix of every finding, verified together, each edit moved into its cell;
- ``source.fixAll.graphlife`` on a cell is the same fix-all limited to fixes whose edits all
  lie in one cell, and gives that cell its part. The cells' requests run side by side on one
  analysis: together they apply exactly the fix-all computed once (and verified as a whole),
  and a fix that spans cells is never applied half.

Each document that changes gets one edit that replaces its text, as fix-all on a file does.
The result is computed once per analyzed version and kind (the cells' requests share it).
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from graphlife.lsp.linting import Analysis
from graphlife.lsp.notebooks import CellText, join_cells
from graphlife.lsp.positions import document_end

if TYPE_CHECKING:
    from graphlife.fixes.verify import Analyze, Modules

#: The notebook-level fix-all (VS Code asks for it on the first cell; it may edit every cell).
NOTEBOOK_FIX_ALL_KIND = "notebook.source.fixAll.graphlife"

#: What a fix-all action covers: the file, the whole notebook, or one cell of it.
FILE, NOTEBOOK, CELL = "file", "notebook", "cell"

_LOCK = ("graphlife", "fixAll", "lock")


def fixed_texts(analysis: Analysis, scope: str, modules: Modules | None = None,
                analyze: Analyze | None = None) -> dict[str, str]:
    """Each document's text after fix-all (uri -> text), for the documents that change.

    ``scope`` is :data:`FILE` (the document), :data:`NOTEBOOK` (every cell, any fix) or
    :data:`CELL` (every cell, fixes within one cell only; the caller keeps its cell's part).
    Runs on a worker thread; cached on the analysis, so the cells of one save share it."""
    if not analysis.snapshot.is_notebook:
        scope = FILE
    elif scope not in (NOTEBOOK, CELL):
        scope = NOTEBOOK
    key = ("graphlife", "fixAll", scope)
    lock = analysis.fix_cache.setdefault(_LOCK, threading.Lock())
    with lock:
        if key not in analysis.fix_cache:
            analysis.fix_cache[key] = _compute(analysis, key[2], modules, analyze)
        return dict(analysis.fix_cache[key])


def _compute(analysis: Analysis, scope: str, modules: Modules | None, analyze: Analyze | None) -> dict[str, str]:
    snapshot = analysis.snapshot
    if scope == FILE:
        from graphlife.fixes import fix_source  # noqa: PLC0415 - the fixer loads with the first fix

        fixed = fix_source(snapshot.source, snapshot.path, analysis.config, modules=modules, analyze=analyze)
        return {snapshot.segments[0].uri: fixed} if fixed != snapshot.source else {}
    from graphlife.fixes.notebooks import fix_cells  # noqa: PLC0415 - the fixer loads with the first fix

    texts = ["\n".join(segment.lines) for segment in snapshot.segments]
    numbers = [segment.number for segment in snapshot.segments]
    fixed_cells = fix_cells(texts, partial(_join, numbers), snapshot.path, analysis.config, modules=modules,
                            within_one_cell=scope == CELL, analyze=analyze)
    return {segment.uri: after for segment, before, after in zip(snapshot.segments, texts, fixed_cells, strict=True)
            if after != before}


def _join(numbers: list[int], texts: list[str]) -> tuple[str, list[int]]:
    """The cells joined as the language server joins them for analysis (IPython lines blanked)."""
    joined, cells = join_cells([CellText(uri=str(number), text=text, version=None, number=number)
                                for number, text in zip(numbers, texts, strict=True)])
    return joined, [cell.line_offset for cell in cells]


def fix_all_edits(analysis: Analysis, scope: str, uri: str, codec: PositionCodec,
                  modules: Modules | None = None, analyze: Analyze | None = None) -> dict[str, list[types.TextEdit]]:
    """The LSP edits of a fix-all: each changed document's text replaced (for :data:`CELL`,
    only the cell ``uri``, as VS Code lets a cell's on-save action edit only that cell)."""
    texts = fixed_texts(analysis, scope, modules, analyze)
    edits: dict[str, list[types.TextEdit]] = {}
    for segment in analysis.snapshot.segments:
        if segment.uri not in texts or (scope == CELL and analysis.snapshot.segment_for_uri(uri) is not segment):
            continue
        whole = types.Range(start=types.Position(line=0, character=0), end=document_end(list(segment.lines), codec))
        edits[segment.uri] = [types.TextEdit(range=whole, new_text=texts[segment.uri])]
    return edits
