"""User settings shared by the checker and the language server.

Settings come from three places: command-line flags or the editor's
``graphlife.*`` settings, and ``[tool.graphlife]`` in the nearest
``pyproject.toml``. As in ruff, what pyproject sets wins over the editor.
A broken setting never stops the analysis: it is reported in ``problems`` and
the rest of the settings still apply.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from graphlife.findings import Severity


@dataclass(frozen=True)
class Config:
    """Which rules run and how loud they are."""

    enable: bool = True
    select: tuple[str, ...] = ()  # codes or prefixes; empty means every rule
    ignore: tuple[str, ...] = ()  # codes or prefixes
    severity: Mapping[str, Severity | None] = field(default_factory=dict)  # None = off
    lint_on_change: bool = True
    #: Extra folders imports are searched in, after the entry file's folder and the project
    #: root (ruff's spelling). From a pyproject.toml they are absolute (taken from its folder).
    src: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # messages about settings that could not be used

    def is_enabled(self, code: str) -> bool:
        """A code runs when selected (or nothing is selected) and not ignored.

        As in ruff, the longer (more specific) of a matching select and ignore
        prefix wins, so ``select=["GL1"], ignore=["GL105"]`` keeps GL101..GL104.
        """
        if not self.enable:
            return False
        best_select = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        if self.select and best_select < 0:
            return False
        best_ignore = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        if best_ignore >= 0 and best_ignore >= best_select:
            return False
        return self.severity_for(code, Severity.ERROR) is not None

    def severity_for(self, code: str, default: Severity) -> Severity | None:
        """The user's override for a code (longest matching prefix), else the rule's own."""
        matches = [p for p in self.severity if code.startswith(p)]
        if not matches:
            return default
        return self.severity[max(matches, key=len)]

    def merged(self, other: Mapping[str, Any], source: str,
               base_folder: str | os.PathLike[str] | None = None) -> Config:
        """This config with the keys of ``other`` applied on top (``other`` wins). Relative
        folders in ``src`` are taken from ``base_folder`` (the pyproject.toml's folder), or
        left relative (to the current folder) without one."""
        return replace(self, **_parse_settings(other, source, self.problems, base_folder))


def _as_codes(value: Any, key: str, source: str, problems: list[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        problems.append(f"{source}: `{key}` must be a list of rule codes or prefixes; ignored")
        return ()
    codes = tuple(v.strip().upper() for v in value if v.strip())
    for code in codes:
        if not code.startswith("GL"):
            problems.append(f"{source}: `{key}` has `{code}`, which is not a graphlife code (GLnnn)")
    return codes


def _as_folders(value: Any, key: str, source: str, base_folder: str | os.PathLike[str] | None,
                problems: list[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        problems.append(f"{source}: `{key}` must be a list of folders; ignored")
        return ()
    folders = []
    for raw in value:
        if not raw.strip():
            problems.append(f"{source}: `{key}` has an empty folder name; ignored")
            continue
        folder = os.path.normpath(os.path.join(base_folder, raw)) if base_folder is not None else raw
        if base_folder is not None and not os.path.isdir(folder):
            problems.append(f"{source}: `{key}` has `{raw}`, which is not a folder")
        folders.append(folder)
    return tuple(folders)


def _parse_settings(raw: object, source: str, earlier: Iterable[str],
                    base_folder: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Turn a settings mapping into Config fields, collecting what could not be used."""
    problems = list(earlier)
    out: dict[str, Any] = {}
    if not isinstance(raw, Mapping):
        problems.append(f"{source}: settings must be a table/object, got {type(raw).__name__}")
        out["problems"] = tuple(problems)
        return out
    for key, value in raw.items():
        normalized = key.replace("-", "_")
        if normalized in ("lintOnChange", "lint_on_change"):
            normalized = "lint_on_change"
        if normalized in ("enable", "lint_on_change"):
            if isinstance(value, bool):
                out[normalized] = value
            else:
                problems.append(f"{source}: `{key}` must be true or false; ignored")
        elif normalized in ("select", "ignore", "extend_select", "extend_ignore"):
            target = normalized.replace("extend_", "")
            out[target] = out.get(target, ()) + _as_codes(value, key, source, problems)
        elif normalized == "severity":
            if not isinstance(value, Mapping):
                problems.append(f"{source}: `severity` must map codes to error/warning/information/hint/off")
                continue
            levels: dict[str, Severity | None] = {}
            for code, level in value.items():
                try:
                    levels[str(code).upper()] = Severity.parse(str(level))
                except ValueError:
                    problems.append(
                        f"{source}: severity `{level}` for {code} is not one of "
                        "error, warning, information, hint, off; ignored"
                    )
            out["severity"] = levels
        elif normalized == "src":
            out["src"] = _as_folders(value, key, source, base_folder, problems)
        elif normalized in ("interpreter", "trace", "path", "show_notifications", "log_level"):
            continue  # client-side settings; the server has nothing to do with them
        else:
            problems.append(f"{source}: unknown setting `{key}`; ignored")
    out["problems"] = tuple(problems)
    return out


def find_pyproject(start: str | os.PathLike[str]) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` (a file or a folder)."""
    here = Path(start).resolve()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


@functools.lru_cache(maxsize=64)
def _read_pyproject(path: str, mtime: float) -> tuple[dict[str, Any] | None, str | None]:
    # Imported here, not at the top: checking a file with no pyproject.toml above it
    # should not pay for the TOML parser (start-up of `graphlife check`).
    if sys.version_info >= (3, 11):
        import tomllib  # noqa: PLC0415
    else:  # Python 3.10: the same parser, from PyPI
        import tomli as tomllib  # noqa: PLC0415
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return None, f"{path}: cannot read [tool.graphlife]: {exc}"
    section = data.get("tool", {}).get("graphlife")
    return (section if isinstance(section, dict) else None), None


def pyproject_settings(start: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, str | None, Path | None]:
    """``[tool.graphlife]`` of the nearest pyproject.toml, a problem message, and its path."""
    path = find_pyproject(start)
    if path is None:
        return None, None, None
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None, None, None
    section, problem = _read_pyproject(str(path), mtime)
    return section, problem, path


def config_for_path(base: Config, path: str | os.PathLike[str] | None) -> Config:
    """``base`` (flags or editor settings) with the nearest pyproject's settings on top."""
    if path is None:
        return base
    section, problem, pyproject = pyproject_settings(path)
    config = base
    if problem:
        config = replace(config, problems=(*config.problems, problem))
    if section:
        config = config.merged(section, str(pyproject), base_folder=pyproject.parent if pyproject else None)
    return config
