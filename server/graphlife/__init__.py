"""graphlife: static and live analysis of PyTorch autograd graph lifetimes.

The public entry point is :func:`graphlife.checker.check`, which the command-line
checker and the language server both call.
"""

__version__ = "0.1.0"


def _ipython_extension() -> object:
    """:mod:`graphlife.runtime.ipython`, imported by name: every layer imports this package (for
    ``__version__``), and the run-time tools sit above most of them; IPython alone asks for it."""
    import importlib  # noqa: PLC0415 - only when IPython loads the extension

    return importlib.import_module("graphlife.runtime.ipython")


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext graphlife``: explain autograd errors in cell output; the ``%graphlife`` magic."""
    _ipython_extension().load(ipython)  # type: ignore[attr-defined]


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext graphlife``."""
    _ipython_extension().unload(ipython)  # type: ignore[attr-defined]
