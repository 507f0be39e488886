"""Gitignore-style file patterns: ``exclude``, ``extend-exclude``, ``per-file-ignores`` and
``.gitignore`` itself match paths the same way.

Why one matcher: a user writes ``outputs/``, ``*_pb2.py`` or ``tests/**/data`` once and
expects the same answer from the settings as from git. The patterns follow git's rules
(``pathspec``'s ``GitIgnoreSpec``): a pattern without a slash matches a name at any depth,
one with a slash is relative to the folder of the file it was written in, a trailing slash
matches folders only, ``**`` spans folders, ``!`` re-includes.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


@functools.lru_cache(maxsize=512)
def compiled(lines: tuple[str, ...]) -> GitIgnoreSpec:
    """The patterns compiled once (a folder walk asks about every file and folder)."""
    from pathspec import GitIgnoreSpec  # noqa: PLC0415 - only runs that have patterns to match pay for it

    return GitIgnoreSpec.from_lines(lines)


def relative_to(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` with ``/`` separators, or ``None`` when it is outside."""
    rel = os.path.relpath(os.path.abspath(path), base)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def decide(lines: tuple[str, ...], path: str, base: str, is_dir: bool) -> bool | None:
    """``True`` when the last pattern of ``lines`` that matches ``path`` excludes it, ``False``
    when it re-includes it (``!``), ``None`` when none matches. ``base`` is the folder the
    patterns are relative to; an empty ``base`` matches the name alone (patterns that hold
    for a name at any depth)."""
    if not base and len(lines) == 1 and _plain_name(lines[0]):
        # The built-in exclusions (`.venv`, `*.egg-info`): a name, matched without loading pathspec,
        # so that a folder walk with no patterns of the user's and no .gitignore stays cheap.
        return True if fnmatch.fnmatchcase(os.path.basename(os.path.normpath(path)), lines[0]) else None
    rel = relative_to(path, base) if base else os.path.basename(os.path.normpath(path))
    if rel is None:
        if any("/" in line.rstrip("/") for line in lines):
            return None  # anchored patterns do not reach outside their folder
        rel = os.path.basename(os.path.normpath(path))
    result = compiled(lines).check_file(rel + "/" if is_dir else rel)
    return result.include


def _plain_name(pattern: str) -> bool:
    """A pattern that is a file or folder name with at most ``*`` wildcards: git and fnmatch agree."""
    return bool(pattern) and not any(char in pattern for char in "/\\![]?#") and "**" not in pattern


def matches(pattern: str, path: str, base: str, is_dir: bool = False) -> bool:
    """Whether one pattern (relative to ``base``) matches ``path``."""
    return decide((pattern,), path, base, is_dir) is True
