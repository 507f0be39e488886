"""A dict whose copies share their entries until written, and whose joins look only at what changed.

Why: the engine copies a state's names and heap at every branch, call and loop
iteration, and joins them where paths meet. A long function sees a few hundred
names; a branch changes a few. Copying and joining every entry made the analysis
of a large file cost (branches x names) instead of (branches x changes).

A :class:`CowMap` is a ``base`` dict that is never written once made, shared by every
copy, plus a ``delta`` of the entries written since, shared with a copy until one of them
writes. A copy (:meth:`CowMap.fork`) costs nothing; the first write after it copies the
delta, or, when the delta has grown large against the base, folds it into a new base
(:meth:`CowMap.compact`).

Every base records where it came from (a :class:`Lineage`: the base it was folded from
and the keys written in between). Two maps whose bases have a common ancestor can
differ only in the keys written on the way from it, so :func:`join_maps` joins those
keys and takes every other entry as it is. Maps without a common ancestor are joined
entry by entry, as plain dicts would be.

Everything a caller sees is a dict's behaviour, including the order of iteration
(insertion order; a deleted key that comes back goes last). Two differences, neither
used by the engine: a dict given to the map (``CowMap(d)``) becomes its base and must
not be written by anyone afterwards, and a view (``keys()``, ``items()``, ``values()``)
shows the entries of when it was taken, not later writes.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, MutableMapping, ValuesView
from typing import Any

_MISSING: Any = object()

#: The first write after a fork folds the delta into a new base when the delta has more
#: entries than this...
FOLD_AT_LEAST = 8
#: ...and more than this fraction of the base (copying the delta at every first write after
#: a fork would then cost about as much as copying the whole map).
FOLD_FRACTION = 1 / 4
#: How many bases a lineage remembers: a deeper one starts a new lineage (joins with maps
#: of the old one then go entry by entry), so that the history kept stays bounded.
MAX_LINEAGE_DEPTH = 64


class Lineage:
    """Where a base came from: the base it was folded from (its lineage) and the keys in which
    the two may differ. Only keys are kept, never values: an old base is not kept alive."""

    __slots__ = ("changed", "depth", "parent")

    def __init__(self, parent: Lineage | None = None, changed: frozenset = frozenset()) -> None:
        if parent is not None and parent.depth >= MAX_LINEAGE_DEPTH:
            parent = None
        self.parent: Lineage | None = parent
        self.changed: frozenset = changed
        self.depth: int = 0 if parent is None else parent.depth + 1


class CowMap(MutableMapping[Any, Any]):
    """A dict (see the module's docstring) whose :meth:`fork` costs nothing, and whose first
    write after a fork costs the entries written since its base was made, not all of them."""

    __slots__ = ("_added", "_base", "_delta", "_delta_shared", "_lineage")

    def __init__(self, entries: dict | None = None) -> None:
        #: Never written once made: shared with every fork.
        self._base: dict = entries if entries is not None else {}
        self._lineage = Lineage()
        #: The entries written since the base was made (the new ones in insertion order)...
        self._delta: dict = {}
        #: ...shared with a fork until one of them writes.
        self._delta_shared = False
        #: How many keys of the delta are not in the base (for ``len``).
        self._added = 0

    # -- reading ----------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        delta = self._delta
        if key in delta:
            return delta[key]
        return self._base[key]

    def get(self, key: Any, default: Any = None) -> Any:
        value = self._delta.get(key, _MISSING)
        if value is _MISSING:
            return self._base.get(key, default)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._delta or key in self._base

    def __len__(self) -> int:
        return len(self._base) + self._added

    def __iter__(self) -> Iterator[Any]:
        return iter(self._flat())

    def keys(self) -> KeysView[Any]:
        return self._flat().keys()

    def items(self) -> ItemsView[Any, Any]:
        return self._flat().items()

    def values(self) -> ValuesView[Any]:
        return self._flat().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CowMap):
            if other is self:
                return True
            changed = _changed_since_common_base(self, other)
            if changed is None:
                return self._flat() == other._flat()
            return len(self) == len(other) and all(_same_entry(self, other, key) for key in changed)
        if isinstance(other, dict):
            return self._flat() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dict

    def __repr__(self) -> str:
        return f"CowMap({self._flat()!r})"

    def __reduce__(self) -> tuple[type[CowMap], tuple[dict[Any, Any]]]:
        return (CowMap, (dict(self._flat()),))

    # -- writing ----------------------------------------------------------------------
    def __setitem__(self, key: Any, value: Any) -> None:
        delta = self._delta if not self._delta_shared else self._own_delta()
        if key not in delta and key not in self._base:
            self._added += 1
        delta[key] = value

    def __delitem__(self, key: Any) -> None:
        if self._delta_shared and key not in self._base:
            self._own_delta()  # which may fold the delta, and the key with it, into a new base
        if key in self._base:
            self.compact(dropping=key)  # the base is never written: a new one without the key
            return
        del self._delta[key]
        self._added -= 1

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise KeyError(key)
            return default
        del self[key]
        return value

    def clear(self) -> None:
        self._lineage = Lineage(self._lineage, frozenset(self._flat()))
        self._base, self._delta, self._delta_shared, self._added = {}, {}, False, 0

    def copy(self) -> CowMap:
        return self.fork()

    # -- sharing ----------------------------------------------------------------------
    def fork(self) -> CowMap:
        """An independent copy: writes to either never show in the other."""
        twin = _new_map(CowMap)
        twin._base, twin._lineage, twin._delta, twin._added = self._base, self._lineage, self._delta, self._added
        twin._delta_shared = self._delta_shared = True
        return twin

    def _own_delta(self) -> dict:
        """The delta, no longer shared with a fork, ready to be written. A large one is folded
        into a new base instead of copied: copying it at every first write after a fork would
        cost about as much as copying the whole map."""
        delta = self._delta
        if len(delta) > FOLD_AT_LEAST and len(delta) > len(self._base) * FOLD_FRACTION:
            self.compact()
        else:
            self._delta = dict(delta)
            self._delta_shared = False
        return self._delta

    def compact(self, dropping: Any = _MISSING) -> None:
        """Fold the delta into a new base (without ``dropping``, when given). Same entries,
        same order; the maps forked before keep the old base and delta, and the lineage says
        how the two bases differ."""
        flat = self._base.copy()
        flat.update(self._delta)
        changed = frozenset(self._delta)
        if dropping is not _MISSING:
            del flat[dropping]
            changed = changed | {dropping}
        self._lineage = Lineage(self._lineage, changed)
        self._base, self._delta, self._delta_shared, self._added = flat, {}, False, 0

    def _flat(self) -> dict:
        """Every entry in one dict (the base, after folding the delta into it if needed)."""
        if self._delta:
            self.compact()
        return self._base


_new_map = object.__new__


def _changed_since_common_base(a: CowMap, b: CowMap) -> set | None:
    """The keys in which ``a`` and ``b`` may differ (every other entry is the very same object
    in both), or ``None`` when their bases have no common ancestor."""
    x: Lineage | None = a._lineage
    y: Lineage | None = b._lineage
    if x is y:
        return a._delta.keys() | b._delta.keys()
    changed = set(a._delta)
    changed.update(b._delta)
    while x is not y:
        if x is None or y is None:
            return None
        if x.depth >= y.depth:
            changed.update(x.changed)
            x = x.parent
        else:
            changed.update(y.changed)
            y = y.parent
    return changed


def holds_same(mapping: Mapping[Any, Any], expected: Iterable[tuple[Any, Any]], absent: object) -> bool:
    """Does ``mapping`` hold, for each ``(key, value)`` of ``expected``, that very object
    (``absent`` standing for a key it lacks)? Asked before each replay of a call and each run of
    the escaped functions, over every name and heap object they read: a :class:`CowMap` is read
    here through its two dicts, without a method call per key. ``absent`` is never a value the
    map holds."""
    if type(mapping) is CowMap:
        delta, base = mapping._delta, mapping._base
        for key, value in expected:
            current = delta.get(key, absent)
            if current is absent:
                current = base.get(key, absent)
            if current is not value:
                return False
        return True
    get = mapping.get
    return all(get(key, absent) is value for key, value in expected)


def same_objects(a: MutableMapping[Any, Any], b: MutableMapping[Any, Any]) -> bool:
    """Does ``b`` hold exactly ``a``'s keys, each with the very same object? Two maps forked from
    a common base are compared on the keys written since it (every other entry is shared), not
    entry by entry: asked after every call the call memo runs, on heaps of thousands of objects."""
    if a is b:
        return True
    if len(a) != len(b):
        return False
    if type(a) is CowMap and type(b) is CowMap:
        changed = _changed_since_common_base(a, b)
        if changed is not None:
            return all(a.get(key, _MISSING) is b.get(key, _MISSING) for key in changed)
    get = b.get
    return all(get(key, _MISSING) is value for key, value in a.items())


def join_maps(a: CowMap, b: CowMap, join: Callable[[Any, Any], Any]) -> CowMap:
    """``a`` and ``b`` joined key by key: an entry that is the same object in both is kept, the
    others are ``join(value_in_a, value_in_b)`` with ``None`` for a missing key. When the two
    are equal, ``a``'s entries are kept as they are (no join at all). The result iterates in
    ``a``'s order, then the keys only ``b`` has in ``b``'s order: what a dict copy of ``a``
    updated from ``b`` gives.

    Only the keys written since a common base are looked at; maps without one are joined
    entry by entry."""
    delta_a, delta_b = a._delta, b._delta
    if a is b or (delta_a is delta_b and a._base is b._base):
        return a.fork()
    changed = _changed_since_common_base(a, b)
    if changed is None:
        return _join_entry_by_entry(a, b, join)
    base_a, base_b = a._base, b._base
    differing: list = []
    only_b: list = []
    equal = True
    for key in changed:
        value_a = delta_a.get(key, _MISSING)
        if value_a is _MISSING:
            value_a = base_a.get(key, _MISSING)
        value_b = delta_b.get(key, _MISSING)
        if value_b is _MISSING:
            value_b = base_b.get(key, _MISSING)
        if value_a is value_b:
            continue  # the same object, or missing from both
        if value_a is _MISSING:
            only_b.append(key)
            equal = False
        else:
            differing.append((key, value_a, value_b))
            if equal and (value_b is _MISSING or value_a != value_b):
                equal = False
    if equal:
        return a.fork()
    delta = dict(delta_a)
    for key, value_a, value_b in differing:
        delta[key] = join(value_a, None if value_b is _MISSING else value_b)
    if len(only_b) > 1:
        only_b = _in_order_of(b, only_b)
    for key in only_b:
        delta[key] = join(None, b[key])
    out = _new_map(CowMap)
    out._base, out._lineage, out._delta, out._delta_shared = base_a, a._lineage, delta, False
    out._added = a._added + len(only_b)
    return out


def _same_entry(a: CowMap, b: CowMap, key: Any) -> bool:
    """Do ``a`` and ``b`` hold equal values for ``key`` (or both none)? What dict equality asks."""
    value_a, value_b = a.get(key, _MISSING), b.get(key, _MISSING)
    if value_a is value_b:
        return True
    return value_a is not _MISSING and value_b is not _MISSING and value_a == value_b


def _in_order_of(m: CowMap, keys: list) -> list:
    """``keys`` (all in ``m``) in ``m``'s iteration order: those of its base first, in the base's
    order, then the others in the order they were written."""
    wanted = set(keys)
    in_base = [key for key in keys if key in m._base]
    ordered = [key for key in m._base if key in wanted] if in_base else []
    ordered.extend(key for key in m._delta if key in wanted and key not in m._base)
    return ordered


def _join_entry_by_entry(a: CowMap, b: CowMap, join: Callable[[Any, Any], Any]) -> CowMap:
    """:func:`join_maps` for maps whose bases have no common ancestor: every entry is compared.
    The result is still a fork of ``a`` (its later joins with ``a``'s kin stay cheap)."""
    entries_a, entries_b = a._flat(), b._flat()
    out = a.fork()
    if entries_a != entries_b:
        for key, value in _joined_entries(entries_a, entries_b, join):
            out[key] = value
    return out


def join_dicts(a: dict, b: dict, join: Callable[[Any, Any], Any]) -> dict:
    """:func:`join_maps` for plain dicts (a new dict)."""
    out = dict(a)
    if a is not b and a != b:
        out.update(_joined_entries(a, b, join))
    return out


def _joined_entries(a: dict, b: dict, join: Callable[[Any, Any], Any]) -> list[tuple[Any, Any]]:
    """The entries of the join of ``a`` and ``b`` that are not ``a``'s own: every key whose value
    is not the same object in both, in ``b``'s order, then the keys only ``a`` has."""
    get = a.get
    entries = [(key, join(get(key), value_b)) for key, value_b in b.items() if get(key) is not value_b]
    entries.extend((key, join(a[key], None)) for key in a.keys() - b.keys())
    return entries
