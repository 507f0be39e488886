"""Giving the heap of a big analysis back to the operating system.

Both the server and a big document's checker process (:mod:`.isolated`) call
this after an analysis that built most of its trees and states anew: the
allocator keeps freed pages, so without it a process's resident memory stays at
the peak of the largest analysis it ever ran.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable


def _load_malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``: gives the heap freed by an analysis back to the OS (``None`` elsewhere)."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _load_malloc_trim()


def release_memory(whole: bool = True) -> None:
    """Give the memory of an analysis back to the OS, and keep what is left out of the
    collections that run during the next analyses.

    The syntax tree and abstract states of a big file are garbage once it is
    checked, but the allocator keeps their pages. Collecting the cycles first
    empties whole arenas, which can then be returned.

    Everything still alive then is frozen (``gc.freeze``): the open documents' trees, caches
    and reports, the op table. Python's collector otherwise runs a full collection on its own
    whenever the objects that survived enough younger collections pass a quarter of the old
    ones, in the middle of whatever analysis is running, and a full collection looks at every
    object of the process: with large documents open that took 1.4 to 1.8 s.

    ``whole``: unfreeze first, so that the collection looks at every object and a cycle among
    the frozen ones that has become garbage since goes too (after an analysis that built most
    of its trees anew, whose garbage is worth it). Otherwise (after an edit, which made little
    garbage and is soon followed by the next one) it looks only at what was made since the last
    freeze, which takes milliseconds where the whole took more than a second, holding the
    interpreter's lock against the next keystroke's analysis. Objects freed by their reference
    counts go at once, frozen or not: only cycles wait for a whole collection.
    """
    if whole:
        gc.unfreeze()
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
    gc.freeze()


def mostly_new(units: dict[str, int] | None) -> bool:
    """Whether an analysis built most of its trees and states anew (then its garbage is worth
    giving back), from the incremental checker's statistics. After an edit the checker reuses
    nearly everything: trimming the heap then costs about as much as the analysis and only
    competes with the next one."""
    return units is None or units["ran"] + units["calls_ran"] > units["replayed"] + units["calls_replayed"]
