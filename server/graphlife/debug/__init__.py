"""The debug inspector's Python side: the probe, its text report, and ``explain``.

``from graphlife.debug import explain; explain(loss)`` prints, in pdb, a terminal
or Jupyter, what the VS Code "Autograd" view shows. Importing this package does
not import torch (the language server and CLI import ``graphlife`` freely); the
probe only uses the torch the program already imported.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any, TextIO


def _probe() -> ModuleType:
    from graphlife.debug import probe  # noqa: PLC0415 - keeps torch out of plain imports

    return probe


def explain(*objects: Any, namespace: dict | None = None, file: TextIO | None = None) -> None:
    """Print the autograd report of the caller's frame, or of the given tensors/containers.

    With arguments, the report is limited to them (found by identity among the
    caller's names, so they keep their variable names); without, the whole frame.
    """
    from graphlife.debug.render import render_text  # noqa: PLC0415

    if namespace is None:
        frame = sys._getframe(1)
        namespace = {**frame.f_globals, **frame.f_locals}
        del frame
    names = []
    if objects:
        for k, obj in enumerate(objects):
            name = next((n for n, v in namespace.items() if v is obj and not n.startswith("__")), None)
            names.append(name or f"arg{k}")
        scope = dict(namespace)
        for name, obj in zip(names, objects):
            scope.setdefault(name, obj)
        snap = _probe().snapshot(scope)
        keep = tuple(names)

        def mine(name: str) -> bool:
            return any(name == n or name.startswith(n + "[") or name.startswith(n + ".") for n in keep)

        blamed = {
            b
            for t in snap["tensors"]
            if mine(t["name"])
            for b in (t.get("backward_prediction") or {}).get("blame_all", [])
        }
        snap["tensors"] = [t for t in snap["tensors"] if mine(t["name"]) or t["name"] in blamed]
        snap["containers"] = [c for c in snap["containers"] if mine(c["name"])]
    else:
        snap = _probe().snapshot(namespace)
    print(render_text(snap), file=file or sys.stdout)


__all__ = ["explain"]
