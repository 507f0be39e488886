"""A class body cut into the statements that start on lines of their own, and parsed piece by piece.

Why: a class is one top-level block (:mod:`graphlife.analysis.blocks`), and a training
engine's class is most of its file (DeepSpeed's ``runtime/engine.py``: 3,900 lines in
one class). Parsing and indexing the whole class after a keystroke in one method cost
more than analyzing that method. So a class block keeps its body as *segments* (a
method with its decorators and the comments after it, or a class attribute), each
parsed and indexed once; after an edit, only the segments the changed lines touch are
parsed again, and the others keep their nodes.

Parsing a piece of a class body alone gives what the whole class gives when the piece
is complete: the lines before it and after it are the same as in the previous version
(which parsed), the piece parses inside a class of its own, starts at the body's
indentation (the same characters), and holds one class body and nothing after it. Then
the tokenizer is at a statement boundary of the class body where the piece starts and
where it ends, in both parses. Anything else (an edit of the class's header, a piece
that does not parse alone, a body that becomes empty) parses the whole class again.
"""

from __future__ import annotations

import ast

from graphlife.analysis.tree_index import TreeIndex
from graphlife.text_lines import source_lines_keepends

#: What a piece of a class body is parsed inside (one line: its lines are the piece's plus one).
_WRAPPER = "class _:\n"


def first_line(node: ast.stmt) -> int:
    """The 1-based first line of a statement, its decorators included."""
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)]) if decorators else node.lineno


def indentation(line: str) -> str:
    """The whitespace a line starts with."""
    return line[: len(line) - len(line.lstrip(" \t\x0c"))]


def segments(body: list[ast.stmt], lines: list[str], offset: int) -> list[tuple[int, list[ast.stmt]]] | None:
    """The statements of a class ``body`` grouped by the line they start on: (0-based index in
    ``lines`` of the group's first line, its statements); a statement that starts on the line
    where the one before ends (``x = 1; y = 2``) joins its group. ``offset``: the 1-based line
    number of ``lines[0]``. ``None`` when the body does not start on a line of its own
    (``class A: pass``), or a statement does not start at the body's indentation."""
    groups: list[tuple[int, list[ast.stmt]]] = []
    previous_end = -1
    body_indent: str | None = None
    for stmt in body:
        first = first_line(stmt) - offset
        if first < 0 or first >= len(lines):
            return None
        if groups and first <= previous_end:
            groups[-1][1].append(stmt)
        else:
            indent = indentation(lines[first])
            if len(indent.encode("utf-8")) != stmt.col_offset or indent != (body_indent or indent):
                return None  # shares its first line with code before it
            body_indent = indent
            groups.append((first, [stmt]))
        previous_end = max(previous_end, (stmt.end_lineno or stmt.lineno) - offset)
    return groups if groups else None


def parse_piece(text: str, indent: str) -> list[ast.stmt] | None:
    """The statements of ``text``, a piece of a class body whose statements start at ``indent``,
    numbered as if the piece began on line 2 (the line after the wrapper); ``None`` when the
    piece is not complete class-body code on its own."""
    try:
        tree = ast.parse(_WRAPPER + text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.ClassDef) or not tree.body[0].body:
        return None
    statements = tree.body[0].body
    lines = source_lines_keepends(text)  # Python's line breaks (not str.splitlines's)
    first = first_line(statements[0]) - 2
    if first < 0 or first >= len(lines) or indentation(lines[first]) != indent:
        return None
    return statements


def header_index(cls: ast.ClassDef) -> TreeIndex:
    """The index of the class node itself and its header (decorators, bases, keywords), with the
    class as the parent of those and of its body's statements: what the body's segments'
    indexes leave out."""
    header: list[ast.AST] = [*cls.decorator_list, *cls.bases, *cls.keywords]
    index = TreeIndex.of_statements(header)  # type: ignore[arg-type]  # a walk of any nodes
    index.located.insert(0, cls)
    index.by_kind[ast.ClassDef].append(cls)
    index.binding_counts[cls.name] = index.binding_counts.get(cls.name, 0) + 1
    for node in (*header, *cls.body):
        index.parents[id(node)] = cls
    return index
