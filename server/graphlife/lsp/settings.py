"""The user's settings, from the editor and from pyproject.toml.

Three sources, later ones winning for the keys they set:

1. ``initializationOptions.settings`` — what the client knew at start-up;
2. ``workspace/configuration`` (section ``graphlife``), pulled after
   ``initialized`` and again on every ``workspace/didChangeConfiguration``
   (clients without the pull model send the settings in that notification);
3. ``[tool.graphlife]`` of the pyproject.toml nearest to the file — the project's
   choice beats the user's editor, as in ruff (:func:`graphlife.config.config_for_path`).

The editor's keys are graphlife's own (``enable``, ``select``, ``ignore``,
``severity``, ``lintOnChange``) plus the server's ``debounce`` (milliseconds),
which is not a checker setting and is taken out before the rest goes to
:meth:`Config.merged`, as are the :data:`EDITOR_OPTIONS` (``showSyntaxErrors``,
``reportingScope``: what the server shows, per workspace folder). A broken
setting is logged once and skipped; the others still apply.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lsprotocol import types

from graphlife import i18n
from graphlife.config import Config, config_for_path
from graphlife.i18n import Language

#: The editor's keys of rule selection: a later editor layer's value replaces an earlier one's.
_RULE_KEYS = frozenset({"select", "ignore", "extendSelect", "extend-select", "extend_select", "extendIgnore",
                        "extend-ignore", "extend_ignore"})

#: Seconds between the last edit and the analysis.
DEFAULT_DEBOUNCE = 0.3
#: Seconds the checker may spend on one file before it skips what is left.
DEFAULT_TIME_BUDGET = 5.0

#: Settings of the editor that are about what the server shows, not about what the checker
#: finds (so not :class:`Config` fields, and not valid in pyproject.toml): their defaults, and
#: the values each may take (``None``: true or false).
EDITOR_OPTIONS: dict[str, tuple[Any, tuple[str, ...] | None]] = {
    "showSyntaxErrors": (True, None),
    "reportingScope": ("file", ("file", "workspace")),
    # The language of messages, hovers and action titles: ``auto`` follows the editor's display
    # language (the ``locale`` of ``initialize``); see :attr:`Settings.language`.
    "language": ("auto", ("auto", "en", "zh-cn", "zh-CN")),
}


class Settings:
    """The editor's settings and the per-file :class:`Config` derived from them."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report  # logs a problem message
        self._reported: set[str] = set()
        self._layers: dict[str, tuple[dict[str, Any], str]] = {}  # layer -> (raw settings, source name)
        self.debounce = DEFAULT_DEBOUNCE
        self.time_budget = DEFAULT_TIME_BUDGET
        self._base = Config()
        #: Multi-root workspaces: folder path -> (raw settings the client gave for that folder, source).
        self._folders: dict[str, tuple[dict[str, Any], str]] = {}
        self._folder_bases: dict[str, Config] = {}
        self._options: dict[str, Any] = {}
        self._folder_options: dict[str, dict[str, Any]] = {}
        #: The display language the client named in ``initialize`` (``locale``), if any.
        self.client_locale: str | None = None

    def update(self, raw: Any, source: str, layer: str = "client") -> None:
        """Set one layer of editor settings (``"init"`` or ``"client"``) and recompute.

        The ``client`` layer (workspace/configuration) is applied over the ``init``
        layer (initializationOptions), key by key: a client that answers ``null``
        or leaves a key out keeps what initializationOptions said.
        """
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            self._problem(f"{source}: the `graphlife` settings must be an object, got {type(raw).__name__}; ignored")
            raw = {}
        self._layers[layer] = (dict(raw), source)
        self._recompute()

    def update_folders(self, folders: dict[str, tuple[Any, str]]) -> None:
        """Per-folder answers of ``workspace/configuration`` (``scopeUri`` = the folder), replacing the old ones.

        A folder's answer is the client's settings as they apply in that folder
        (user, workspace and folder settings resolved), so it takes the place of
        the global answer for the files under the folder.
        """
        self._folders = {}
        for folder, (raw, source) in folders.items():
            if raw is None:
                continue
            if not isinstance(raw, Mapping):
                self._problem(
                    f"{source}: the `graphlife` settings must be an object, got {type(raw).__name__}; ignored"
                )
                continue
            self._folders[folder] = (dict(raw), source)
        self._recompute()

    def _recompute(self) -> None:
        self.debounce = DEFAULT_DEBOUNCE
        self._base = self._layered(["init", "client"], self._layers)
        self._folder_bases = {
            folder: self._layered(["init", folder], {**self._layers, folder: layer}, keep_debounce=True)
            for folder, layer in self._folders.items()
        }
        self._options = self._editor_options(["init", "client"], self._layers)
        self._folder_options = {
            folder: self._editor_options(["init", folder], {**self._layers, folder: layer})
            for folder, layer in self._folders.items()
        }

    def _editor_options(self, order: list[str], layers: dict) -> dict[str, Any]:
        """The :data:`EDITOR_OPTIONS` the layers set, later layers winning; a wrong value is
        reported and skipped."""
        options: dict[str, Any] = {}
        for layer in order:
            if layer not in layers:
                continue
            raw, source = layers[layer]
            for name, (_, allowed) in EDITOR_OPTIONS.items():
                if name not in raw:
                    continue
                value = raw[name]
                if allowed is None and not isinstance(value, bool):
                    self._problem(f"{source}: `{name}` must be true or false; ignored")
                elif allowed is not None and value not in allowed:
                    self._problem(f"{source}: `{name}` must be one of {', '.join(allowed)}; ignored")
                else:
                    options[name] = value
        return options

    @property
    def language(self) -> Language:
        """The language the server speaks: the ``graphlife.language`` setting, or for ``auto``
        the client's display language (English when it is not one graphlife writes). One
        language for the whole server: the user reads one editor."""
        fallback = i18n.normalize(self.client_locale) or i18n.ENGLISH
        return i18n.choose(self.option(None, "language"), fallback)

    def option(self, path: str | None, name: str) -> Any:
        """An :data:`EDITOR_OPTIONS` value for a file: its workspace folder's, else the global one."""
        folder = self._folder_of(path, self._folder_options)
        options = self._folder_options[folder] if folder is not None else self._options
        return options.get(name, EDITOR_OPTIONS[name][0])

    def _layered(self, order: list[str], layers: dict, keep_debounce: bool = False) -> Config:
        """A config built from ``Config()`` with the given layers applied in order."""
        config = Config()
        saved_debounce = self.debounce
        present = [layer for layer in order if layer in layers]
        for position, layer in enumerate(present):
            raw, source = layers[layer]
            # The editor's layers replace each other key by key (a later answer that sets
            # `ignore` replaces the earlier `ignore`), where pyproject's layer adds to them.
            # The EDITOR_OPTIONS are not checker settings (read by `_editor_options`).
            later_keys = {key for later in present[position + 1:] for key in layers[later][0]}
            raw = {key: value for key, value in raw.items()
                   if key not in EDITOR_OPTIONS and not (key in later_keys and key in _RULE_KEYS)}
            debounce = raw.pop("debounce", None)
            if debounce is not None:
                if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and 0 <= debounce <= 10_000:
                    self.debounce = debounce / 1000.0
                else:
                    self._problem(f"{source}: `debounce` must be a number of milliseconds (0-10000); ignored")
            try:
                config = config.merged(raw, source)
            except Exception as exc:  # noqa: BLE001 - a settings bug must never stop linting
                self._problem(f"{source}: settings could not be read ({exc!r}); ignored")
        if keep_debounce:  # the debounce is one server-wide value: the global answer's
            self.debounce = saved_debounce
        for problem in config.problems:
            self._problem(problem)
        return config

    @property
    def base(self) -> Config:
        """The editor's settings alone (before pyproject.toml)."""
        return self._base

    def editor_config_for(self, path: str | None) -> Config:
        """The editor's settings for a file: its workspace folder's (innermost) if it has any, else the global ones."""
        folder = self._folder_of(path, self._folder_bases)
        return self._folder_bases[folder] if folder is not None else self._base

    @staticmethod
    def _folder_of(path: str | None, folders: Mapping[str, Any]) -> str | None:
        """The innermost of ``folders`` that holds ``path``."""
        if not path:
            return None
        holding = [f for f in folders if path == f or path.startswith(f.rstrip(os.sep) + os.sep)]
        return max(holding, key=len) if holding else None

    def config_for(self, path: str | None) -> Config:
        """The config for one file: the editor's settings with its pyproject.toml on top."""
        base = self.editor_config_for(path)
        try:
            config = config_for_path(base, path)
        except Exception as exc:  # noqa: BLE001
            self._problem(f"{path}: pyproject.toml settings could not be used ({exc!r}); using the editor's")
            return base
        for problem in config.problems:
            self._problem(problem)
        return config

    def _problem(self, message: str) -> None:
        """Report each distinct problem once, not on every keystroke."""
        if message in self._reported:
            return
        self._reported.add(message)
        self._report(message)


def from_initialization_options(options: Any) -> Any:
    """``{"settings": {...}}`` (the Python-tools template's shape) or the settings themselves."""
    if isinstance(options, Mapping) and "settings" in options:
        return options["settings"]
    return options


def configuration_params(folder_uris: Sequence[str] = ()) -> types.ConfigurationParams:
    """The ``workspace/configuration`` request: the ``graphlife`` section globally, then per workspace folder."""
    return types.ConfigurationParams(
        items=[types.ConfigurationItem(section="graphlife")]
        + [types.ConfigurationItem(section="graphlife", scope_uri=uri) for uri in folder_uris]
    )
