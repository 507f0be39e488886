"""Which notebooks `graphlife check` analyzes: nbformat 4, with a Python kernel.

Why: an nbformat 3 notebook keeps its cells under ``worksheets``, so reading it as version
4 finds no cells and the notebook would silently pass; a notebook of an R or Julia kernel
is not Python, and every cell would be reported as a syntax error. Each is said in a note
instead (on standard error, and in the machine formats).
"""

from __future__ import annotations

from typing import Any


def kernel_language(notebook: dict[str, Any]) -> str | None:
    """The language the notebook's kernel runs (``kernelspec.language``, else
    ``language_info.name``), lower-cased; ``None`` when the notebook does not say."""
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return None
    for section, key in (("kernelspec", "language"), ("language_info", "name")):
        value = metadata.get(section)
        if isinstance(value, dict) and isinstance(value.get(key), str) and value[key].strip():
            return str(value[key]).strip().lower()
    return None


def why_not_checked(notebook: object) -> str | None:
    """A note saying why this notebook is not analyzed, or ``None`` to analyze it."""
    if not isinstance(notebook, dict):
        return "not checked: not a Jupyter notebook (the file is not a JSON object)"
    version = notebook.get("nbformat")
    if version != 4:
        shown = "no nbformat" if version is None else f"nbformat {version}"
        return (f"not checked: {shown}; graphlife reads nbformat 4 notebooks (convert it with "
                "`jupyter nbconvert --to notebook --inplace`, which writes the current format)")
    language = kernel_language(notebook)
    if language is not None and language != "python":
        return f"not checked: the notebook's kernel runs {language}, not Python"
    return None
