"""Run a callback once the program has imported torch, without importing it first.

A program may set ``CUDA_VISIBLE_DEVICES`` or ``OMP_NUM_THREADS`` before its
``import torch``; importing torch ahead of it would change what it gets. So the
tools that need torch (the site recorder, the leak watch) wait: a finder first on
``sys.meta_path`` lets the usual finders find ``torch`` and wraps its loader so the
callback runs right after ``torch/__init__`` has executed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.callback = callback
        self.busy = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self.busy:
            return None
        self.busy = True
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        callback, finder_self = self.callback, self
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            _remove(finder_self)
            callback(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _remove(finder: importlib.abc.MetaPathFinder) -> None:
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> Callable[[], None]:
    """Call ``callback(module)`` once the top-level module ``name`` is imported (now, if it is).

    Returns a function that cancels the wait.
    """
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return lambda: None
    finder = _AfterImport(name, callback)
    sys.meta_path.insert(0, finder)
    return lambda: _remove(finder)
