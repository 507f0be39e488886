"""User settings shared by the checker and the language server.

Settings come from three places: command-line flags, the editor's ``graphlife.*``
settings, and ``[tool.graphlife]`` in the nearest ``pyproject.toml`` that has such a
section (a nested project without one inherits the settings above it, as in ruff). In
the editor, what pyproject sets wins over the editor's settings; on the command line,
flags win over pyproject, as in ruff (:func:`config_for_path`).

Rule selection follows ruff's layers (:class:`RuleLayer`): each source of settings is a
layer applied on top of the earlier ones; a layer's ``select`` starts over,
``extend-select`` adds, ``ignore`` takes away, and inside one layer the more specific
of a matching select and ignore wins.

A broken setting never stops the analysis: it is reported in ``problems`` and the
rest of the settings still apply.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from graphlife.findings import Severity

#: Folders and files a folder walk leaves out unless ``exclude`` says otherwise
#: (gitignore-style patterns; a name alone matches at any depth).
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", "env", ".env", "__pycache__", "build", "dist",
    "node_modules", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages",
    ".eggs", "*.egg-info", ".ipynb_checkpoints", ".graphlife_cache",
)


class RuleLayer(NamedTuple):
    """One source's rule selection (ruff's layering): ``select`` (``None``: keep what the
    earlier layers chose) and ``extend_select`` turn codes on, ``ignore`` turns them off."""

    select: tuple[str, ...] | None
    extend_select: tuple[str, ...]
    ignore: tuple[str, ...]

    def decide(self, code: str, enabled: bool) -> bool:
        """Whether ``code`` runs after this layer, given whether it ran before it. The more
        specific (longer) matching prefix wins; at equal length, ignore wins (as in ruff)."""
        chosen = (*(self.select or ()), *self.extend_select)
        best_select = max((len(p) for p in chosen if code.startswith(p)), default=-1)
        best_ignore = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        if best_ignore >= 0 and best_ignore >= best_select:
            return False
        if best_select >= 0:
            return True
        return False if self.select is not None else enabled

    def codes(self) -> tuple[str, ...]:
        return (*(self.select or ()), *self.extend_select, *self.ignore)


class PathPattern(NamedTuple):
    """A gitignore-style pattern and the folder it is relative to (its settings file's)."""

    base: str
    pattern: str


@dataclass(frozen=True)
class Config:
    """Which rules run and how loud they are, and which files a folder walk leaves out."""

    enable: bool = True
    select: tuple[str, ...] = ()  # codes or prefixes; empty means every rule
    ignore: tuple[str, ...] = ()  # codes or prefixes
    #: Later layers of rule selection, applied in order over ``select`` / ``ignore``.
    rule_layers: tuple[RuleLayer, ...] = ()
    severity: Mapping[str, Severity | None] = field(default_factory=dict)  # None = off
    lint_on_change: bool = True
    #: Extra folders imports are searched in, after the entry file's folder and the project
    #: root (ruff's spelling). From a pyproject.toml they are absolute (taken from its folder).
    src: tuple[str, ...] = ()
    #: What a folder walk leaves out: ``None`` is :data:`DEFAULT_EXCLUDE`; ``extend_exclude`` adds.
    exclude: tuple[PathPattern, ...] | None = None
    extend_exclude: tuple[PathPattern, ...] = ()
    #: Codes turned off in the files a pattern matches (applied by :func:`config_for_path`).
    per_file_ignores: tuple[tuple[PathPattern, tuple[str, ...]], ...] = ()
    respect_gitignore: bool = True
    problems: tuple[str, ...] = ()  # messages about settings that could not be used

    def is_enabled(self, code: str) -> bool:
        """A code runs when selected (or nothing is selected) and not ignored.

        As in ruff, the longer (more specific) of a matching select and ignore
        prefix wins, so ``select=["GL1"], ignore=["GL105"]`` keeps GL101..GL104.
        """
        if not self.enable:
            return False
        enabled = RuleLayer(self.select or None, (), self.ignore).decide(code, True)
        for layer in self.rule_layers:
            enabled = layer.decide(code, enabled)
        return enabled and self.severity_for(code, Severity.ERROR) is not None

    def rule_codes(self) -> tuple[str, ...]:
        """Every code or prefix the settings name (to check that they name rules at all)."""
        codes = [*self.select, *self.ignore, *self.severity]
        for layer in self.rule_layers:
            codes.extend(layer.codes())
        for _, ignored in self.per_file_ignores:
            codes.extend(ignored)
        return tuple(dict.fromkeys(codes))

    def excluded_patterns(self) -> tuple[PathPattern, ...]:
        """What a folder walk leaves out: ``exclude`` (or the defaults) and ``extend_exclude``."""
        exclude = self.exclude if self.exclude is not None else tuple(PathPattern("", p) for p in DEFAULT_EXCLUDE)
        return (*exclude, *self.extend_exclude)

    def severity_for(self, code: str, default: Severity) -> Severity | None:
        """The user's override for a code (longest matching prefix), else the rule's own."""
        matches = [p for p in self.severity if code.startswith(p)]
        if not matches:
            return default
        return self.severity[max(matches, key=len)]

    def merged(self, other: Mapping[str, Any], source: str,
               base_folder: str | os.PathLike[str] | None = None) -> Config:
        """This config with the keys of ``other`` applied on top (``other`` wins; its rule
        selection is a new :class:`RuleLayer`). Relative folders in ``src`` and patterns
        are taken from ``base_folder`` (the pyproject.toml's folder), or from the current
        folder without one."""
        fields = _parse_settings(other, source, self.problems, base_folder)
        layer = fields.pop("rule_layer", None)
        if layer is not None:
            fields["rule_layers"] = (*self.rule_layers, layer)
        return replace(self, **fields)


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


def _as_patterns(value: Any, key: str, source: str, base: str, problems: list[str]) -> tuple[PathPattern, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        problems.append(f"{source}: `{key}` must be a list of file patterns; ignored")
        return ()
    return tuple(PathPattern(base, v.strip()) for v in value if v.strip())


def _as_per_file_ignores(value: Any, key: str, source: str, base: str,
                         problems: list[str]) -> tuple[tuple[PathPattern, tuple[str, ...]], ...]:
    if not isinstance(value, Mapping):
        problems.append(f"{source}: `{key}` must map file patterns to lists of codes; ignored")
        return ()
    return tuple((PathPattern(base, str(pattern).strip()), _as_codes(codes, f"{key}.{pattern}", source, problems))
                 for pattern, codes in value.items() if str(pattern).strip())


#: The keys of one layer of rule selection (``extend-ignore`` is ruff's older name of ``ignore``).
_RULE_KEYS = ("select", "extend_select", "ignore", "extend_ignore")


def _parse_settings(raw: object, source: str, earlier: Iterable[str],
                    base_folder: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Turn a settings mapping into Config fields (the rule selection as ``rule_layer``),
    collecting what could not be used."""
    problems = list(earlier)
    out: dict[str, Any] = {}
    base = os.path.abspath(base_folder if base_folder is not None else os.curdir)
    layer: dict[str, tuple[str, ...]] = {}
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
        elif normalized in _RULE_KEYS:
            target = "ignore" if normalized == "extend_ignore" else normalized
            layer[target] = layer.get(target, ()) + _as_codes(value, key, source, problems)
        elif normalized in ("exclude", "extend_exclude"):
            out[normalized] = _as_patterns(value, key, source, base, problems)
        elif normalized == "per_file_ignores":
            out["per_file_ignores"] = _as_per_file_ignores(value, key, source, base, problems)
        elif normalized == "respect_gitignore":
            if isinstance(value, bool):
                out[normalized] = value
            else:
                problems.append(f"{source}: `{key}` must be true or false; ignored")
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
        elif normalized in ("interpreter", "trace", "path", "show_notifications", "log_level", "diagnosticMode"):
            continue  # client-side settings; the server has nothing to do with them
        else:
            problems.append(f"{source}: unknown setting `{key}`; ignored")
    if layer:
        # An empty `select` (the editor's default, or a broken value) selects every rule, as it always has
        # in graphlife: it does not start over with nothing.
        out["rule_layer"] = RuleLayer(layer.get("select") or None, layer.get("extend_select", ()),
                                      layer.get("ignore", ()))
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
    tool = data.get("tool")
    section = tool.get("graphlife") if isinstance(tool, dict) else None
    if section is not None and not isinstance(section, dict):
        return None, f"{path}: [tool.graphlife] must be a table; ignored"
    return section, None


def read_settings_file(path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, str | None]:
    """``[tool.graphlife]`` of one pyproject.toml (``None`` without one) and a problem message."""
    try:
        mtime = Path(path).stat().st_mtime
    except OSError as exc:
        return None, f"{path}: cannot read: {exc.strerror or exc}"
    return _read_pyproject(str(path), mtime)


def pyproject_settings(start: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, str | None, Path | None]:
    """``[tool.graphlife]`` of the nearest pyproject.toml that has that section, a problem
    message, and its path. As in ruff, a nested pyproject.toml without the section (a
    sub-package's own project) does not hide the settings of the project around it."""
    here = Path(start).resolve()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if not candidate.is_file():
            continue
        section, problem = read_settings_file(candidate)
        if section is not None or problem is not None:
            return section, problem, candidate
    return None, None, None


@dataclass(frozen=True)
class CommandLineSettings:
    """What the command line says about settings: a settings file to use instead of the
    discovered ones (``--config PATH``), and layers that win over any file (flags and
    ``--config KEY=VALUE``), each with the name its problems are reported under."""

    config_file: str | None = None
    layers: tuple[tuple[Mapping[str, Any], str], ...] = ()
    #: ``--isolated``: no settings file at all.
    isolated: bool = False


def config_for_path(base: Config, path: str | os.PathLike[str] | None,
                    command_line: CommandLineSettings | None = None) -> Config:
    """The settings of one file: ``base`` (defaults, or the editor's settings), the nearest
    ``[tool.graphlife]`` on top (or ``--config``'s), then the command line's layers on top of
    that (flags win over files, as in ruff), then the ``per-file-ignores`` that match ``path``."""
    if path is None and command_line is None:
        return base
    config = base
    section: dict[str, Any] | None = None
    problem: str | None = None
    pyproject: Path | None = None
    if command_line is not None and command_line.isolated:
        pass
    elif command_line is not None and command_line.config_file is not None:
        section, problem = read_settings_file(command_line.config_file)
        pyproject = Path(command_line.config_file).resolve()
        if section is None and problem is None:
            problem = f"{command_line.config_file}: has no [tool.graphlife] section"
    elif path is not None:
        section, problem, pyproject = pyproject_settings(path)
    else:
        section, problem, pyproject = pyproject_settings(os.curdir)
    if problem:
        config = replace(config, problems=(*config.problems, problem))
    if section:
        config = config.merged(section, str(pyproject), base_folder=pyproject.parent if pyproject else None)
    for layer, source in command_line.layers if command_line is not None else ():
        config = config.merged(layer, source)
    return with_per_file_ignores(config, path)


def with_per_file_ignores(config: Config, path: str | os.PathLike[str] | None) -> Config:
    """``config`` with one more rule layer ignoring what ``per-file-ignores`` names for ``path``."""
    if path is None or not config.per_file_ignores:
        return config
    from graphlife.path_patterns import matches  # noqa: PLC0415 - only settings with patterns pay for it

    ignored = tuple(code for pattern, codes in config.per_file_ignores
                    if matches(pattern.pattern, os.fspath(path), pattern.base) for code in codes)
    if not ignored:
        return config
    return replace(config, rule_layers=(*config.rule_layers, RuleLayer(None, (), ignored)))
