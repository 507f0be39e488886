"""graphlife: static and live analysis of PyTorch autograd graph lifetimes.

The public entry point is :func:`graphlife.checker.check`, which the command-line
checker and the language server both call.
"""

__version__ = "0.1.0"
