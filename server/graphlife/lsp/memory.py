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


def release_memory() -> None:
    """Give the memory of a big analysis back to the OS.

    The syntax tree and abstract states of a big file are garbage once it is
    checked, but the allocator keeps their pages. Collecting the cycles first
    empties whole arenas, which can then be returned.
    """
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def mostly_new(units: dict[str, int] | None) -> bool:
    """Whether an analysis built most of its trees and states anew (then its garbage is worth
    giving back), from the incremental checker's statistics. After an edit the checker reuses
    nearly everything: trimming the heap then costs about as much as the analysis and only
    competes with the next one."""
    return units is None or units["ran"] + units["calls_ran"] > units["replayed"] + units["calls_replayed"]
