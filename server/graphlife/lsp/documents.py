"""What one analysis sees: a frozen copy of a document, or of a notebook's cells.

The unit of analysis is a *key*: a text document's URI, or a notebook's URI for
all its cells. A :class:`Snapshot` copies the text and the versions at the
moment the analysis starts; the ``stamp`` (all versions involved) says later
whether the result still describes what the editor shows, so a result for
version 3 is never published once version 4 has arrived.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from graphlife.findings import localized
from graphlife.lsp.notebooks import CellText, JoinedCell, cell_relative_text, join_cells
from graphlife.lsp.positions import split_lines

#: The notebook type and cell language whose cells we analyze.
NOTEBOOK_TYPE = "jupyter-notebook"
CELL_LANGUAGE = "python"


@dataclass(frozen=True)
class Snapshot:
    """The analyzed source, where it came from, and how to map lines back."""

    key: str
    source: str
    path: str | None  # for [tool.graphlife] lookup; None for unsaved documents
    segments: tuple[JoinedCell, ...]  # one for a text document, one per code cell
    stamp: tuple
    is_notebook: bool

    def segment_for_line(self, line: int) -> JoinedCell | None:
        """The document holding 1-based line ``line`` of :attr:`source`."""
        for segment in reversed(self.segments):
            if line > segment.line_offset:
                return segment if line - segment.line_offset <= max(len(segment.lines), 1) else None
        return None

    def user_text(self, text: str, language: str = "en") -> str:
        """A message in ``language`` with its line numbers as the user sees them (cell-relative
        in a notebook)."""
        if not self.is_notebook:
            return localized(text, language)
        return cell_relative_text(text, self.segment_for_line, language)

    def segment_for_uri(self, uri: str) -> JoinedCell | None:
        wanted = unquote(uri)
        return next((s for s in self.segments if unquote(s.uri) == wanted), None)


def fs_path(uri: str) -> str | None:
    """A local file path for ``file:`` URIs; ``None`` for untitled or remote documents."""
    if urlparse(uri).scheme not in ("file", ""):
        return None
    return to_fs_path(uri)


def key_for(workspace: Workspace, uri: str) -> str:
    """The analysis key of a document: its notebook's URI when it is a cell."""
    notebook = workspace.get_notebook_document(cell_uri=uri)
    return notebook.uri if notebook is not None else uri


def _code_cells(notebook: types.NotebookDocument) -> list[types.NotebookCell]:
    return [cell for cell in notebook.cells if cell.kind == types.NotebookCellKind.Code]


def take_snapshot(workspace: Workspace, key: str) -> Snapshot | None:
    """A snapshot of the document or notebook ``key``; ``None`` when it is not open."""
    notebook = workspace.get_notebook_document(notebook_uri=key)
    if notebook is not None:
        cells: list[CellText] = []
        for number, cell in enumerate(notebook.cells, start=1):
            if cell.kind != types.NotebookCellKind.Code:
                continue
            doc = workspace.text_documents.get(unquote(cell.document))
            if doc is None or (doc.language_id or CELL_LANGUAGE) != CELL_LANGUAGE:
                continue
            cells.append(CellText(cell.document, doc.source, doc.version, number))
        source, segments = join_cells(cells)
        stamp = (notebook.version, tuple((c.uri, c.version) for c in cells))
        return Snapshot(key, source, fs_path(key), segments, stamp, True)
    doc = workspace.text_documents.get(unquote(key))
    if doc is None:
        return None
    source = doc.source
    segment = JoinedCell(doc.uri, doc.version, 0, tuple(split_lines(source)))
    return Snapshot(key, source, fs_path(doc.uri), (segment,), (doc.version,), False)


def current_stamp(workspace: Workspace, key: str) -> tuple | None:
    """The versions ``key`` has now (cheap: no text copied); ``None`` once closed."""
    notebook = workspace.get_notebook_document(notebook_uri=key)
    if notebook is not None:
        cells = []
        for cell in _code_cells(notebook):
            doc = workspace.text_documents.get(unquote(cell.document))
            if doc is None or (doc.language_id or CELL_LANGUAGE) != CELL_LANGUAGE:
                continue
            cells.append((cell.document, doc.version))
        return (notebook.version, tuple(cells))
    doc = workspace.text_documents.get(unquote(key))
    return None if doc is None else (doc.version,)


def open_keys(workspace: Workspace) -> list[str]:
    """Every open analysis key: plain Python documents and notebooks."""
    cell_uris = {unquote(c.document) for nb in workspace.notebook_documents.values() for c in nb.cells}
    keys = [nb.uri for nb in workspace.notebook_documents.values()]
    keys += [
        doc.uri
        for uri, doc in workspace.text_documents.items()
        if uri not in cell_uris and (doc.language_id in (None, "python") or uri.endswith((".py", ".pyi")))
    ]
    return keys


def open_buffers(workspace: Workspace) -> dict[str, str]:
    """The text of every open Python file, by its path: what an analysis reads for a module
    the user has open (an unsaved edit wins over the disk, as the user sees it)."""
    buffers = {}
    for uri, doc in workspace.text_documents.items():
        path = fs_path(uri) if uri.endswith((".py", ".pyi")) else None
        if path is not None:
            buffers[path] = doc.source
    return buffers

