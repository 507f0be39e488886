"""How the machine formats name a file: relative to the current folder when it is inside
it (CI checks out the repository there, and GitHub matches annotations and SARIF results
to files by that path), else absolute."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote


def display_path(path: str) -> str:
    """``path`` relative to the current folder with ``/`` separators, or absolute outside it."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute, os.getcwd())
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return absolute.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def artifact_uri(path: str) -> tuple[str, bool]:
    """A SARIF artifact URI for ``path`` and whether it is relative to ``%SRCROOT%`` (the
    current folder): a relative, percent-encoded URI inside it, a ``file:`` URI outside."""
    shown = display_path(path)
    if os.path.isabs(shown) or shown.startswith("/"):
        return Path(os.path.abspath(path)).as_uri(), False
    return quote(shown), True
