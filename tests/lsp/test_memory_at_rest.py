"""The server's collections of reference cycles: whole ones at rest, not in an analysis.

After an analysis (and at start) the server collects, trims the heap, and freezes what is
alive (:func:`graphlife.lsp.memory.release_memory`), so that the collections Python runs on
its own during the next analysis do not look at every open document's trees again. What
was frozen and becomes garbage later must still go, at the next whole collection (after an
analysis that built most of its trees anew); a rest after an edit looks only at what was
made since the last one.
"""

from __future__ import annotations

import gc
import weakref

from graphlife.lsp.memory import release_memory


class _Node:
    other: _Node


def test_what_is_alive_at_rest_is_frozen_and_its_cycles_go_at_the_next_rest() -> None:
    first, second = _Node(), _Node()
    first.other, second.other = second, first  # a cycle: only the collector frees it
    freed: list[bool] = []
    weakref.finalize(first, freed.append, True)
    try:
        release_memory()
        assert gc.get_freeze_count() > 0
        del first, second
        gc.collect()  # a collection during an analysis does not look at what was frozen
        assert freed == []
        release_memory(whole=False)  # a rest after an edit looks only at what was made since
        assert freed == []
        release_memory()  # a whole one looks at everything
        assert freed == [True]
    finally:
        gc.unfreeze()
