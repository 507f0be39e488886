"""The large public training files the benchmark checks: the list, where they are, fetching them.

Usage: ``python benchmarks/public_files.py [--into DIR]`` (``make bench-public``) fetches
every file of ``benchmarks/public_files.toml`` at its commit into
``.cache/public/<owner>+<name>/<path>`` (or ``DIR``).

Why a list and a fetch, not copies: public code is never committed to this repository,
but the speed of the engine on real training code (a 4,000-line engine class, a
5,000-line training loop) is what users feel, and a generated file does not have its
shapes. The commit pins the text, so two runs of the benchmark check the same code.
Each repository is fetched shallow, without the blobs of other files, and checked out
sparse: only the listed paths land on disk.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
LIST = HERE / "public_files.toml"
DEFAULT_ROOT = HERE.parent / ".cache" / "public"
#: Where the files are when ``--public`` is not given (same layout as ``DEFAULT_ROOT``).
ENVIRONMENT = "GRAPHLIFE_BENCH_PUBLIC"


@dataclass(frozen=True)
class PublicFile:
    """One file of a public repository, at one commit."""

    name: str
    repository: str  # https://github.com/<owner>/<name>
    commit: str
    path: str  # inside the repository

    @property
    def folder(self) -> str:
        """``<owner>+<name>``: the folder of the repository under the root."""
        owner, name = self.repository.rstrip("/").removesuffix(".git").split("/")[-2:]
        return f"{owner}+{name}"

    def location(self, root: Path) -> Path:
        return root / self.folder / self.path


def load(path: Path = LIST) -> list[PublicFile]:
    """The files of the list, in its order."""
    with open(path, "rb") as handle:
        entries = tomllib.load(handle)["file"]
    return [PublicFile(e["name"], e["repository"], e["commit"], e["path"]) for e in entries]


def root_folder(option: str | None) -> Path:
    """The folder given on the command line, else ``$GRAPHLIFE_BENCH_PUBLIC``, else ``.cache/public``."""
    return Path(option or os.environ.get(ENVIRONMENT) or DEFAULT_ROOT)


def fetch(files: list[PublicFile], root: Path) -> list[str]:
    """Fetch each repository's listed paths at their commit into ``root``; what failed, said."""
    problems = []
    by_checkout: dict[tuple[str, str, str], list[str]] = {}
    for file in files:
        by_checkout.setdefault((file.repository, file.commit, file.folder), []).append(file.path)
    for (repository, commit, folder), paths in by_checkout.items():
        target = root / folder
        if _checked_out(target, commit) and all((target / p).is_file() for p in paths):
            print(f"{folder}: present at {commit[:12]}")
            continue
        try:
            _sparse_checkout(repository, commit, target, paths)
            print(f"{folder}: fetched {len(paths)} file(s) at {commit[:12]}")
        except (OSError, subprocess.CalledProcessError) as exc:
            detail = exc.stderr.strip().splitlines()[-1] if getattr(exc, "stderr", None) else str(exc)
            problems.append(f"{folder}: not fetched from {repository} ({detail})")
    return problems


def _checked_out(target: Path, commit: str) -> bool:
    if not (target / ".git").exists():
        return False
    head = subprocess.run(["git", "-C", str(target), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return head.returncode == 0 and head.stdout.strip() == commit


def _sparse_checkout(repository: str, commit: str, target: Path, paths: list[str]) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(target), *args], capture_output=True, text=True, check=True)

    target.mkdir(parents=True, exist_ok=True)
    git("init", "-q")
    git("config", "core.sparseCheckout", "true")
    (target / ".git" / "info").mkdir(exist_ok=True)
    (target / ".git" / "info" / "sparse-checkout").write_text("".join(f"/{p}\n" for p in paths))
    git("fetch", "-q", "--depth", "1", "--filter=blob:none", repository, commit)
    git("-c", "advice.detachedHead=false", "checkout", "-q", "--detach", "FETCH_HEAD")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--into", help=f"where to put them (default: ${ENVIRONMENT}, else .cache/public)")
    args = parser.parse_args(argv)
    problems = fetch(load(), root_folder(args.into))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
