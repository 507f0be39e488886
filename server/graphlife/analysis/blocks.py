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
import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphlife.analysis import class_body
from graphlife.analysis.tree_index import TreeIndex
from graphlife.text_lines import source_lines_keepends

if TYPE_CHECKING:
    from graphlife.analysis.regions import Region

_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
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


def _first_line(text: str) -> str:
    """The first line of ``text`` with its break (Python's breaks: see :mod:`graphlife.text_lines`)."""
    found = _LINE_BREAK.search(text)
    return text[: found.end()] if found else text


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
    """One top-level block: its text, where it starts now, and its parsed statements.

    A block that holds one class keeps its body as segments (:mod:`graphlife.analysis.class_body`),
    each a :class:`Block` of its own statements, so that an edit in one method parses and indexes
    that method again, not the class; the block's own index is then the class node's and its
    header's only (:meth:`index_parts` gives all of them)."""

    def __init__(self, text: str, start: int, statements: list[ast.stmt], index: TreeIndex, error: BlockError | None,
                 segments: list[Block] | None = None):
        self.text = text
        self.start = start  # 1-based line of the block's first line, kept current by move()
        self.statements = statements
        self.index = index
        self.error = error
        #: A class's body statements by the lines they start on (``None``: not a class, or not cut).
        self.segments = segments
        self.line_count = len(source_lines_keepends(text))
        #: Its regions, kept by :class:`graphlife.analysis.regions.RegionMap` while the block lives.
        self.regions: list[Region] | None = None
        self._lines: list[str] | None = None

    @classmethod
    def parse(cls, text: str, start: int) -> Block:
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            error = BlockError(exc.lineno or 1, exc.offset or 1, exc.msg or "invalid syntax")
            return cls(text, start, [], TreeIndex(), error)
        except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
            return cls(text, start, [], TreeIndex(), BlockError(1, 1, f"cannot parse: {exc}"))
        block = _class_block(text, tree.body) if len(tree.body) == 1 else None
        if block is None:
            block = cls(text, 1, tree.body, TreeIndex.of_statements(tree.body), None)
        block.move(start)
        return block

    @property
    def lines(self) -> list[str]:
        """The block's lines with their breaks (made when first asked: only class blocks are)."""
        if self._lines is None:
            self._lines = source_lines_keepends(self.text)
        return self._lines

    def index_parts(self) -> list[TreeIndex]:
        """The indexes that together cover the block's nodes."""
        if self.segments is None:
            return [self.index]
        return [self.index, *(segment.index for segment in self.segments)]

    def move(self, start: int) -> None:
        """Renumber the block's nodes so that it begins at line ``start``."""
        delta = start - self.start
        if delta:
            for node in self.index.located:
                node.lineno += delta
                if node.end_lineno is not None:
                    node.end_lineno += delta
            for segment in self.segments or ():
                segment.move(segment.start + delta)
            self.start = start

    @property
    def end(self) -> int:
        """The block's last line (1-based, inclusive)."""
        return self.start + max(self.line_count, 1) - 1


def _class_block(text: str, statements: list[ast.stmt], lines: list[str] | None = None) -> Block | None:
    """A block of one class, its body cut into segments (numbered from line 1); ``None`` when the
    statements are not one class whose body can be cut (:func:`class_body.segments`)."""
    if len(statements) != 1 or not isinstance(statements[0], ast.ClassDef):
        return None
    cls = statements[0]
    lines = lines if lines is not None else source_lines_keepends(text)
    groups = class_body.segments(cls.body, lines, 1)
    if groups is None:
        return None
    pieces = []
    for number, (first, group) in enumerate(groups):
        end = groups[number + 1][0] if number + 1 < len(groups) else len(lines)
        pieces.append(Block("".join(lines[first:end]), first + 1, group, TreeIndex.of_statements(group), None))
    block = Block(text, 1, statements, class_body.header_index(cls), None, pieces)
    block._lines = lines
    return block


def reparse_class(old: Block, text: str, start: int) -> Block | None:
    """``text``, a new version of the class block ``old`` whose header is unchanged, parsed by
    parsing again only the segments its changed lines touch (``old`` gives up the others: it
    must not be used again). ``None`` when that cannot be done (:mod:`class_body`)."""
    segments = old.segments
    if segments is None:
        return None
    old_lines, new_lines = old.lines, source_lines_keepends(text)
    header = segments[0].start - old.start
    limit = min(len(old_lines), len(new_lines))
    same_before = 0
    while same_before < limit and old_lines[same_before] == new_lines[same_before]:
        same_before += 1
    if same_before < header or same_before == len(old_lines) == len(new_lines):
        return None  # the header changed (or nothing did)
    same_after = 0
    while same_after < limit - same_before and old_lines[-1 - same_after] == new_lines[-1 - same_after]:
        same_after += 1
    firsts = [segment.start - old.start for segment in segments]
    low = bisect.bisect_right(firsts, min(same_before, len(old_lines) - 1)) - 1
    last_changed = len(old_lines) - same_after - 1
    high = max(low, bisect.bisect_right(firsts, last_changed) - 1)
    piece_first = firsts[low]
    old_piece_end = firsts[high + 1] if high + 1 < len(firsts) else len(old_lines)
    grown = len(new_lines) - len(old_lines)
    piece_end = old_piece_end + grown
    indent = class_body.indentation(old_lines[firsts[0]])
    parsed = class_body.parse_piece("".join(new_lines[piece_first:piece_end]), indent)
    if parsed is None:
        return None
    piece_lines = new_lines[piece_first:piece_end]
    groups = class_body.segments(parsed, piece_lines, 2)
    if groups is None:
        return None
    moved = start - old.start
    pieces: list[Block] = []
    for segment in segments[:low]:
        segment.move(segment.start + moved)
        pieces.append(segment)
    for number, (first, group) in enumerate(groups):
        end = groups[number + 1][0] if number + 1 < len(groups) else len(piece_lines)
        piece = Block("".join(piece_lines[first:end]), first + 2, group, TreeIndex.of_statements(group), None)
        piece.move(start + piece_first + first)
        pieces.append(piece)
    for segment in segments[high + 1:]:
        segment.move(segment.start + moved + grown)
        pieces.append(segment)
    old_class = old.statements[0]
    assert isinstance(old_class, ast.ClassDef)
    cls = ast.ClassDef(name=old_class.name, bases=old_class.bases, keywords=old_class.keywords,
                       body=[stmt for piece in pieces for stmt in piece.statements],
                       decorator_list=old_class.decorator_list)
    last = cls.body[-1]
    cls.lineno, cls.col_offset = old_class.lineno + moved, old_class.col_offset
    cls.end_lineno, cls.end_col_offset = last.end_lineno, last.end_col_offset
    for node in old.index.located[1:]:  # the header's nodes (the first is the old class node)
        node.lineno += moved
        if node.end_lineno is not None:
            node.end_lineno += moved
    block = Block(text, start, [cls], class_body.header_index(cls), None, pieces)
    block._lines = new_lines
    return block


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
        #: The previous version's class blocks cut into segments, by their first line: an edited
        #: class is parsed again from one of them (:func:`reparse_class`).
        self._classes: dict[str, list[Block]] = {}
        #: The previous version's blocks given to this version (reused whole, or as segments).
        self._taken: set[int] = set()

    def parse(self, source: str) -> ParsedFile:
        lines = source_lines_keepends(source)
        starts = block_starts(lines)
        bounds = list(zip(starts, [*starts[1:], len(lines)]))
        self._taken = set()
        blocks = [self._block("".join(lines[first:end]), first + 1) for first, end in bounds if end > first]
        if any(block.error for block in blocks):
            whole = self._from_whole_file(source, lines)
            if whole is not None:
                blocks = whole
        self._pool = {}
        self._classes = {}
        for block in blocks:
            self._pool.setdefault(block.text, []).append(block)
            if block.segments is not None:
                self._classes.setdefault(_first_line(block.text), []).append(block)
        statements = [stmt for block in blocks for stmt in block.statements]
        tree = ast.Module(body=statements, type_ignores=[])
        index = TreeIndex.merge(tree, [part for block in blocks for part in block.index_parts()])
        errors = [
            (block.start + block.error.line - 1, block.error.column, block.error.message)
            for block in blocks
            if block.error
        ]
        return ParsedFile(tree, blocks, index, errors)

    def _block(self, text: str, start: int) -> Block:
        reusable = [block for block in self._pool.get(text, ()) if id(block) not in self._taken]
        if reusable:
            block = reusable[-1]
            self._taken.add(id(block))
            block.move(start)
            return block
        for old in self._classes.get(_first_line(text), ()):
            if id(old) in self._taken:
                continue
            reparsed = reparse_class(old, text, start)
            if reparsed is not None:
                self._taken.add(id(old))  # its segments are the new block's now
                return reparsed
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
