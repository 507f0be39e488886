"""Spans and text edits of the fixes that rewrite a custom Function (GL401-GL406).

A :class:`~graphlife.findings.FixRecipe` of kind ``replace_text`` carries one span, but
a fix may touch forward *and* backward (save a tensor in one, read it in the other):
:func:`merge_edits` turns several small edits into one replacement of the smallest
region that covers them, with the text in between kept verbatim. The other helpers
give the spans those edits need (a ``def`` name, an insertion point, a line's indent).
"""

from __future__ import annotations

import ast
from itertools import pairwise

from graphlife.analysis.positions import byte_to_char_column
from graphlife.analysis.rule_api import SourceText
from graphlife.analysis.semantics import Method
from graphlife.findings import Span


def char_col(ctx: SourceText, line: int, byte_col: int) -> int:
    """1-based character column of a 0-based byte column on 1-based ``line``."""
    text = ctx.lines[line - 1] if 0 < line <= len(ctx.lines) else ""
    return byte_to_char_column(text, byte_col) + 1


def def_line_span(ctx: SourceText, method: Method) -> Span:
    """``def name`` on the def line (not the decorators)."""
    line = method.lineno
    text = ctx.lines[line - 1] if 0 < line <= len(ctx.lines) else ""
    start = char_col(ctx, line, method.col_offset)
    name_at = text.find(method.name, start - 1)
    end = name_at + len(method.name) + 1 if name_at >= 0 else len(text) + 1
    return Span(line, start, line, end)


def point(ctx: SourceText, line: int, byte_col: int) -> Span:
    """An empty span (an insertion point)."""
    column = char_col(ctx, line, byte_col)
    return Span(line, column, line, column)


def source_of(ctx: SourceText, span: Span) -> str:
    """The text of ``span`` in the analyzed source."""
    if span.line == span.end_line:
        return ctx.lines[span.line - 1][span.column - 1 : span.end_column - 1]
    parts = [ctx.lines[span.line - 1][span.column - 1 :]]
    parts += ctx.lines[span.line : span.end_line - 1]
    parts.append(ctx.lines[span.end_line - 1][: span.end_column - 1])
    return "\n".join(parts)


def segment(ctx: SourceText, node: ast.AST) -> str:
    """The source text of a node (``ast.get_source_segment`` re-splits the whole file on every call)."""
    return source_of(ctx, ctx.span(node))


def merge_edits(ctx: SourceText, edits: list[tuple[Span, str]]) -> tuple[Span, str] | None:
    """One ``(span, text)`` replacement equivalent to several non-overlapping edits, or ``None`` if they overlap."""
    if not edits:
        return None
    ordered = sorted(edits, key=lambda e: (e[0].line, e[0].column, e[0].end_line, e[0].end_column))
    for (first, _), (second, _) in pairwise(ordered):
        if (first.end_line, first.end_column) > (second.line, second.column):
            return None
    region = Span(ordered[0][0].line, ordered[0][0].column, ordered[-1][0].end_line, ordered[-1][0].end_column)
    pieces: list[str] = []
    cursor = (region.line, region.column)
    for span, text in ordered:
        pieces.append(source_of(ctx, Span(cursor[0], cursor[1], span.line, span.column)))
        pieces.append(text)
        cursor = (span.end_line, span.end_column)
    return region, "".join(pieces)


def line_indent(ctx: SourceText, line: int) -> str:
    """The leading whitespace of 1-based ``line``."""
    text = ctx.lines[line - 1] if 0 < line <= len(ctx.lines) else ""
    return text[: len(text) - len(text.lstrip())]


def starts_its_line(ctx: SourceText, node: ast.stmt) -> bool:
    """The statement is the first thing on its line (so a line can be inserted before it)."""
    text = ctx.lines[node.lineno - 1] if 0 < node.lineno <= len(ctx.lines) else ""
    return char_col(ctx, node.lineno, node.col_offset) == len(line_indent(ctx, node.lineno)) + 1 and text.strip() != ""


def unpacking_text(names: list[str], value: str) -> str:
    """``a, b = value`` / ``a, = value``."""
    return f"{', '.join(names)}{',' if len(names) == 1 else ''} = {value}"


def report_span(ctx: SourceText, node: ast.AST, stmt: ast.stmt | None) -> Span:
    """The node's span when it starts its statement's first line, else the statement's (markers sit there)."""
    if stmt is None or getattr(node, "lineno", None) == stmt.lineno:
        return ctx.span(node)
    return ctx.span(stmt)
