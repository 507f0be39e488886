"""Fix-all on a notebook: the safe fixes, cell by cell, as `graphlife check --fix` writes them.

VS Code asks for a notebook's on-save actions in two steps (`notebook.codeActionsOnSave`):
`notebook.source.fixAll.graphlife` once, on the first cell, may edit every cell;
`source.fixAll.graphlife` is asked on every cell at once, and each may edit only its cell.
The "Fix all graphlife problems" menu entry fixes the whole notebook.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsp_helpers import apply_text_edits, edits_for_uri, initialize, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_notebook import HELPER_CELLS, _open

from graphlife.cli import main

pytestmark = pytest.mark.asyncio

FIX_ALL = "source.fixAll.graphlife"
NOTEBOOK_FIX_ALL = "notebook.source.fixAll.graphlife"

#: A manual SGD update on a leaf (GL103), whose safe fix (`with torch.no_grad():`) stays in its cell.
MANUAL_CELLS = [
    (types.NotebookCellKind.Code, "import torch\n\nw = torch.randn(3, requires_grad=True)\nlr = 0.1\n"),
    (types.NotebookCellKind.Markup, "## Training"),
    (types.NotebookCellKind.Code,
     "for step in range(3):\n    loss = (w * w).sum()\n    loss.backward()\n    w -= lr * w.grad\n"),
]


def cli_fixed_cells(folder: Path, cells) -> list[str]:
    """The code cells as `graphlife check --fix` writes the same notebook."""
    notebook = {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
                     "language_info": {"name": "python"}},
        "cells": [{"cell_type": "code" if kind == types.NotebookCellKind.Code else "markdown", "metadata": {},
                   "source": text, **({"outputs": [], "execution_count": None}
                                      if kind == types.NotebookCellKind.Code else {})}
                  for kind, text in cells],
    }
    path = folder / "cli" / "train.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(notebook, indent=1))
    main(["check", "--fix", "--no-cache", str(path)])
    fixed = json.loads(path.read_text())
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in fixed["cells"]]


async def _source_actions(client: LanguageClient, uri: str, kind: str) -> list[types.CodeAction]:
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=[], only=[kind]),
        )
    )


async def _resolved(client: LanguageClient, actions: list[types.CodeAction], kind: str) -> types.CodeAction:
    (action,) = [a for a in actions if a.kind == kind]
    return await client.code_action_resolve_async(action)


async def test_fix_all_on_save_fixes_each_cell_as_graphlife_fix_does(client: LanguageClient, workdir, capsys):
    expected = cli_fixed_cells(workdir, MANUAL_CELLS)
    capsys.readouterr()
    assert expected[2] != MANUAL_CELLS[2][1], "the command line fixes the loop's cell"
    await initialize(client)
    _, cells = _open(client, workdir, MANUAL_CELLS)
    published = await wait_for_publish(client, cells[2], version=1)
    assert "GL103" in [d.code for d in published.diagnostics]
    for index in (0, 2):  # VS Code asks every cell; each answer edits that cell alone
        resolved = await _resolved(client, await _source_actions(client, cells[index], FIX_ALL), FIX_ALL)
        changed = [c.text_document.uri for c in (resolved.edit.document_changes if resolved.edit else [])]
        if index == 0:
            assert changed == [], "the first cell has nothing to fix"
            continue
        assert changed == [cells[2]]
        assert apply_text_edits(MANUAL_CELLS[2][1], edits_for_uri(resolved.edit, cells[2])) == expected[2]


async def test_the_notebook_fix_all_moves_no_grad_across_cells_as_graphlife_fix_does(client, workdir, capsys):
    """The shared `@torch.no_grad()` helper: its fix drops the decorator in one cell and wraps
    the evaluation call in another. The notebook-level fix-all (and the menu entry) applies it;
    a cell's own on-save fix-all never applies half of it."""
    expected = cli_fixed_cells(workdir, HELPER_CELLS)
    capsys.readouterr()
    assert expected[0] != HELPER_CELLS[0][1] and expected[2] != HELPER_CELLS[2][1]
    await initialize(client)
    _, cells = _open(client, workdir, HELPER_CELLS)
    published = await wait_for_publish(client, cells[1], version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL104")

    whole = await _resolved(client, await _source_actions(client, cells[0], NOTEBOOK_FIX_ALL), NOTEBOOK_FIX_ALL)
    menu_actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cells[1]),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    menu = await client.code_action_resolve_async(
        next(a for a in menu_actions if a.title == "Fix all graphlife problems"))
    for resolved in (whole, menu):
        for index, (_, text) in enumerate(HELPER_CELLS):
            assert apply_text_edits(text, edits_for_uri(resolved.edit, cells[index])) == expected[index]

    for uri in cells:
        own = await _resolved(client, await _source_actions(client, uri, FIX_ALL), FIX_ALL)
        assert own.edit is None or not own.edit.document_changes, "a fix across cells is never split"


async def test_a_plain_file_gets_no_notebook_fix_all(client: LanguageClient, workdir):
    from lsp_helpers import open_document
    from sources import MANUAL_UPDATE

    await initialize(client)
    uri = open_document(client, workdir / "sgd.py", MANUAL_UPDATE)
    await wait_for_publish(client, uri, version=1)
    assert [a.kind for a in await _source_actions(client, uri, NOTEBOOK_FIX_ALL)] == []
    assert [a.kind for a in await _source_actions(client, uri, FIX_ALL)] == [FIX_ALL]
