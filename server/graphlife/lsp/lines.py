"""Splitting a source into lines as LSP and ``ast`` count them, without the LSP libraries:
the command line's notebook check (:mod:`.notebooks`) uses it, and ``pip install graphlife``
has no pygls or lsprotocol."""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(source: str) -> list[str]:
    """Lines without their terminators, split only at ``\\n``, ``\\r\\n`` and ``\\r``
    (``str.splitlines`` also breaks at form feeds and U+2028, which would shift every line
    after one of those).

    A source that ends with a line break has an empty last line, as LSP sees it.
    """
    return _LINE_BREAK.split(source)
