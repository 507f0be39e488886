"""The server's copy of an open document, kept equal to the client's under incremental edits.

Why not pygls' own ``TextDocument``: it splits lines with ``str.splitlines``,
which also breaks at form feed, ``\\v``, U+0085, U+2028 and others, so after one
of those every edit lands on another line than the client meant; and it places
a position one past a line's end after the line's break (between CR and LF).
LSP splits lines at ``\\n``, ``\\r\\n`` and ``\\r`` only, and a character past the end
of a line means the end of that line. A position past the last line means the
end of the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

from graphlife.text_lines import content_length, source_lines_keepends


class LineExactTextDocument(TextDocument):
    """A ``TextDocument`` whose lines and incremental edits follow LSP's line breaks."""

    @property
    def lines(self) -> Sequence[str]:
        return tuple(source_lines_keepends(self.source))

    def offset_of(self, lines: Sequence[str], position: types.Position) -> int:
        """The code-point offset in the source of an LSP ``position`` (client code units), clamped."""
        line = max(position.line, 0)
        if line >= len(lines):
            return sum(len(text) for text in lines)
        start = sum(len(text) for text in lines[:line])
        text = lines[line][: content_length(lines[line])]
        wanted = max(position.character, 0)
        units = chars = 0
        for char in text:
            if units >= wanted:
                break
            units += self.position_codec.client_num_units(char)
            chars += 1
        return start + chars

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        lines = self.lines
        start = self.offset_of(lines, change.range.start)
        end = max(self.offset_of(lines, change.range.end), start)
        source = self.source
        self._source = source[:start] + change.text + source[end:]


class LineExactWorkspace(Workspace):
    """A pygls ``Workspace`` whose documents (notebook cells too) are :class:`LineExactTextDocument`."""

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LineExactTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )


def line_exact(workspace: Any) -> None:
    """Make a pygls ``Workspace`` create :class:`LineExactTextDocument` from now on
    (pygls builds the workspace itself inside ``initialize``; no document is open yet)."""
    if type(workspace) is Workspace:
        workspace.__class__ = LineExactWorkspace
