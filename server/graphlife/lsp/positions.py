"""The one place where graphlife positions meet LSP positions.

graphlife's :class:`~graphlife.findings.Span` counts 1-based lines and 1-based
*character* (code point) columns, end exclusive. LSP counts 0-based lines and
columns in the negotiated encoding's code units (UTF-16 unless the client offers
another). Every conversion in the server goes through the functions here, with
the document's ``PositionCodec`` (pygls picks it from the negotiation), so that a
line with an emoji or a CJK name still underlines the right characters.

Lines are split the way LSP and ``ast`` count them, by :mod:`graphlife.text_lines`.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from graphlife.findings import Span
from graphlife.text_lines import split_lines

__all__ = ["char_to_client", "client_to_char", "document_end", "span_to_range", "split_lines"]


def _units(codec: PositionCodec, text: str) -> int:
    return codec.client_num_units(text)


def char_to_client(lines: Sequence[str], line0: int, char0: int, codec: PositionCodec) -> types.Position:
    """0-based line and 0-based character column -> LSP position (clamped to the document)."""
    if not lines:
        return types.Position(line=0, character=0)
    if line0 >= len(lines):
        last = len(lines) - 1
        return types.Position(line=last, character=_units(codec, lines[last]))
    line0 = max(line0, 0)
    text = lines[line0]
    char0 = min(max(char0, 0), len(text))
    return types.Position(line=line0, character=_units(codec, text[:char0]))


def span_to_range(span: Span, lines: Sequence[str], codec: PositionCodec, line_offset: int = 0) -> types.Range:
    """A graphlife span -> an LSP range in a document whose line 1 is ``line_offset + 1`` of the span's source.

    ``line_offset`` is how many lines of the analyzed source come before this
    document (non-zero only for notebook cells after the first).
    """
    start = char_to_client(lines, span.line - 1 - line_offset, span.column - 1, codec)
    end = char_to_client(lines, span.end_line - 1 - line_offset, span.end_column - 1, codec)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)


def client_to_char(lines: Sequence[str], position: types.Position, codec: PositionCodec) -> tuple[int, int]:
    """LSP position -> (1-based line, 1-based character column) in the document's own lines."""
    if not lines:
        return 1, 1
    line0 = min(max(position.line, 0), len(lines) - 1)
    text = lines[line0]
    units = 0
    chars = 0
    for char in text:
        if units >= position.character:
            break
        units += _units(codec, char)
        chars += 1
    return line0 + 1, chars + 1


def document_end(lines: Sequence[str], codec: PositionCodec) -> types.Position:
    """The position just after the last character of a document."""
    if not lines:
        return types.Position(line=0, character=0)
    return types.Position(line=len(lines) - 1, character=_units(codec, lines[-1]))
