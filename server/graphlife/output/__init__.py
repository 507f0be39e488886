"""What `graphlife check` prints: one module per output format, all reading one
:class:`~graphlife.output.report.RunResult`.

- :mod:`.text` — ``text`` (the full format: each finding with its source line marked,
  notes, a summary) and ``concise`` (one line per finding);
- :mod:`.json_format` — ``json`` (one document) and ``json-lines`` (one finding a line);
- :mod:`.sarif` — SARIF 2.1.0, for GitHub code scanning and other SARIF viewers;
- :mod:`.github` — GitHub Actions workflow commands (annotations on the pull request);
- :mod:`.junit` — JUnit XML, for CI dashboards;
- :mod:`.statistics` — ``--statistics``: how many findings of each rule.

Each module is imported only when its format is asked for: a pre-commit run of the
text format does not load the XML or SARIF writers.
"""

from __future__ import annotations

# Nothing at run time: a check answered from the cache imports :mod:`.text_render`, and with
# it this package, and must not pay for ``typing`` (nor ``importlib`` under the console script).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

    from graphlife.output.report import RunResult

#: ``--output-format`` value -> (module, function writing ``RunResult`` to a stream).
FORMATS: dict[str, tuple[str, str]] = {
    "text": ("text", "write_full"),
    "full": ("text", "write_full"),
    "concise": ("text", "write_concise"),
    "json": ("json_format", "write_json"),
    "json-lines": ("json_format", "write_json_lines"),
    "sarif": ("sarif", "write_sarif"),
    "github": ("github", "write_github"),
    "junit": ("junit", "write_junit"),
}


def write(output_format: str, result: RunResult, out: TextIO) -> None:
    """Write ``result`` to ``out`` in ``output_format`` (one of :data:`FORMATS`)."""
    import importlib  # noqa: PLC0415 - see the imports above

    module_name, function = FORMATS[output_format]
    module = importlib.import_module(f"{__name__}.{module_name}")
    getattr(module, function)(result, out)
