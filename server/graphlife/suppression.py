"""Comments that silence findings, for the checker and the language server alike.

On a finding's line (the first line of its span):

- ``# graphlife: ignore`` or ``# graphlife: ignore[GL101, GL2]`` (graphlife's own);
- ``# noqa`` or ``# noqa: GL101`` (what ruff and flake8 users already write). A bare
  ``# noqa`` silences everything on the line, as in ruff; ``# noqa: E501`` names other
  tools' codes and leaves graphlife's findings alone.

For the whole file, on a line of its own: ``# graphlife: noqa`` (ruff's ``# ruff: noqa``)
or ``# graphlife: ignore-file``, each optionally naming codes (``# graphlife: noqa: GL201``,
``# graphlife: ignore-file[GL201]``).

A code silences itself and every code it is a prefix of (``GL2`` silences GL201..GL205).
Only real comments count: the line is tokenized, so ``"# noqa"`` inside a string does not.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

#: Every code (``None``), or the codes and prefixes named.
Codes = tuple[str, ...] | None


@dataclass(frozen=True)
class FileSuppression:
    """What a file-level comment silences: nothing, everything, or some codes."""

    everything: bool = False
    codes: tuple[str, ...] = ()

    def covers(self, code: str) -> bool:
        return self.everything or any(code.startswith(prefix) for prefix in self.codes)


NOTHING = FileSuppression()


def is_suppressed(code: str, line: int, lines: list[str], whole_file: FileSuppression = NOTHING) -> bool:
    """Whether a finding of ``code`` on 1-based ``line`` of ``lines`` is silenced."""
    if whole_file.covers(code):
        return True
    if not 0 < line <= len(lines) or "#" not in lines[line - 1]:
        return False
    for comment in comments_on(lines[line - 1]):
        for directive in comment.split("#"):
            codes = _line_directive(directive.strip())
            if codes is _NOT_A_DIRECTIVE:
                continue
            if codes is None or any(code.startswith(prefix) for prefix in codes):
                return True
    return False


def file_suppression(lines: list[str]) -> FileSuppression:
    """The file-level comments of a file (on lines of their own), merged."""
    everything = False
    codes: list[str] = []
    for text in lines:
        stripped = text.strip()
        if not stripped.startswith("#") or "graphlife" not in stripped:
            continue
        found = _file_directive(stripped.lstrip("#").strip())
        if found is _NOT_A_DIRECTIVE:
            continue
        if found is None:
            everything = True
        else:
            codes.extend(found)
    return FileSuppression(everything, tuple(codes)) if everything or codes else NOTHING


def comments_on(text: str) -> list[str]:
    """The comments of one line of code, without their leading ``#``. The line is tokenized
    alone: a line that continues an open bracket still tokenizes up to its comment; a line
    tokenize cannot read at all has no comments."""
    comments = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments.append(token.string[1:])
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the end of a line inside an open bracket or string: the comments before it count
    return comments


#: A comment that is no directive of ours.
_NOT_A_DIRECTIVE: Codes = ("<not a directive>",)


def _line_directive(text: str) -> Codes:
    """``None`` (every code), the codes named, or :data:`_NOT_A_DIRECTIVE`."""
    lowered = text.lower()
    if lowered.startswith("noqa"):
        rest = text[4:].strip()
        if rest.startswith(":"):
            return _codes(rest[1:]) or None
        if rest and (rest[0].isalnum() or rest[0] == "_"):
            return _NOT_A_DIRECTIVE  # `noqa_something`: another word
        return None  # bare, or followed by codes without a colon (which flake8 also reads as bare)
    name, rest = _after_graphlife(text)
    if name == "ignore":
        return _bracketed(rest)
    return _NOT_A_DIRECTIVE


def _file_directive(text: str) -> Codes:
    name, rest = _after_graphlife(text)
    if name == "noqa":
        rest = rest.strip()
        if rest.startswith(":"):
            return _codes(rest[1:]) or None
        return None if not rest else _NOT_A_DIRECTIVE
    if name == "ignore-file":
        return _bracketed(rest)
    return _NOT_A_DIRECTIVE


def _after_graphlife(text: str) -> tuple[str, str]:
    """``graphlife: ignore[GL101]`` -> (``ignore``, ``[GL101]``); anything else -> ("", "")."""
    head, colon, rest = text.partition(":")
    if not colon or head.strip().lower() != "graphlife":
        return "", ""
    rest = rest.strip()
    end = 0
    while end < len(rest) and (rest[end].isalpha() or rest[end] == "-"):
        end += 1
    return rest[:end].lower(), rest[end:]


def _bracketed(rest: str) -> Codes:
    """``[GL101, GL2]`` -> the codes; nothing -> every code."""
    rest = rest.strip()
    if not rest.startswith("["):
        return None
    inside, closed, _ = rest[1:].partition("]")
    return _codes(inside) if closed else None


def _codes(text: str) -> tuple[str, ...]:
    """Codes separated by commas or spaces (ruff accepts both), upper-cased."""
    return tuple(part.upper() for part in text.replace(",", " ").split())
