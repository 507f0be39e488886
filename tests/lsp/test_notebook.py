"""Notebooks (LSP 3.17 notebook sync): cells analyzed together, diagnostics on the right cell."""

from __future__ import annotations

import asyncio

import pytest
from lsp_helpers import initialize, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio

CELLS = [
    (types.NotebookCellKind.Code, "import torch\n\nw = torch.randn(3, requires_grad=True)\n"),
    (types.NotebookCellKind.Markup, "# The loss\nWe call backward twice below."),
    (types.NotebookCellKind.Code, "loss = (w * w).sum()\nloss.backward()"),
    (types.NotebookCellKind.Code, "%matplotlib inline\nprint('again')\nloss.backward()\n"),
]


def _open(client: LanguageClient, folder, cells=CELLS):
    notebook_uri = (folder / "train.ipynb").as_uri()
    cell_uris = [f"vscode-notebook-cell:{(folder / 'train.ipynb').as_posix()}#C{i}" for i in range(len(cells))]
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=kind, document=uri) for (kind, _), uri in zip(cells, cell_uris)],
            ),
            cell_text_documents=[
                types.TextDocumentItem(
                    uri=uri,
                    language_id="python" if kind == types.NotebookCellKind.Code else "markdown",
                    version=1,
                    text=text,
                )
                for (kind, text), uri in zip(cells, cell_uris)
            ],
        )
    )
    return notebook_uri, cell_uris


async def test_cells_are_analyzed_together_and_findings_land_on_their_cell(client: LanguageClient, workdir):
    await initialize(client)
    _, cells = _open(client, workdir)
    last = await wait_for_publish(client, cells[3], version=1)
    gl101 = [d for d in last.diagnostics if d.code == "GL101"]
    assert len(gl101) == 1, last.diagnostics
    assert gl101[0].range.start == types.Position(line=2, character=0)  # cell-relative
    assert gl101[0].range.end == types.Position(line=2, character=len("loss.backward()"))
    # the graph was freed by the backward in the loss cell: related information points there
    assert any(
        r.location.uri == cells[2] and r.location.range.start.line == 1
        for r in gl101[0].related_information or []
    )
    # line numbers in the message are the cells' own ("line 2 (cell 3)"), not the joined source's
    assert "line 2 (cell 3)" in gl101[0].message, gl101[0].message
    for uri in (cells[0], cells[2]):
        published = await wait_for_publish(client, uri, version=1)
        assert [d for d in published.diagnostics if d.code == "GL101"] == []
    assert all(p.uri != cells[1] for _, p in client.published), "markdown cells get no diagnostics"


async def test_editing_a_cell_updates_that_cells_diagnostics(client: LanguageClient, workdir):
    await initialize(client)
    notebook_uri, cells = _open(client, workdir)
    await wait_for_publish(client, cells[3], version=1)
    mark = len(client.published)
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook_uri, version=2),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=cells[3], version=2),
                            changes=[
                                types.TextDocumentContentChangePartial(
                                    range=types.Range(
                                        start=types.Position(line=2, character=0),
                                        end=types.Position(line=2, character=len("loss.backward()")),
                                    ),
                                    text="print(loss.item())",
                                )
                            ],
                        )
                    ]
                )
            ),
        )
    )
    updated = await wait_for_publish(client, cells[3], version=2, after=mark)
    assert [d for d in updated.diagnostics if d.code == "GL101"] == []


async def test_closing_the_notebook_clears_every_cell(client: LanguageClient, workdir):
    await initialize(client)
    notebook_uri, cells = _open(client, workdir)
    await wait_for_publish(client, cells[3], version=1)
    await asyncio.sleep(0.2)
    mark = len(client.published)
    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=notebook_uri),
            cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in cells],
        )
    )
    cleared = await wait_for_publish(client, cells[3], after=mark)
    assert list(cleared.diagnostics) == []


async def test_hover_works_in_a_cell(client: LanguageClient, workdir):
    await initialize(client)
    _, cells = _open(client, workdir)
    await wait_for_publish(client, cells[3], version=1)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=cells[3]), position=types.Position(line=2, character=6)
        )
    )
    assert hover is not None
    assert "GL101" in hover.contents.value
    # One numbering everywhere, VS Code's ("Cell 3 of 4" counts the markdown cell too), as the
    # diagnostic's message and `graphlife check` name cells: the story of `loss` names its cells.
    story = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=cells[3]),
                          position=types.Position(line=2, character=1))
    )
    assert story is not None and "(cell 3)" in story.contents.value, story and story.contents.value
    assert "(cell 2)" not in story.contents.value


async def test_ignore_action_edits_the_cell(client: LanguageClient, workdir):
    await initialize(client)
    _, cells = _open(client, workdir)
    last = await wait_for_publish(client, cells[3], version=1)
    diagnostic = next(d for d in last.diagnostics if d.code == "GL101")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cells[3]),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    ignore = next(a for a in actions if a.title == "Ignore GL101 on this line")
    resolved = await client.code_action_resolve_async(ignore)
    changes = resolved.edit.document_changes
    assert [c.text_document.uri for c in changes] == [cells[3]]
    assert changes[0].text_document.version == 1
    (edit,) = changes[0].edits
    assert edit.range.start == types.Position(line=2, character=len("loss.backward()"))
    assert edit.new_text == "  # graphlife: ignore[GL101]"


HELPER_CELLS = [
    (types.NotebookCellKind.Code,
     "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nmodel = nn.Linear(3, 1)\n"
     "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n@torch.no_grad()\ndef predict(net, x):\n"
     "    return net(x)\n"),
    (types.NotebookCellKind.Code,
     "for step in range(2):\n    out = predict(model, torch.randn(4, 3))\n"
     "    loss = F.mse_loss(out, torch.randn(4, 1))\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"),
    (types.NotebookCellKind.Code, "val = predict(model, torch.randn(4, 3))\n"),
]


async def test_a_fix_in_a_notebook_edits_each_cell_it_touches(client: LanguageClient, workdir):
    """Moving `no_grad` from the helper (cell 1) to its evaluation call (cell 3): one workspace edit,
    each change in the cell it belongs to, pinned to that cell's version."""
    await initialize(client)
    _, cells = _open(client, workdir, HELPER_CELLS)
    published = await wait_for_publish(client, cells[1], version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL104")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cells[1]),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    fix = next(a for a in actions if a.title.startswith("Keep the graph: move `@torch.no_grad()`"))
    assert fix.is_preferred
    resolved = await client.code_action_resolve_async(fix)
    changes = {c.text_document.uri: c for c in resolved.edit.document_changes}
    assert sorted(changes) == sorted([cells[0], cells[2]])
    (drop,) = changes[cells[0]].edits
    assert (drop.range.start.line, drop.range.end.line, drop.new_text) == (8, 9, "")
    (wrap,) = changes[cells[2]].edits
    assert wrap.new_text == "with torch.no_grad():\n    val = predict(model, torch.randn(4, 3))"


async def test_ignore_in_this_notebook_writes_the_comment_in_the_first_code_cell(client: LanguageClient, workdir):
    """The notebook's cells are one program: a file-level comment in any cell covers them all."""
    await initialize(client)
    _, cells = _open(client, workdir)
    last = await wait_for_publish(client, cells[3], version=1)
    diagnostic = next(d for d in last.diagnostics if d.code == "GL101")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cells[3]),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    titles = [a.title for a in actions]
    assert "Fix all graphlife problems" not in titles  # no safe fix here: fix-all would change nothing
    ignore = next(a for a in actions if a.title == "Ignore GL101 in this notebook")
    resolved = await client.code_action_resolve_async(ignore)
    changes = resolved.edit.document_changes
    assert [c.text_document.uri for c in changes] == [cells[0]]
    (edit,) = changes[0].edits
    assert edit.range.start == types.Position(line=0, character=0)
    assert edit.new_text == "# graphlife: ignore-file[GL101]\n"
