"""graphlife: static and live analysis of PyTorch autograd graph lifetimes.

The public entry point is :func:`graphlife.checker.check`, which the command-line
checker and the language server both call.
"""

__version__ = "0.1.0"


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext graphlife``: explain autograd errors in cell output; the ``%graphlife`` magic."""
    from graphlife.runtime.ipython import load  # noqa: PLC0415 - IPython's hook; plain imports stay light

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext graphlife``."""
    from graphlife.runtime.ipython import unload  # noqa: PLC0415

    unload(ipython)
