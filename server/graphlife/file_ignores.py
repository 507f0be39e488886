"""File-level ignore comments: ``# graphlife: ignore-file[GL201, GL3]`` on a line of its own.

A rule the user does not want in one file (a benchmark that keeps graphs on
purpose) should not need a comment on every line, nor a setting that hides it
everywhere. The comment may stand on any line (usually the first ones); without
codes (``# graphlife: ignore-file``) it silences every rule in the file. Codes
are prefixes, as in ``select``/``ignore``: ``GL2`` covers GL201-GL205.

Only a real comment counts: a line inside a multi-line string that happens to
read like one is text, so candidates are confirmed with the tokenizer (which
runs only when the text has a candidate at all).
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass

_MARK = "ignore-file"


@dataclass(frozen=True)
class FileIgnores:
    """What a file's ignore-file comments silence."""

    everything: bool = False
    codes: tuple[str, ...] = ()

    def covers(self, code: str) -> bool:
        return self.everything or any(code.startswith(prefix) for prefix in self.codes)

    def __bool__(self) -> bool:
        return self.everything or bool(self.codes)


def parse_comment(comment: str) -> FileIgnores | None:
    """``# graphlife: ignore-file[GL101, GL2]`` -> its codes; ``None`` for any other comment."""
    text = comment.strip()
    if not text.startswith("#"):
        return None
    tool, colon, rest = text[1:].partition(":")
    if not colon or tool.strip().lower() != "graphlife":
        return None
    rest = rest.strip()
    if not rest.lower().startswith(_MARK):
        return None
    rest = rest[len(_MARK):].strip()
    if not rest:
        return FileIgnores(everything=True)
    if not (rest.startswith("[") and "]" in rest):
        return None
    inside = rest[1:rest.index("]")]
    codes = tuple(code.strip().upper() for code in inside.split(",") if code.strip())
    return FileIgnores(codes=codes) if codes else FileIgnores(everything=True)


def file_ignores(lines: Sequence[str]) -> FileIgnores:
    """What the file's ignore-file comments (each on a line of its own) silence."""
    candidates = {number for number, line in enumerate(lines, start=1)
                  if line.lstrip().startswith("#") and _MARK in line.lower() and parse_comment(line) is not None}
    if not candidates:
        return FileIgnores()
    everything = False
    codes: list[str] = []
    for number in _real_comment_lines("\n".join(lines) + "\n", candidates):
        found = parse_comment(lines[number - 1])
        if found is not None:
            everything = everything or found.everything
            codes.extend(found.codes)
    return FileIgnores(everything, tuple(dict.fromkeys(codes)))


def _real_comment_lines(source: str, candidates: set[int]) -> set[int]:
    """The candidate lines whose text is a comment token (not inside a string)."""
    real: set[int] = set()
    last = max(candidates)
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and token.start[0] in candidates:
                real.add(token.start[0])
            if token.start[0] > last:
                break
    except (tokenize.TokenError, SyntaxError):
        pass  # a file that does not tokenize to the end: the comments before the error count
    return real


def ignore_file_comment(codes: Sequence[str]) -> str:
    """The comment line that silences ``codes`` in a file."""
    return f"# graphlife: ignore-file[{', '.join(codes)}]"
