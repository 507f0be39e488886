"""Escaped functions run again where nothing they read has changed since they last changed nothing: skipped.

Why: a function handed to code the engine does not follow (a hook, a callback, a
signal handler) may run at every call the engine cannot see into, at every module
call and at every backward (:meth:`CallbackParts.run_escaped`): what it may write is
weakened there. On a large training file that is thousands of times per check
(3,214 on Megatron's ``training.py``, with six escaped functions: 16,338 weakenings,
one of which changed anything; a tenth of the check), and almost always the places
were weakened the time before and nothing wrote them since.

What one run of the escaped functions does is a function of what it reads: the
names of the state it looks up (the places the functions write through, the module
names they rebind) and the heap objects it looks at, each as it was when read
(names hold immutable values; the state copies a heap object before changing it, so
the same object is the same content). A run that changed nothing leaves each of
those as it was. When, later, every one of them is again the very same object, a run
would read the same, decide the same and change nothing again: it is skipped.
Anything written since (an assignment, a step, a join of paths that made new objects)
makes a different object, and the functions run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphlife.analysis.cow_map import holds_same
from graphlife.analysis.state import State
from graphlife.analysis.unseen_writes import HeapReads
from graphlife.analysis.values import Value

_ABSENT = object()


@dataclass
class EscapedReads:
    """What one run of the escaped functions read: names of the state and heap objects, each as
    it was when read (``_ABSENT`` / ``None``: not there)."""

    names: dict[str, object] = field(default_factory=dict)
    objects: HeapReads = field(default_factory=dict)

    def name(self, state: State, name: str) -> Value | None:
        """``state.env.get(name)``, noted."""
        value = state.env.get(name, _ABSENT)
        self.names.setdefault(name, value)
        return None if value is _ABSENT else value  # type: ignore[return-value]  # a Value when present


def _unchanged(reads: EscapedReads, state: State) -> bool:
    """Is every name and object ``reads`` saw still the very same in ``state``?"""
    return holds_same(state.env, reads.names.items(), _ABSENT) and holds_same(state.heap, reads.objects.items(), None)


class EscapedRuns:
    """The runs of escaped functions that changed nothing, by the set of functions (one analysis
    of one file: it lives and dies with the interpreter)."""

    def __init__(self) -> None:
        self._idle: dict[frozenset[Value], EscapedReads] = {}

    def needless(self, escaped: frozenset[Value], state: State) -> bool:
        """Would running ``escaped`` on ``state`` change nothing, as it did last time it read the same?"""
        reads = self._idle.get(escaped)
        return reads is not None and _unchanged(reads, state)

    def ran(self, escaped: frozenset[Value], state: State, reads: EscapedReads) -> None:
        """``escaped`` ran on ``state`` reading ``reads``: kept when it changed nothing."""
        if _unchanged(reads, state):
            self._idle[escaped] = reads
