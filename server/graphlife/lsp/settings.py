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
:meth:`Config.merged`. A broken setting is logged once and skipped; the others
still apply.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from lsprotocol import types

from graphlife.config import Config, config_for_path

#: Seconds between the last edit and the analysis.
DEFAULT_DEBOUNCE = 0.3
#: Seconds the checker may spend on one file before it skips what is left.
DEFAULT_TIME_BUDGET = 5.0


class Settings:
    """The editor's settings and the per-file :class:`Config` derived from them."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report  # logs a problem message
        self._reported: set[str] = set()
        self._layers: dict[str, tuple[dict[str, Any], str]] = {}  # layer -> (raw settings, source name)
        self.debounce = DEFAULT_DEBOUNCE
        self.time_budget = DEFAULT_TIME_BUDGET
        self._base = Config()

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

    def _recompute(self) -> None:
        config = Config()
        self.debounce = DEFAULT_DEBOUNCE
        for layer in ("init", "client"):
            if layer not in self._layers:
                continue
            raw, source = self._layers[layer]
            raw = dict(raw)
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
        self._base = config
        for problem in config.problems:
            self._problem(problem)

    @property
    def base(self) -> Config:
        """The editor's settings alone (before pyproject.toml)."""
        return self._base

    def config_for(self, path: str | None) -> Config:
        """The config for one file: the editor's settings with its pyproject.toml on top."""
        try:
            config = config_for_path(self._base, path)
        except Exception as exc:  # noqa: BLE001
            self._problem(f"{path}: pyproject.toml settings could not be used ({exc!r}); using the editor's")
            return self._base
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


def configuration_params() -> types.ConfigurationParams:
    """The ``workspace/configuration`` request for the ``graphlife`` section."""
    return types.ConfigurationParams(items=[types.ConfigurationItem(section="graphlife")])
