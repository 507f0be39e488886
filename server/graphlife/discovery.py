"""Which files `graphlife check PATH...` checks, and the editor's ``reportingScope: workspace``.

A file named on the command line is checked (unless ``--force-exclude`` and a pattern
excludes it, which pre-commit needs: it names every changed file). A folder is walked for
``.py`` and ``.ipynb`` files, leaving out what the settings exclude (``exclude``, by
default virtualenvs, build output, caches and VCS folders, plus ``extend-exclude``) and,
inside a git repository, what git ignores (``.gitignore`` files of the repository's
folders and ``.git/info/exclude``), so that ``wandb/``, ``outputs/`` and generated code
are not checked. The settings of each folder are the nearest ones (a sub-project's own
``[tool.graphlife]``), as in ruff. The language server walks the workspace with the same
functions (:mod:`graphlife.lsp.workspace_scope`), so that the editor reports on the files
the command line checks: this module sits below both in the import layers.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from graphlife.config import Config
from graphlife.path_patterns import decide

SUFFIXES = (".py", ".ipynb")


def excluded(path: str, is_dir: bool, config: Config) -> bool:
    """Whether ``exclude`` / ``extend-exclude`` (or the defaults) leave ``path`` out."""
    return any(decide((pattern.pattern,), path, pattern.base, is_dir) is True
               for pattern in config.excluded_patterns())


class GitIgnored:
    """What git ignores in one repository: each folder's ``.gitignore`` (a deeper file's
    patterns win over a shallower one's, the last matching line of a file wins, ``!``
    re-includes) and ``.git/info/exclude`` below them all."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @functools.cache  # noqa: B019 - one instance per repository, alive for the run
    def _patterns(self, folder: str) -> tuple[str, ...]:
        try:
            text = Path(folder, ".gitignore").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ()
        return tuple(text.splitlines())

    @functools.cache  # noqa: B019
    def _info_exclude(self) -> tuple[str, ...]:
        try:
            text = (self.root / ".git" / "info" / "exclude").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ()
        return tuple(text.splitlines())

    def ignores(self, path: str, is_dir: bool) -> bool:
        absolute = os.path.abspath(path)
        folder = os.path.dirname(absolute)
        root = str(self.root)
        while True:
            lines = self._patterns(folder)
            if lines:
                verdict = decide(lines, absolute, folder, is_dir)
                if verdict is not None:
                    return verdict
            if folder == root or len(folder) <= len(root):
                break
            folder = os.path.dirname(folder)
        lines = self._info_exclude()
        return bool(lines) and decide(lines, absolute, root, is_dir) is True


@functools.cache
def git_repository(folder: str) -> GitIgnored | None:
    """The repository ``folder`` is in (a ``.git`` folder or file at or above it), or ``None``."""
    here = Path(folder).resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return GitIgnored(candidate)
    return None


def forget_ignore_files() -> None:
    """Read the ``.gitignore`` files (and where the repositories are) again at the next question.
    A command-line run reads them once; the language server, which lives for hours while
    the user edits them, calls this before each walk of the workspace."""
    git_repository.cache_clear()
    GitIgnored._patterns.cache_clear()
    GitIgnored._info_exclude.cache_clear()


def left_out(path: str, is_dir: bool, config: Config) -> bool:
    """Excluded by the settings, or ignored by git (unless ``respect-gitignore = false``)."""
    if excluded(path, is_dir, config):
        return True
    if not config.respect_gitignore:
        return False
    repository = git_repository(os.path.dirname(os.path.abspath(path)) or os.sep)
    return repository is not None and repository.ignores(path, is_dir)


def discover(paths: list[str], settings_for: Callable[[str], Config],
             force_exclude: bool = False) -> tuple[list[str], list[str]]:
    """The files to check under ``paths`` (each folder's files sorted) and the paths that do
    not exist. ``settings_for(folder)`` gives the settings that apply in a folder."""
    files: list[str] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file() or (path.exists() and not path.is_dir()):  # a pipe or device: its read says why not
            if force_exclude and left_out(raw, False, settings_for(os.path.dirname(os.path.abspath(raw)))):
                continue
            files.append(str(path))
        elif path.is_dir():
            if force_exclude and left_out(raw, True, settings_for(os.path.abspath(raw))):
                continue
            for root, dirs, names in os.walk(path):
                config = settings_for(os.path.abspath(root))
                dirs[:] = sorted(d for d in dirs if not left_out(os.path.join(root, d), True, config))
                # `./train.py` is `train.py`: one spelling per file, as findings in other files spell it.
                files.extend(os.path.normpath(os.path.join(root, name)) for name in sorted(names)
                             if name.endswith(SUFFIXES) and not left_out(os.path.join(root, name), False, config))
        else:
            missing.append(raw)
    return files, missing
