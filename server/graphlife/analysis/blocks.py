"""A file as a list of top-level blocks, each parsed once and kept while its text stays the same.

Why: the language server re-analyzes a file after every pause in typing, and on a
5,000-line file parsing it again costs more than the analysis of the function
that changed. A top-level block (an import, a function, a class, an ``if
__name__`` block, with its decorators and the comments after it) is parsed on
its own; after an edit only the blocks whose text changed are parsed again,
and the others are moved to their new first line by adding the line delta to
the nodes they hold (no copy, no walk).

Where a block starts is decided from the lines alone: a line that begins in
column 0 with code, outside a triple-quoted string, not after a decorator or a
backslash, and not an ``else``/``elif``/``except``/``finally``. That rule can be
wrong (a string whose lines start in column 0 in an unusual way); a block that
does not parse alone is then checked against a parse of the whole file, and if
the whole file parses, its own top-level statements decide the blocks. So the
tree is always the one ``ast.parse`` gives; only the work differs.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphlife.analysis.tree_index import TreeIndex
from graphlife.text_lines import source_lines_keepends

if TYPE_CHECKING:
    from graphlife.analysis.regions import Region

_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
_NOT_A_START = " \t\r\n\x0c#)]}"


def _triple_quote_state(line: str, open_quote: str | None) -> str | None:
    """The triple quote still open after ``line`` (``None`` when none is), roughly: a quote
    inside a one-line string or after ``#`` in a string can fool it, which only costs time."""
    if open_quote is None and '"""' not in line and "'''" not in line:
        return None
    position = 0
    while True:
        if open_quote is not None:
            end = line.find(open_quote, position)
            if end < 0:
                return open_quote
            open_quote, position = None, end + 3
            continue
        found = [(line.find(mark, position), mark) for mark in ('"""', "'''", "#")]
        found = [(at, mark) for at, mark in found if at >= 0]
        if not found:
            return None
        at, mark = min(found)
        if mark == "#":
            return None
        open_quote, position = mark, at + 3


def block_starts(lines: list[str]) -> list[int]:
    """0-based indexes of the lines where a top-level block starts (always including 0)."""
    starts = [0]
    open_quote: str | None = None
    after_decorator = False
    continued = False
    for number, line in enumerate(lines):
        if open_quote is None and not continued and line and line[0] not in _NOT_A_START:
            if not after_decorator and not _CONTINUATION.match(line) and number:
                starts.append(number)
            after_decorator = line[0] == "@"
        open_quote = _triple_quote_state(line, open_quote)
        continued = open_quote is None and line.rstrip("\r\n").endswith("\\")
    return starts


@dataclass
class BlockError:
    """A syntax error inside one block, relative to its first line."""

    line: int  # 1-based, within the block
    column: int
    message: str


class Block:
    """One top-level block: its text, where it starts now, and its parsed statements."""

    def __init__(self, text: str, start: int, statements: list[ast.stmt], index: TreeIndex, error: BlockError | None):
        self.text = text
        self.start = start  # 1-based line of the block's first line, kept current by move()
        self.statements = statements
        self.index = index
        self.error = error
        self.line_count = len(source_lines_keepends(text))
        #: Its regions, kept by :class:`graphlife.analysis.regions.RegionMap` while the block lives.
        self.regions: list[Region] | None = None

    @classmethod
    def parse(cls, text: str, start: int) -> Block:
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            error = BlockError(exc.lineno or 1, exc.offset or 1, exc.msg or "invalid syntax")
            return cls(text, start, [], TreeIndex(), error)
        except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
            return cls(text, start, [], TreeIndex(), BlockError(1, 1, f"cannot parse: {exc}"))
        index = TreeIndex.of_statements(tree.body)
        block = cls(text, 1, tree.body, index, None)
        block.move(start)
        return block

    def move(self, start: int) -> None:
        """Renumber the block's nodes so that it begins at line ``start``."""
        delta = start - self.start
        if delta:
            for node in self.index.located:
                node.lineno += delta
                if node.end_lineno is not None:
                    node.end_lineno += delta
            self.start = start

    @property
    def end(self) -> int:
        """The block's last line (1-based, inclusive)."""
        return self.start + max(self.line_count, 1) - 1


@dataclass
class ParsedFile:
    """A file's tree assembled from blocks, with the merged index and the syntax errors."""

    tree: ast.Module
    blocks: list[Block]
    index: TreeIndex
    errors: list[tuple[int, int, str]]  # absolute (line, column, message) of the blocks that do not parse


class BlockParser:
    """Parses a document's successive versions, reusing the blocks whose text is unchanged."""

    def __init__(self) -> None:
        self._pool: dict[str, list[Block]] = {}

    def parse(self, source: str) -> ParsedFile:
        lines = source_lines_keepends(source)
        starts = block_starts(lines)
        bounds = list(zip(starts, [*starts[1:], len(lines)]))
        blocks = [self._block("".join(lines[first:end]), first + 1) for first, end in bounds if end > first]
        if any(block.error for block in blocks):
            whole = self._from_whole_file(source, lines)
            if whole is not None:
                blocks = whole
        self._pool = {}
        for block in blocks:
            self._pool.setdefault(block.text, []).append(block)
        statements = [stmt for block in blocks for stmt in block.statements]
        tree = ast.Module(body=statements, type_ignores=[])
        index = TreeIndex.merge(tree, [block.index for block in blocks])
        errors = [
            (block.start + block.error.line - 1, block.error.column, block.error.message)
            for block in blocks
            if block.error
        ]
        return ParsedFile(tree, blocks, index, errors)

    def _block(self, text: str, start: int) -> Block:
        reusable = self._pool.get(text)
        if reusable:
            block = reusable.pop()
            block.move(start)
            return block
        return Block.parse(text, start)

    def _from_whole_file(self, source: str, lines: list[str]) -> list[Block] | None:
        """Blocks cut at the whole file's top-level statements, when the file parses after all."""
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        firsts: list[int] = []
        groups: list[list[ast.stmt]] = []
        for stmt in tree.body:
            first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))]) - 1
            if firsts and first <= firsts[-1]:
                groups[-1].append(stmt)  # `import os; import sys`: one line, one block
            else:
                firsts.append(first)
                groups.append([stmt])
        if not firsts or firsts[0] != 0:
            firsts.insert(0, 0)
            groups.insert(0, [])
        blocks = []
        for (first, end), statements in zip(zip(firsts, [*firsts[1:], len(lines)]), groups):
            index = TreeIndex.of_statements(statements)
            blocks.append(Block("".join(lines[first:end]), first + 1, statements, index, None))
        return blocks


def parse_tolerant(source: str) -> tuple[ast.Module | None, list[tuple[int, int, str]]]:
    """Parse; on a syntax error, parse top-level block by block and leave out the blocks that
    do not parse (each with its own error: line, column, message), so the rest of the file
    still gets its findings. ``None`` when nothing can be parsed (NUL bytes, absurd nesting)."""
    try:
        return ast.parse(source), []
    except SyntaxError:
        pass
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return None, [(1, 1, f"cannot parse: {exc}")]
    parsed = BlockParser().parse(source)
    return parsed.tree, parsed.errors
