"""Which attributes of its ``self`` a method analyzed alone read, seen at the data itself.

Why: every method analyzed alone starts from the ``self`` its class's ``__init__`` builds
(:mod:`graphlife.analysis.self_cache`), and after an edit of ``__init__`` the language
server's unit cache replayed a method only when the whole ``self`` built again printed the
same as before (:mod:`graphlife.analysis.self_print`): one attribute added that no method
reads ran every method of the class again. What a method's findings depend on is the part
of ``self`` it read.

The reads are not found in the method's code (an attribute can be read by a callee inlined
into the method, by a hook the engine runs, by a rule at the unit's end, through
``getattr`` or ``vars(self)``), but where every one of them lands: the instance's attribute
dict. While the unit cache records a method, the method's own copy of the instance holds its
attributes in an :class:`ReadAttrs`, a dict that notes each name looked up (present or not)
and, when anything reads it wholesale (iterates it, copies it to a plain dict, compares it,
measures it), that the whole dict was read. Whatever the engine does with an attribute it
must first get it out of the dict, so nothing it reads is missed. The objects an attribute
leads to are not tracked one by one: a read attribute counts with everything reachable from
it (:func:`graphlife.analysis.self_print.print_of` with the names read).

One wholesale read is narrower: which attributes hold a value of some class, and those
attributes (:func:`items_of_class`: GL101's fix looks for the tensors a trainer keeps on
``self``). It is noted as that class (``Reads.kinds``), and the print of the method's part of
``self`` holds the names of the attributes of that class and their values: an attribute added,
changed or removed that holds no such value leaves the method replayed, one that becomes such
a value (or stops being one) runs it again.

A copy of the object made for a write on one path (``State.heap_write`` ->
``HeapObject.copy`` -> ``attrs.copy()``) keeps noting into the same :class:`Reads`; any
other way of copying the dict iterates it, which counts as reading it whole.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, TypeVar

_T = TypeVar("_T")


class Reads:
    """The attribute names read (``whole``: the dict was read as a whole: every name counts;
    ``kinds``: the classes whose attributes were asked for, :func:`items_of_class`)."""

    __slots__ = ("kinds", "names", "whole")

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.whole = False
        self.kinds: set[type] = set()

    def keys(self) -> frozenset[str] | None:
        """The names read, or ``None`` when the whole dict was."""
        return None if self.whole else frozenset(self.names)

    def classes(self) -> frozenset[type]:
        """The classes whose attributes were asked for (:func:`items_of_class`)."""
        return frozenset(self.kinds)


class ReadAttrs(dict[str, Any]):
    """An attribute dict that notes what is read of it into ``reads``."""

    __slots__ = ("reads",)

    def __init__(self, items: dict[str, Any], reads: Reads) -> None:
        dict.__init__(self)
        dict.update(self, dict.items(items))  # the base's view: noting nothing
        self.reads = reads

    def _all(self) -> None:
        self.reads.whole = True

    # -- one name --------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        self.reads.names.add(key)
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        self.reads.names.add(key)
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.reads.names.add(key)
        else:
            self._all()
        return dict.__contains__(self, key)

    def __delitem__(self, key: str) -> None:
        self.reads.names.add(key)  # raises when absent: what it was matters
        dict.__delitem__(self, key)

    def pop(self, key: str, *default: Any) -> Any:
        self.reads.names.add(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.reads.names.add(key)
        return dict.setdefault(self, key, default)

    # -- the whole dict ----------------------------------------------------------------
    def __iter__(self) -> Iterator[str]:
        self._all()
        return dict.__iter__(self)

    def __reversed__(self) -> Iterator[str]:
        self._all()
        return dict.__reversed__(self)

    def __len__(self) -> int:
        self._all()
        return dict.__len__(self)

    def keys(self) -> Any:
        self._all()
        return dict.keys(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)

    def items(self) -> Any:
        self._all()
        return dict.items(self)

    def popitem(self) -> tuple[str, Any]:
        self._all()
        return dict.popitem(self)

    def _compared(self, other: object) -> None:
        """Compared with ``other``: a dict reads the names whose values differ, anything else all."""
        if isinstance(other, dict):
            _note_differing(self, other)
        else:
            self._all()

    def __eq__(self, other: object) -> bool:
        self._compared(other)
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._compared(other)
        return dict.__ne__(self, other)

    __hash__ = None

    def __or__(self, other: Any) -> Any:
        self._all()
        return dict(dict.items(self)) | other

    def __ror__(self, other: Any) -> Any:
        self._all()
        return other | dict(dict.items(self))

    def __repr__(self) -> str:
        self._all()
        return dict.__repr__(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._all()
        return (dict, (dict(dict.items(self)),))

    def __copy__(self) -> dict[str, Any]:
        self._all()
        return dict(dict.items(self))

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        self._all()
        return copy.deepcopy(dict(dict.items(self)), memo)

    def copy(self) -> ReadAttrs:
        """The object copied for a write on one path: the copy notes into the same reads."""
        return ReadAttrs(self, self.reads)


_MISSING = object()


def _note_differing(first: dict[str, Any], second: dict[str, Any]) -> set[str]:
    """Note, in whichever of the two dicts notes reads, the names whose values are not the very
    same object in both (or present in one only); those names.

    Comparing two copies of a method's ``self`` (at a join of two paths, or to see whether a call
    changed it) reads only those: a value held by both is equal to itself whatever it is (Python's
    comparison of dicts starts with identity), and the two copies hold the same object for every
    name the method did not write on one of the paths."""
    differing = {key for key in set(dict.keys(first)) | set(dict.keys(second))
                 if dict.get(first, key, _MISSING) is not dict.get(second, key, _MISSING)}
    for side in (first, second):
        if isinstance(side, ReadAttrs):
            side.reads.names.update(differing)
    return differing


def note_joined(first: dict[str, Any], second: dict[str, Any]) -> None:
    """Two attribute dicts are joined (``HeapObject.join``): what the join reads of them is the
    names whose values differ (a name held by both with the same value joins to a function of
    that value alone, read when the name is). The order it adds names held by the second only
    follows a set of every name, so with two or more of them it reads the whole dict."""
    differing = _note_differing(first, second)
    only_second = [key for key in differing if key not in dict.keys(first)]
    if len(only_second) > 1:
        for side in (first, second):
            if isinstance(side, ReadAttrs):
                side.reads.whole = True


def items_of_class(attrs: dict[str, Any], kind: type[_T]) -> list[tuple[str, _T]]:
    """The attributes whose value is a ``kind``, by name. In a dict that notes reads this reads
    which attributes hold a ``kind`` (noted as ``kind``) and those attributes, not the whole
    dict: what the caller finds depends on nothing else of it."""
    found = untracked_of_class(attrs, kind)
    if isinstance(attrs, ReadAttrs):
        attrs.reads.kinds.add(kind)
        attrs.reads.names.update(key for key, _ in found)
    return found


def untracked_of_class(attrs: dict[str, Any], kind: type[_T]) -> list[tuple[str, _T]]:
    """:func:`items_of_class` without noting a read (the print of what a method read asks it)."""
    return sorted(((key, value) for key, value in dict.items(attrs) if isinstance(value, kind)),
                  key=lambda item: item[0])


def untracked_values(attrs: dict[str, Any]) -> Any:
    """The values of an attribute dict without noting a read (for bookkeeping whose outcome
    cannot change what the analysis reports, such as the call memo's key)."""
    return dict.values(attrs)
