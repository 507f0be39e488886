"""A clean clone of this repository's package as it is now (a git repository with one commit):
what `pip install git+URL` and pre-commit start from."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def package_files() -> list[str]:
    """The files of the working tree that make the package: the root's own files and server/
    (tracked or new, not ignored), so that uncommitted work is what gets installed."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    return [rel for rel in listed if (REPO / rel).is_file() and ("/" not in rel or rel.startswith("server/"))]


def clean_clone(dest: Path) -> Path:
    """``dest`` as a git repository holding the package files, committed."""
    for rel in package_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "snapshot")
    return dest


def git(folder: Path, *args: str) -> str:
    identity = ["-c", "user.name=graphlife tests", "-c", "user.email=tests@graphlife.invalid",
                "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *args], cwd=folder, capture_output=True, text=True,
                          check=True).stdout.strip()
