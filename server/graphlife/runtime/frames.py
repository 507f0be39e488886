"""Which frames are the user's: not torch's, not graphlife's, not the interpreter's plumbing.

An autograd error is raised deep inside torch; the line to fix, and the names
to explain, are in the innermost frame of the user's own code. A frame is a
library frame when its file lies inside torch's package, inside graphlife's run-time
package, or is ``runpy`` (which ``graphlife run`` uses to start the program).
Decided once per code object: the recorder asks for every torch call.
"""

from __future__ import annotations

import os
import sys
from types import CodeType, FrameType, TracebackType

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_DEBUG_DIR = os.path.join(os.path.dirname(_RUNTIME_DIR), "debug")
_LIBRARY_CACHE: dict[CodeType, bool] = {}


def _package_dir(name: str) -> str | None:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) if module is not None else None
    return os.path.dirname(os.path.abspath(path)) + os.sep if isinstance(path, str) else None


def _torch_dir() -> str | None:
    return _package_dir("torch")


def is_library_code(code: CodeType) -> bool:
    """True for torch's code, graphlife's run-time and debug code, IPython's, runpy and frozen modules."""
    known = _LIBRARY_CACHE.get(code)
    if known is not None:
        return known
    filename = code.co_filename
    torch_dir = _torch_dir()
    absolute = os.path.abspath(filename) if not filename.startswith("<") else filename
    shell_dir = _package_dir("IPython")  # the shell that runs a notebook's cells is not the user's code
    library = (
        filename.startswith("<frozen")
        or (torch_dir is not None and absolute.startswith(torch_dir))
        or (shell_dir is not None and absolute.startswith(shell_dir))
        or absolute.startswith((_RUNTIME_DIR + os.sep, _DEBUG_DIR + os.sep))
        or os.path.basename(filename) == "runpy.py"
    )
    if torch_dir is not None:  # before torch is imported its files cannot be told apart
        _LIBRARY_CACHE[code] = library
    return library


def user_frame(start: FrameType | None) -> FrameType | None:
    """The innermost user frame at or above ``start`` (walking outwards)."""
    frame = start
    while frame is not None and is_library_code(frame.f_code):
        frame = frame.f_back
    return frame


def traceback_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """The (frame, line) pairs of a traceback, outermost first."""
    out = []
    while tb is not None:
        out.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return out


def user_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """The traceback's user frames, innermost first (the call into torch comes first)."""
    return [(f, line) for f, line in reversed(traceback_frames(tb)) if not is_library_code(f.f_code)]


def frame_namespace(frame: FrameType) -> dict:
    """A frame's names as the probe reads them: its globals, shadowed by its locals."""
    return {**frame.f_globals, **frame.f_locals}
