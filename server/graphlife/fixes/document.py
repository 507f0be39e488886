"""One parsed source for the recipes: libcst tree, positions, and span <-> node lookups.

Why a shared document: every recipe must find *exactly* the node a rule pointed at
(a span from the analyzer's ``ast`` positions) and emit edits in the same
coordinates. libcst positions are 1-based lines and 0-based character columns, so
the only conversion needed is ``column - 1``; nothing here touches UTF-16 or bytes.
A recipe that cannot find its node gives up, which is how "no wrong edit" starts.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import TypeVar, overload

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from graphlife.analysis.semantics import semantics_of
from graphlife.findings import Span
from graphlife.text_lines import source_lines_keepends

_Node = TypeVar("_Node", bound=cst.CSTNode)


class Document:
    """A source text parsed once with libcst, with lookups by analyzer span."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source_lines_keepends(source)
        # The tree was just parsed and nothing else holds it: the wrapper's defensive deep copy
        # (a fifth of the cost of a Document on a large file) would protect nothing.
        self.wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)

    @cached_property
    def _by_range(self) -> dict[tuple[int, int, int, int], list[cst.CSTNode]]:
        table: dict[tuple[int, int, int, int], list[cst.CSTNode]] = {}
        for node, rng in self.positions.items():
            key = (rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)
            table.setdefault(key, []).append(node)
        return table

    def nodes_at(self, span: Span) -> list[cst.CSTNode]:
        """Every node whose range is exactly ``span`` (outermost first is not guaranteed)."""
        return list(self._by_range.get((span.line, span.column, span.end_line, span.end_column), ()))

    @overload
    def node_at(self, span: Span, kinds: type[_Node]) -> _Node | None: ...

    @overload
    def node_at(self, span: Span, kinds: tuple[type[cst.CSTNode], ...]) -> cst.CSTNode | None: ...

    def node_at(self, span: Span, kinds: type | tuple[type, ...]) -> cst.CSTNode | None:
        """The node of one of ``kinds`` spanning exactly ``span``, or ``None``."""
        for node in self.nodes_at(span):
            if isinstance(node, kinds):
                return node
        return None

    def span_of(self, node: cst.CSTNode) -> Span:
        rng = self.positions[node]
        return Span(rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def statement_line(self, span: Span) -> cst.SimpleStatementLine | None:
        """The one-statement line whose only small statement spans ``span``."""
        for node in self.nodes_at(span):
            if isinstance(node, cst.SimpleStatementLine):
                return node if len(node.body) == 1 else None
            if isinstance(node, cst.BaseSmallStatement):
                line = self.parent(node)
                if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                    return line
                return None
        return None

    def statement(self, span: Span) -> cst.BaseStatement | None:
        """A whole statement (simple line or compound) that spans ``span``."""
        line = self.statement_line(span)
        if line is not None:
            return line
        node = self.node_at(span, cst.BaseCompoundStatement)
        return node

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def indent_of(self, line: int) -> str:
        text = self.line_text(line)
        return text[: len(text) - len(text.lstrip(" \t"))]

    def starts_line(self, span: Span) -> bool:
        """Nothing but indentation before ``span`` on its first line."""
        return self.line_text(span.line)[: span.column - 1].strip() == ""

    def line_end(self, line: int) -> int:
        """1-based column just after the last character of ``line`` (before its newline)."""
        return len(self.line_text(line).rstrip("\r\n")) + 1

    @property
    def newline(self) -> str:
        return self.module.default_newline

    @property
    def indent_unit(self) -> str:
        return self.module.default_indent

    @cached_property
    def binds_torch(self) -> bool:
        """``torch`` means the torch module at module level (``import torch``, ``import torch.nn``,
        also inside a module-level ``try``), as the semantic layer reads the file's imports: a
        recipe that writes ``torch.no_grad()`` or ``torch.autograd.grad`` needs it."""
        try:
            tree = ast.parse(self.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        return semantics_of(tree).names.meaning("torch", tree) == "torch"

    def has_multiline_string(self, node: cst.CSTNode) -> bool:
        """Re-indenting this node's lines would change a string literal's value."""
        found = False

        class Visitor(cst.CSTVisitor):
            def visit_SimpleString(self, n: cst.SimpleString) -> None:
                nonlocal found
                if "\n" in n.value or "\r" in n.value:  # a CR alone ends a line too
                    found = True

            def visit_FormattedString(self, n: cst.FormattedString) -> None:
                nonlocal found
                if n.start.endswith(('"""', "'''")):
                    found = True

        node.visit(Visitor())
        return found
