"""The one place that turns ``ast`` positions (UTF-8 byte columns) into character columns."""

from __future__ import annotations

import ast

from graphlife.findings import Span


def byte_to_char_column(line_text: str, byte_offset: int) -> int:
    """0-based character column of a 0-based UTF-8 byte offset within ``line_text``."""
    if line_text.isascii():
        return byte_offset
    return len(line_text.encode("utf-8")[:byte_offset].decode("utf-8", "ignore"))


def node_span(node: ast.AST, lines: list[str]) -> Span:
    """1-based line, 1-based character column, exclusive end column of ``node``."""
    line = getattr(node, "lineno", 1)
    end_line = getattr(node, "end_lineno", None) or line
    col = getattr(node, "col_offset", 0)
    end_col = getattr(node, "end_col_offset", None)
    first = lines[line - 1] if 0 < line <= len(lines) else ""
    last = lines[end_line - 1] if 0 < end_line <= len(lines) else ""
    start_char = byte_to_char_column(first, col)
    end_char = byte_to_char_column(last, end_col) if end_col is not None else len(last)
    return Span(line, start_char + 1, end_line, end_char + 1)
