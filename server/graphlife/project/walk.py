"""The Python files of a folder, as ``graphlife check DIR`` and the editor's workspace scope walk it.

One list of folders never entered (virtual environments, build output, caches,
version control), so that the command line and the language server's
``reportingScope: workspace`` report on the same files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

#: Folders a folder walk never enters (virtualenvs, build output, caches, VCS).
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", "env", ".env", "__pycache__", "build", "dist",
    "node_modules", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages",
    ".eggs", ".ipynb_checkpoints", ".graphlife_cache",
})


def walk_files(folder: str, suffixes: tuple[str, ...] = (".py",)) -> Iterator[str]:
    """The files under ``folder`` ending in one of ``suffixes``, sorted per folder, skipping
    :data:`SKIPPED_DIRS` and ``*.egg-info``."""
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        # `./train.py` is `train.py`: one spelling per file, as findings in other files spell it.
        yield from (os.path.normpath(os.path.join(root, n)) for n in sorted(names) if n.endswith(suffixes))
