"""Diagnostics across the user's modules: a check of ``train.py`` follows its imports, and the
bug it reaches in ``layers.py`` shows on ``layers.py``, kept up to date as either file changes
(in the editor or on disk) and withdrawn when ``train.py`` closes."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import initialize, open_document, replace_all, wait_for_diagnostics, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio

LAYERS = """\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.linear(x)
        y = torch.sigmoid(h)
        y.mul_(2)
        return y
"""
INPLACE_LINE = 12  # 0-based: `y.mul_(2)`
LAYERS_FIXED = LAYERS.replace("        y.mul_(2)\n", "        y = y * 2\n")

MODELS = """\
import torch.nn as nn

from layers import Block


class Net(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.block = Block(dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        return self.head(self.block(x))
"""

TRAIN = """\
import torch

from models import Net

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(4, 8)
    loss = model(x).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""
BACKWARD_LINE = 10  # 0-based: `loss.backward()`


def _project(folder: Path) -> dict[str, Path]:
    files = {"layers": LAYERS, "models": MODELS, "train": TRAIN}
    paths = {}
    for name, text in files.items():
        paths[name] = folder / f"{name}.py"
        paths[name].write_text(text, encoding="utf-8")
    return paths


def _inplace(diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.code == "GL102" and d.range.start.line == INPLACE_LINE]


def _has_inplace(diagnostics: list[types.Diagnostic]) -> bool:
    return len(_inplace(diagnostics)) == 1


def _no_inplace(diagnostics: list[types.Diagnostic]) -> bool:
    return not any(d.code == "GL102" for d in diagnostics)


def _change_on_disk(client: LanguageClient, path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed)]
        )
    )


async def test_a_bug_in_an_imported_module_follows_its_edits_and_its_importer(client: LanguageClient, workdir):
    paths = _project(workdir)
    await initialize(client, root=workdir)
    watched = [
        watcher["globPattern"]
        for registration in client.registrations
        if registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        for watcher in registration.register_options["watchers"]
    ]
    assert "**/*.py" in watched
    layers_uri = paths["layers"].as_uri()

    # Opening train.py alone: the in-place op is reported where it is, in layers.py (not open).
    train_uri = open_document(client, paths["train"])
    own = await wait_for_publish(client, train_uri, version=1)
    assert not any(d.code == "GL102" for d in own.diagnostics), own.diagnostics
    published = await wait_for_diagnostics(client, layers_uri, _has_inplace)
    (diagnostic,) = _inplace(published.diagnostics)
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.range.start.character == 8 and diagnostic.range.end.line == INPLACE_LINE
    assert "train.py" in diagnostic.message
    assert any(
        r.location.uri == train_uri and r.location.range.start.line == BACKWARD_LINE
        for r in diagnostic.related_information or []
    ), diagnostic.related_information
    assert any(r.location.uri == layers_uri for r in diagnostic.related_information or [])

    # layers.py opened: its own analysis finds nothing there; train.py's finding stays, once.
    mark = len(client.published)
    open_document(client, paths["layers"])
    opened = await wait_for_publish(client, layers_uri, version=1, after=mark)
    assert len(_inplace(opened.diagnostics)) == 1, opened.diagnostics

    # Hover on the in-place op explains the finding train.py's analysis made (the rule and what
    # torch says; the message naming train.py is the diagnostic's, shown with it); no fix offered.
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=layers_uri),
            position=types.Position(line=INPLACE_LINE, character=10),
        )
    )
    assert hover is not None and "GL102" in hover.contents.value and "**torch:**" in hover.contents.value
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=layers_uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    assert not [a for a in actions or [] if isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix]

    # Editing the open buffer of layers.py (not saved) re-analyzes train.py: the bug is gone...
    mark = len(client.published)
    replace_all(client, layers_uri, LAYERS_FIXED, 2, LAYERS)
    await wait_for_diagnostics(client, layers_uri, _no_inplace, after=mark)
    # ... and reverting brings it back.
    mark = len(client.published)
    replace_all(client, layers_uri, LAYERS, 3, LAYERS_FIXED)
    await wait_for_diagnostics(client, layers_uri, _has_inplace, after=mark)

    # Closed again: train.py reads layers.py from disk, where a change is announced by the watcher.
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=layers_uri))
    )
    mark = len(client.published)
    _change_on_disk(client, paths["layers"], LAYERS_FIXED)
    await wait_for_diagnostics(client, layers_uri, _no_inplace, after=mark)
    mark = len(client.published)
    _change_on_disk(client, paths["layers"], LAYERS)
    await wait_for_diagnostics(client, layers_uri, _has_inplace, after=mark)

    # Closing train.py withdraws what its analysis said about layers.py.
    mark = len(client.published)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=train_uri))
    )
    await wait_for_diagnostics(client, layers_uri, lambda diagnostics: not diagnostics, after=mark)


async def test_an_edit_in_a_module_two_imports_away_updates_the_open_importer(client: LanguageClient, workdir):
    """models.py is what train.py imports; layers.py is what models.py imports: train.py's
    analysis read both, and an edit of either (open, unsaved) re-analyzes it."""
    paths = _project(workdir)
    await initialize(client, root=workdir)
    train_uri = open_document(client, paths["train"])
    layers_uri = paths["layers"].as_uri()
    await wait_for_diagnostics(client, layers_uri, _has_inplace)
    models_uri = open_document(client, paths["models"])
    await wait_for_publish(client, models_uri, version=1)

    # models.py no longer uses the block: nothing in layers.py runs, nothing is reported there.
    without_block = MODELS.replace("self.head(self.block(x))", "self.head(x)")
    mark = len(client.published)
    replace_all(client, models_uri, without_block, 2, MODELS)
    await wait_for_diagnostics(client, layers_uri, _no_inplace, after=mark)
    assert train_uri  # still open: its analysis is the one that withdrew the finding


async def test_a_file_created_on_disk_resolves_an_import_that_named_nothing(client: LanguageClient, workdir):
    paths = _project(workdir)
    paths["layers"].unlink()  # models.py's import of layers names nothing yet
    await initialize(client, root=workdir)
    train_uri = open_document(client, paths["train"])
    await wait_for_publish(client, train_uri, version=1)
    layers = workdir / "layers.py"
    mark = len(client.published)
    layers.write_text(LAYERS, encoding="utf-8")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=layers.as_uri(), type=types.FileChangeType.Created)]
        )
    )
    await wait_for_diagnostics(client, layers.as_uri(), _has_inplace, after=mark)


async def test_the_hover_story_names_lines_in_the_imported_module(client: LanguageClient, workdir):
    """Hovering `loss` in train.py tells where its graph was built and saved: in layers.py."""
    paths = _project(workdir)
    await initialize(client, root=workdir)
    train_uri = open_document(client, paths["train"])
    await wait_for_publish(client, train_uri, version=1)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=train_uri),
            position=types.Position(line=BACKWARD_LINE - 2, character=5),  # `loss = model(x).sum()`
        )
    )
    assert hover is not None, "no hover on `loss`"
    assert "of layers.py" in hover.contents.value, hover.contents.value
