"""Put the language server and its Python libraries into ``bundled/`` for the .vsix.

Users install the extension and need nothing but a Python 3.10+: nothing is
pip-installed into their environment. The layout (read by client/src/serverCommand.ts):

    bundled/graphlife/        a copy of server/graphlife (no __pycache__)
    bundled/libs/common/      pure-Python dependencies: pygls, lsprotocol, cattrs, attrs, ...
    bundled/libs/cp3XX/       compiled ones for one Python minor: libcst, pyyaml (+ tomli on 3.10)

libcst and pyyaml ship one wheel per Python minor, so each supported minor gets
its own folder; the client puts the one matching the interpreter on PYTHONPATH.
Wheels are for this machine's platform (a .vsix built on Linux x86-64 is for
Linux x86-64, as with ``vsce package --target``).

Usage: python tools/bundle_python.py [--out bundled] [--pythons 3.10,3.11,...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Pinned so that a .vsix is reproducible; keep in step with the `lsp` extra of pyproject.toml.
# exceptiongroup is named because pip resolves markers for this machine's Python, and
# cattrs needs it on 3.10.
PURE = ["pygls==2.1.1", "lsprotocol==2025.0.0", "exceptiongroup>=1.1.1", "pathspec==1.1.1"]
COMPILED = ["libcst==1.9.0"]
PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]


def platform_tags() -> list[str]:
    """Wheel platform tags this machine accepts, most specific first (for pip --platform)."""
    from packaging.tags import sys_tags  # pip vendors packaging; the venv has it too

    seen: list[str] = []
    for tag in sys_tags():
        if tag.platform not in seen and tag.platform != "any":
            seen.append(tag.platform)
    return seen


def pip_install(
    target: Path, requirements: list[str], python: str, platforms: list[str], no_deps: bool = False
) -> None:
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--target", str(target), "--only-binary=:all:", "--implementation", "cp",
        "--python-version", python, "--no-compile", "--upgrade",
    ]
    for platform in platforms:
        command += ["--platform", platform]
    if no_deps:
        command.append("--no-deps")
    command += requirements
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"bundle_python: pip could not install {' '.join(requirements)} for Python {python}")


def tidy(folder: Path) -> None:
    """Drop what the server never runs, to keep the .vsix small: pip's bin/ scripts,
    caches, libcst's own test suite, and PyYAML's C speed-up (libcst only reads a
    config file with it; the pure-Python loader is enough)."""
    shutil.rmtree(folder / "bin", ignore_errors=True)
    for path in [*folder.rglob("__pycache__"), *folder.glob("libcst/**/tests")]:
        shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(folder / "_yaml", ignore_errors=True)
    for speedup in folder.glob("yaml/_yaml*.so"):
        speedup.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bundled")
    parser.add_argument("--pythons", default=",".join(PYTHONS), help="Python minors to bundle compiled libraries for")
    args = parser.parse_args(argv)

    out: Path = args.out
    pythons = [p.strip() for p in args.pythons.split(",") if p.strip()]
    platforms = platform_tags()
    if not platforms:
        raise SystemExit("bundle_python: cannot tell this machine's wheel platform")

    shutil.rmtree(out, ignore_errors=True)
    (out / "libs").mkdir(parents=True)

    shutil.copytree(
        ROOT / "server" / "graphlife", out / "graphlife", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )

    # Resolved for the oldest Python so that its conditional dependencies
    # (exceptiongroup, typing_extensions) are there; they are harmless on newer ones.
    pip_install(out / "libs" / "common", PURE, pythons[0], platforms)
    tidy(out / "libs" / "common")

    for python in pythons:
        tag = "cp" + python.replace(".", "")
        folder = out / "libs" / tag
        extra = ["tomli>=2"] if python == "3.10" else []  # tomllib is 3.11+
        pip_install(folder, COMPILED + extra, python, platforms)
        # typing_extensions is in common/; a second copy here would shadow it.
        for dup in folder.glob("typing_extensions*"):
            shutil.rmtree(dup, ignore_errors=True) if dup.is_dir() else dup.unlink()
        tidy(folder)

    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    print(f"bundled the server and its libraries for Python {', '.join(pythons)} "
          f"({sysconfig.get_platform()}) into {shown}: {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
