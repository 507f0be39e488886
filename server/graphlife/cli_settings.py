"""The settings a `graphlife check` run takes from its command line, as ruff takes them.

- Flags win over settings files: they are the last :class:`~graphlife.config.RuleLayer`
  (``--select`` starts over, ``--extend-select`` adds, ``--ignore`` takes away).
- A flag given twice adds up (``--select GL1 --select GL3`` selects both), as ruff does;
  each value may also list codes separated by commas.
- ``--config PATH`` uses that file's ``[tool.graphlife]`` instead of the discovered ones;
  ``--config "KEY = VALUE"`` is one more layer of settings over everything (TOML).
- ``--isolated`` reads no settings file at all.
- A code or prefix that names no rule (``--select GL999``, a typo in pyproject) is an error:
  a run that checks nothing must not pass green.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from graphlife.config import CommandLineSettings, Config, pyproject_settings


class UsageError(Exception):
    """A command line that cannot be run as given (exit status 2, with this message)."""


def _split(values: Iterable[str] | None) -> list[str]:
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]


def _inline_setting(text: str) -> dict[str, Any]:
    """``--config "select = ['GL1']"``: one TOML key, as ruff's ``--config KEY=VALUE``."""
    if sys.version_info >= (3, 11):
        import tomllib  # noqa: PLC0415
    else:
        import tomli as tomllib  # noqa: PLC0415
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"--config {text!r} is neither a settings file nor a TOML `key = value`: {exc}") from exc


def command_line_settings(args: argparse.Namespace) -> CommandLineSettings:
    """The settings file and layers the flags of ``args`` name; :class:`UsageError` for a bad one."""
    config_file: str | None = None
    layers: list[tuple[dict[str, Any], str]] = []
    for value in getattr(args, "config", None) or ():
        if os.path.isfile(value) or "=" not in value:
            if not os.path.isfile(value):
                raise UsageError(f"--config {value}: no such settings file")
            config_file = value
        else:
            layers.append((_inline_setting(value), f"--config {value!r}"))
    flags: dict[str, Any] = {}
    for flag in ("select", "extend_select", "ignore", "exclude", "extend_exclude"):
        values = _split(getattr(args, flag, None))
        if values:
            flags[flag] = values
    if getattr(args, "no_respect_gitignore", False):
        flags["respect_gitignore"] = False
    if flags:
        layers.append((flags, "command line"))
    isolated = bool(getattr(args, "isolated", False))
    if isolated and config_file is not None:
        raise UsageError("--isolated and --config PATH contradict each other")
    return CommandLineSettings(config_file=config_file, layers=tuple(layers), isolated=isolated)


@dataclass(frozen=True)
class RuleCatalog:
    """The codes of graphlife's rules, read from the names of the rule modules (``gl101_*.py``)
    so that checking the settings does not import the engine."""

    codes: tuple[str, ...]

    @classmethod
    def load(cls) -> RuleCatalog:
        spec = importlib.util.find_spec("graphlife.rules")
        folders = list(spec.submodule_search_locations or ()) if spec is not None else []
        codes = sorted({f"GL{name[2:5]}" for folder in folders for name in os.listdir(folder)
                        if name.startswith("gl") and name[2:5].isdigit() and name.endswith(".py")})
        return cls(tuple(codes))

    def names_a_rule(self, code: str) -> bool:
        return any(known.startswith(code) for known in self.codes)


def unknown_codes(codes: Iterable[str], catalog: RuleCatalog) -> list[str]:
    return [code for code in dict.fromkeys(codes) if not catalog.names_a_rule(code)]


def check_codes(args: argparse.Namespace, configs: Iterable[tuple[str, Config]], catalog: RuleCatalog) -> list[str]:
    """One message per code or prefix that names no rule, saying where it was written."""
    messages = []
    for flag in ("select", "extend_select", "ignore"):
        for code in unknown_codes((c.upper() for c in _split(getattr(args, flag, None))), catalog):
            messages.append(f"--{flag.replace('_', '-')} {code}: no rule has this code or prefix "
                            "(`graphlife rules` lists them)")
    from_flags = {code.upper() for flag in ("select", "extend_select", "ignore")
                  for code in _split(getattr(args, flag, None))}
    seen: set[tuple[str, str]] = set()
    for path, config in configs:
        for code in unknown_codes(config.rule_codes(), catalog):
            if code in from_flags:
                continue
            source = _settings_file_of(args, path)
            if (source, code) in seen:
                continue
            seen.add((source, code))
            messages.append(f"{source}: `{code}` is not a graphlife rule code or prefix "
                            "(`graphlife rules` lists them)")
    return messages


def _settings_file_of(args: argparse.Namespace, path: str) -> str:
    files = [value for value in getattr(args, "config", None) or () if os.path.isfile(value)]
    if files:
        return files[-1]
    inline = [value for value in getattr(args, "config", None) or () if not os.path.isfile(value)]
    _, _, pyproject = pyproject_settings(path)
    if pyproject is not None:
        return str(pyproject)
    return f"--config {inline[-1]!r}" if inline else "the settings"
