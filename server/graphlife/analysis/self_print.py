"""What a built ``self`` is, as a value that can be compared across versions of a file.

Why: every method analyzed alone starts from the ``self`` its class's ``__init__`` builds
(:mod:`graphlife.analysis.self_cache`), so the language server's unit cache counted the code
of ``__init__`` (and of what it calls) as read by every method, and an edit there ran every
method of the class again: a typo fixed in a comment of DeepSpeed's engine ``__init__``
ran its 300 methods. What a method's analysis depends on is not that code but what it
built: the state the method starts from, and what building it did to the run. When the
``self`` built from the edited code is the same as the one the method's recorded analysis
started from, the record is still the method's analysis.

"The same" is decided on a *print*: a flat list of tokens made by walking everything the
method starts from (the state's names, heap objects, storage versions, gradients, graph
nodes reached, hooks) and what the build did (the functions it inlined, whether it never
returns, the ``create_graph`` fact). Three things in it differ between two builds of the
same code and are written so that they do not:

- ids handed out by counters (storages, heap objects, graph nodes): the build may run at
  another point of the analysis (the module body replayed instead of run). They are
  replaced by their rank among the ids of the print (per counter), so two prints are equal
  only if an order-keeping renaming maps one build to the other;
- syntax nodes: an edited method is parsed again (new nodes), and its lines move when a
  line is added above. A node is written as its place in its region
  (:mod:`graphlife.analysis.regions`): the region, its line and end line counted from the
  region's first line, its columns. Comparing an old print with a new one maps an old
  place in an edited method to the new one through the lines the edit kept
  (:class:`LineMap`), and the node's lines must be the same text;
- the identity of the ``self`` object's own ``site`` (it is the method that first asked for
  it, and each method gets its own: ``SelfCache.entry_state``): left out.

Anything the walk does not know is kept as itself and compared by identity (never equal
to another build's), and a print that cannot be made is ``None`` (never equal): when in
doubt the methods run again, which is what happened before.

A method rarely reads all of ``self``: one attribute added in ``__init__`` that it does not
read changes nothing it does. The attribute names a method read are noted at the instance's
attribute dict while it runs (:mod:`graphlife.analysis.self_reads`: through the callees it
inlined, the hooks the engine ran, the rules, or wholesale when anything iterated, copied or
compared the dict), and its record keeps the print of those attributes and of everything
they lead to, with the print of the rest of the build, which is shared by the class's
methods (:class:`SplitPrints`). A method that read the dict as a whole keeps the print of
all of it. Key order: a dict's keys are written in their order, as code that iterates it sees it.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import io
import tokenize
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any

from graphlife.analysis.grad_hooks import GradHook
from graphlife.analysis.regions import Region
from graphlife.analysis.self_cache import BuiltSelf
from graphlife.analysis.self_reads import untracked_of_class
from graphlife.analysis.state import Node, SavedRef, State
from graphlife.analysis.values import ClassRef, FunctionRef, HeapObject, HeapRef, TensorVal

#: Fields of the engine's records that hold ids of storages or heap objects (``"i"``: one
#: counter hands both out) or of graph nodes (``"n"``), and fields derived from a node's
#: identity (``None``: left out, the node itself is written).
_ID_FIELDS: dict[type, dict[str, str | None]] = {
    TensorVal: {"storage": "i", "owner": "i", "grad_fn": "n", "grad_of": "i"},
    HeapObject: {"param_storages": "i", "opt_storages": "i"},
    Node: {"nid": "n", "parents": "n", "leaves": "i", "checkpoint_inputs": "i"},
    SavedRef: {"storage": "i"},
    GradHook: {"nodes": "n", "storages": "i"},
    FunctionRef: {"key": None},
    ClassRef: {"key": None},
    HeapRef: {"oid": "i"},
}
#: Entries of :attr:`HeapObject.extra` that hold an id (the others hold values and records).
_EXTRA_IDS = {"bias_storage": "i"}
#: The state's maps keyed by ids, and the kind of their keys.
_STATE_KEYS = {"heap": "i", "versions": "i", "bumps": "i", "grads": "i", "data_bumps": "i",
               "freed": "n", "may_freed": "n"}
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

#: Where a node is: its region, line and end line from the region's first line, columns.
Place = tuple[Region, int, int, int, int]


class At:
    """A syntax node in a print: where it is (``None``: not in a region; then only the node
    itself is equal to it). ``header``: a function the build ran (inlined), whose code is in
    the regions the build read and whose effects are in the print: its name and first line
    stand for it. Any other function in a print (a hook kept on ``self``) stands for its code."""

    __slots__ = ("header", "node", "place")

    def __init__(self, node: ast.AST, place: Place | None, header: bool = False) -> None:
        self.node = node
        self.place = place
        self.header = header


class _Id:
    __slots__ = ("kind", "raw")

    def __init__(self, kind: str, raw: int) -> None:
        self.kind = kind
        self.raw = raw


class _Itself:
    """Something the walk does not know: equal only to itself."""

    __slots__ = ("thing",)

    def __init__(self, thing: object) -> None:
        self.thing = thing

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Itself) and other.thing is self.thing

    def __hash__(self) -> int:
        return id(self.thing)


Print = tuple[object, ...]


class _Walk:
    def __init__(self, locate: Callable[[ast.AST], Place | None], nodes: list[Node]) -> None:
        self.locate = locate
        self.nodes = nodes
        self.out: list[object] = []
        self.node_ids: set[int] = set()
        self.ids: set[int] = set()  # storage and object ids written
        self.skip_site: int | None = None
        #: The attributes of the instance (``skip_site``) to write (``None``: all of them).
        self.self_keys: frozenset[str] | None = None
        #: Ids written elsewhere, by kind, with their rank there: written as that (``SplitPrints``).
        self.known: dict[str, dict[int, int]] | None = None

    def ident(self, kind: str, raw: object) -> None:
        if isinstance(raw, int) and not isinstance(raw, bool):
            known = self.known.get(kind) if self.known is not None else None
            if known is not None and raw in known:
                self.out.append(("base", kind, known[raw]))  # written in the base (``SplitPrints``)
                return
            self.out.append(_Id(kind, raw))
            if kind == "n":
                self.node_ids.add(raw)
            else:
                self.ids.add(raw)
        else:
            self.value(raw)

    def idents(self, kind: str, raw: object) -> None:
        if isinstance(raw, (frozenset, set)) and all(isinstance(item, int) for item in raw):
            self.out.append(("{", len(raw)))
            for item in sorted(raw):
                self.ident(kind, item)
        else:
            self.ident(kind, raw)

    def value(self, thing: Any) -> None:
        out = self.out
        if thing is None or isinstance(thing, (bool, int, float, str, complex, bytes)):
            out.append((type(thing), thing))
        elif isinstance(thing, ast.AST):
            out.append(At(thing, self.locate(thing)))
        elif isinstance(thing, (tuple, list)):
            out.append((type(thing), len(thing)))
            for item in thing:
                self.value(item)
        elif isinstance(thing, (frozenset, set)):
            self.unordered(thing)
        elif isinstance(thing, Mapping):
            keys = list(thing)
            if not all(isinstance(key, str) for key in keys):
                out.append(_Itself(thing))
                return
            out.append((dict, len(keys)))
            for key in keys:  # in their order: code that iterates the dict sees it
                out.append(key)
                self.value(thing[key])
        elif is_dataclass(thing) and not isinstance(thing, type):
            self.record(thing)
        else:
            out.append(_Itself(thing))

    def record(self, thing: Any) -> None:
        kind = type(thing)
        special = _ID_FIELDS.get(kind, {})
        self.out.append(kind)
        skip_site = isinstance(thing, HeapObject) and self.skip_site == id(thing)
        for item in fields(thing):
            name = item.name
            if skip_site and name == "site":
                continue
            value = getattr(thing, name)
            if name == "extra" and isinstance(thing, HeapObject):
                self.extra(value)
            elif name == "attrs" and skip_site and self.self_keys is not None:
                self.attrs_read(value, self.self_keys)
            elif name in special:
                id_kind = special[name]
                if id_kind is not None:
                    self.idents(id_kind, value)
            else:
                self.value(value)

    def extra(self, extra: dict[str, Any]) -> None:
        self.out.append((dict, len(extra)))
        for key in extra:  # in their order, as a dict's (see ``value``)
            self.out.append(key)
            kind = _EXTRA_IDS.get(key)
            if kind is None:
                self.value(extra[key])
            else:
                self.ident(kind, extra[key])

    def attrs_read(self, attrs: Mapping[str, Any], keys: frozenset[str],
                   order: Mapping[str, int] | None = None) -> None:
        """The instance's attributes ``keys``, each with its value or as absent (``order``: each
        attribute's place in ``attrs``, when known)."""
        if order is None:
            present = [key for key in attrs if key in keys]  # in their order (see ``value``)
        else:
            present = sorted((key for key in keys if key in order), key=order.__getitem__)
        absent = sorted(keys.difference(present))
        self.out.append(("attrs read", len(present), len(absent)))
        for key in present:
            self.out.append(key)
            self.value(attrs[key])
        self.out.extend(absent)

    def unordered(self, items: frozenset[Any] | set[Any]) -> None:
        """A set of values, in an order that does not depend on ids (ties keep the set's order:
        then two equal sets may print differently, never two different ones the same)."""
        parts: list[tuple[str, list[object]]] = []
        for item in items:
            saved, self.out = self.out, []
            self.value(item)
            parts.append((_sort_key(self.out), self.out))
            self.out = saved
        parts.sort(key=lambda part: part[0])
        self.out.append((frozenset, len(parts)))
        for _, tokens in parts:
            self.out.extend(tokens)

    def state(self, state: State) -> None:
        for item in fields(State):
            name = item.name
            if name == "shared":
                continue
            value = getattr(state, name)
            key_kind = _STATE_KEYS.get(name)
            if key_kind is None:
                self.out.append(name)
                self.value(value)
                continue
            self.out.append((name, len(value)))
            for key in sorted(value):
                self.ident(key_kind, key)
                self.value(value[key])

    def reached(self, state: State, extra_ids: Callable[[], tuple[list[int], list[int]]] | None = None) -> None:
        """The heap objects, the entries of the state's maps keyed by ids, and the graph nodes
        that the values written so far lead to, and what those lead to (in rounds, each in the
        order of the ids, which the ranks keep). ``extra_ids``: asked once nothing more is
        reached, for ids to write besides (then what they lead to)."""
        heap = state.heap
        id_maps = [(name, getattr(state, name)) for name, kind in _STATE_KEYS.items() if kind == "i" and name != "heap"]
        node_maps = [(name, getattr(state, name)) for name, kind in _STATE_KEYS.items() if kind == "n"]
        done_ids: set[int] = set()
        done_nodes: set[int] = set()
        asked = extra_ids is None
        while True:
            new_ids = sorted(self.ids - done_ids)
            new_nodes = sorted(self.node_ids - done_nodes)
            if not new_ids and not new_nodes:
                if asked or extra_ids is None:
                    break
                asked = True
                more_ids, more_nodes = extra_ids()
                self.out.append(("unreached", len(more_ids), len(more_nodes)))
                for raw in more_ids:
                    self.ident("i", raw)
                for raw in more_nodes:
                    self.ident("n", raw)
                continue
            for raw in new_ids:
                done_ids.add(raw)
                self.out.extend(("id", _Id("i", raw)))
                if raw in heap:
                    self.out.append("heap")
                    self.record(heap[raw])
                for name, entries in id_maps:
                    if raw in entries:
                        self.out.append(name)
                        self.value(entries[raw])
            for raw in new_nodes:
                done_nodes.add(raw)
                self.out.extend(("node", _Id("n", raw)))
                if 0 <= raw < len(self.nodes):
                    self.record(self.nodes[raw])
                else:
                    self.out.append(_Itself(object()))  # a node of another run: never equal
                for name, entries in node_maps:
                    if raw in entries:
                        self.out.append(name)
                        self.value(entries[raw])

    def graph(self) -> None:
        """The graph nodes the print reaches, and the nodes those reach."""
        done: set[int] = set()
        pending = sorted(self.node_ids)
        while pending:
            nid = pending.pop()
            if nid in done:
                continue
            done.add(nid)
            if not 0 <= nid < len(self.nodes):
                self.out.append(_Itself(object()))  # a node of another run: never equal
                continue
            before = set(self.node_ids)
            self.record(self.nodes[nid])
            pending.extend(sorted(self.node_ids - before))
        self.out.append(("graph", len(done)))


def _sort_key(tokens: list[object]) -> str:
    parts = []
    for token in tokens:
        if isinstance(token, At):
            place = token.place
            parts.append(f"@{type(token.node).__name__}:{place[1:] if place else '?'}")
        elif isinstance(token, _Id):
            parts.append(f"#{token.kind}")
        elif isinstance(token, _Itself):
            parts.append("?")
        else:
            parts.append(repr(token))
    return "|".join(parts)


def print_of(built: BuiltSelf, locate: Callable[[ast.AST], Place | None], nodes: list[Node]) -> Print | None:
    """The print of one built ``self``, all of it (``locate``: where a node is; ``nodes``: the
    run's graph nodes), or ``None`` when it cannot be compared with another build's."""
    if built.zeroed_added:
        return None  # keyed by statement identity
    walk = _Walk(locate, nodes)
    instance = built.state.heap.get(built.value.oid) if isinstance(built.value, HeapRef) else None
    walk.skip_site = id(instance) if instance is not None else None
    walk.value(built.value)
    walk.state(built.state)
    walk.graph()
    if not _tail(walk, built, locate):
        return None
    ranks = _ranks(walk.out)
    return tuple(("#", token.kind, ranks[token.kind][token.raw]) if isinstance(token, _Id) else token
                 for token in walk.out)


def _tail(walk: _Walk, built: BuiltSelf, locate: Callable[[ast.AST], Place | None]) -> bool:
    """What building it did to the run: how it ended, the functions it inlined."""
    walk.out.append(("ends", built.path_ends, built.create_graph_out, built.either_create_graph))
    inlined = [node for key, node in built.touched.items() if key in built.inlined]
    if len(inlined) != len(built.inlined):
        return False
    parts = sorted(((_header_key(node, locate(node)), At(node, locate(node), header=True)) for node in inlined),
                   key=lambda part: part[0])
    walk.out.append(("inlined", len(parts)))
    walk.out.extend(part[1] for part in parts)
    return True


def _header_key(node: ast.AST, place: Place | None) -> tuple[str, str, int, int]:
    """Where an inlined function stands in a print's list of them: by what stands for it (its
    name, its first line in its region, its column), never by its length, which an edit inside
    it changes (a method is a region of its own: every method's first line there is 0, and
    ordered by their end lines, a line added in one would swap it with a method one line
    longer, and the two prints would no longer be compared function by function)."""
    line, column = (place[1], place[3]) if place is not None else (-1, -1)
    return type(node).__name__, str(getattr(node, "name", "")), line, column


def _ranks(tokens: list[object]) -> dict[str, dict[int, int]]:
    ranks: dict[str, dict[int, int]] = {}
    for kind in ("i", "n"):
        raws = sorted({token.raw for token in tokens if isinstance(token, _Id) and token.kind == kind})
        ranks[kind] = {raw: rank for rank, raw in enumerate(raws)}
    return ranks


class SplitPrints:
    """The print of one built ``self`` in two parts, for a method that read only some attributes
    of its instance (:mod:`graphlife.analysis.self_reads`): what every method sees, and the
    attributes the method read.

    The *base* is everything but the instance's attributes: the instance's other fields, the
    state's names and facts, what those lead to (heap objects, entries of the state's maps keyed
    by an id, graph nodes), what nothing of the instance leads to (an object of the module, a
    leftover of the build, a storage no value holds any more: code that scans the whole heap or a
    map sees it), and what the build did to the run. The *part* of a set of attribute names is
    each name's value (or its absence, and the order of those present) and what they lead to
    that the base does not hold. What only the other attributes lead to is in neither: a method
    reaches an object or an id only through a value it holds, and it got its values from the
    base and the attributes it read.

    Ids are written as in :func:`print_of`, by rank; an id of the part that the base holds by its
    rank in the base, the others by where they fall among the base's ids and their rank among the
    part's own: two builds whose bases and parts are equal map onto each other by one renaming
    that keeps the order of every id either part holds."""

    def __init__(self, built: BuiltSelf, locate: Callable[[ast.AST], Place | None], nodes: list[Node]) -> None:
        self.built = built
        self.locate = locate
        self.nodes = nodes
        self.base: Print | None = None
        self.order: dict[str, int] | None = None  # the place of each attribute of the instance
        #: The parts made, by what they print: the methods of a class mostly read the same
        #: attributes, and one print object per part lets the unit cache compare it once.
        self._parts: dict[tuple[frozenset[str], frozenset[type]], Print] = {}
        self._holds: dict[type, tuple[str, ...]] = {}  # the attributes holding a value of a class
        instance = built.state.heap.get(built.value.oid) if isinstance(built.value, HeapRef) else None
        self.instance = instance
        if built.zeroed_added or instance is None:
            return
        state = built.state
        walk = _Walk(locate, nodes)
        walk.skip_site = id(instance)
        walk.self_keys = frozenset()
        walk.value(built.value)
        _plain_fields(walk, state)
        everything = _reached_by_all(built, nodes, walk.skip_site)

        def unreached() -> tuple[list[int], list[int]]:
            ids_held = set(state.heap)
            for name, kind in _STATE_KEYS.items():
                if kind == "i" and name != "heap":
                    ids_held.update(getattr(state, name))
            nodes_held = {raw for name, kind in _STATE_KEYS.items() if kind == "n" for raw in getattr(state, name)}
            return sorted(ids_held - everything[0]), sorted(nodes_held - everything[1])

        walk.reached(state, unreached)
        if not _tail(walk, built, locate):
            return
        self.ranks = _ranks(walk.out)
        self.sorted_ids = {kind: sorted(ranks) for kind, ranks in self.ranks.items()}
        self.base = tuple(("#", token.kind, self.ranks[token.kind][token.raw]) if isinstance(token, _Id) else token
                          for token in walk.out)

    def part(self, keys: frozenset[str], kinds: frozenset[type] = frozenset()) -> tuple[Print, tuple[str, ...]] | None:
        """For a method that read the attributes ``keys`` and asked which attributes hold a value of
        each class of ``kinds``: the print of the attributes of ``keys`` the instance holds, of
        which hold each class with those attributes, and what they lead to; and the names of
        ``keys`` it does not hold, sorted (``None``: no base to go with it).

        The methods of a class read different names (``self.forward_3(x)`` looks ``forward_3`` up
        in the instance first) but mostly the same attributes: the print of the same attributes
        held is one object, which the unit cache compares once per version."""
        if self.base is None or self.instance is None:
            return None
        attrs = self.instance.attrs
        holding = tuple((kind, self._holding(kind))
                        for kind in sorted(kinds, key=lambda kind: (kind.__module__, kind.__qualname__)))
        present = frozenset(key for key in keys if dict.__contains__(attrs, key))
        present = present.union(*(names for _, names in holding))
        absent = tuple(sorted(key for key in keys if not dict.__contains__(attrs, key)))
        key = (present, kinds)
        found = self._parts.get(key)
        if found is None:
            found = self._parts[key] = self._part(present, holding)
        return found, absent

    def _holding(self, kind: type) -> tuple[str, ...]:
        """The attributes of the instance whose value is a ``kind``, sorted."""
        found = self._holds.get(kind)
        if found is None:
            assert self.instance is not None
            found = self._holds[kind] = tuple(key for key, _ in untracked_of_class(self.instance.attrs, kind))
        return found

    def _part(self, present: frozenset[str], holding: tuple[tuple[type, tuple[str, ...]], ...]) -> Print:
        assert self.instance is not None
        walk = _Walk(self.locate, self.nodes)
        walk.skip_site = id(self.instance)
        walk.known = self.ranks
        attrs = self.instance.attrs
        if self.order is None:
            self.order = {key: place for place, key in enumerate(attrs)}
        for kind, names in holding:
            walk.out.append(("holding", kind, names))
        walk.self_keys = present
        walk.attrs_read(attrs, present, self.order)
        walk.reached(self.built.state)
        own = _ranks(walk.out)
        out: list[object] = []
        for token in walk.out:
            if isinstance(token, _Id):
                out.append(("#", token.kind, bisect.bisect(self.sorted_ids[token.kind], token.raw),
                            own[token.kind][token.raw]))
            else:
                out.append(token)
        return tuple(out)


def _plain_fields(walk: _Walk, state: State) -> None:
    """The state's fields that are not keyed by ids (names, modes, hooks, escaped functions)."""
    for item in fields(State):
        name = item.name
        if name != "shared" and name not in _STATE_KEYS:
            walk.out.append(name)
            walk.value(getattr(state, name))


def _reached_by_all(built: BuiltSelf, nodes: list[Node], instance: int | None) -> tuple[set[int], set[int]]:
    """The ids and graph nodes the built state's values lead to, every attribute of the instance
    counted (once per build: kept on it)."""
    found: tuple[set[int], set[int]] | None = getattr(built, "_reached_by_all", None)
    if found is None:
        walk = _Walk(lambda node: None, nodes)
        walk.skip_site = instance
        walk.value(built.value)
        _plain_fields(walk, built.state)
        walk.reached(built.state)
        found = (walk.ids, walk.node_ids)
        setattr(built, "_reached_by_all", found)  # noqa: B010 - a cache kept on the build
    return found


class LineMap:
    """The lines of an old version of a method region that the new version kept, old line (from
    the region's first line) to new. A line is kept when its code is: its tokens and their
    columns, comments left out (a comment typed or fixed at the end of a line changes no code)."""

    def __init__(self, old: Region, new: Region) -> None:
        old_lines, new_lines = code_lines(str(old.key[2])), code_lines(str(new.key[2]))
        self.map: dict[int, int] = {}
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for first_old, first_new, size in matcher.get_matching_blocks():
            for step in range(size):
                self.map[first_old + step] = first_new + step

    def line(self, offset: int) -> int | None:
        return self.map.get(offset)


_NOT_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENDMARKER)


def code_lines(text: str) -> list[object]:
    """Per line of ``text``: its code (each token starting there, with its columns and where it
    ends), comments and line ends left out; the lines themselves when ``text`` does not tokenize."""
    lines = text.splitlines(keepends=True)
    found: list[list[object]] = [[] for _ in lines]
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            row = token.start[0] - 1
            if token.type not in _NOT_CODE and 0 <= row < len(found):
                found[row].append((token.type, token.string, token.start[1], token.end[0] - row, token.end[1]))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return list(lines)
    return [tuple(items) for items in found]


def same_prints(old: Print, new: Print, successor: Callable[[Region], tuple[Region, LineMap] | None]) -> bool:
    """Whether ``new`` (this version's build) prints what ``old`` did, a node of an edited
    method region in ``old`` being at the place the edit moved it to (``successor``: the region
    an old one became, and how its lines moved; ``None`` when it has none)."""
    if len(old) != len(new):
        return False
    for before, after in zip(old, new):
        if before is after:
            continue
        if isinstance(before, At):
            if not (isinstance(after, At) and _same_place(before, after, successor)):
                return False
        elif before != after:
            return False
    return True


def _same_place(before: At, after: At, successor: Callable[[Region], tuple[Region, LineMap] | None]) -> bool:
    if before.node is after.node:
        return True
    old, new = before.place, after.place
    if old is None or new is None or type(before.node) is not type(after.node):
        return False
    region, line, end_line, column, end_column = old
    if isinstance(before.node, _DEFINITIONS):
        if getattr(before.node, "name", None) != getattr(after.node, "name", None) or before.header != after.header:
            return False
        if before.header or not region.mappable:
            # a function the build ran, or a class (its methods are regions of their own): its
            # name where it starts
            if column != new[3]:
                return False
            if region is new[0]:
                return line == new[1]
            moved = successor(region)
            return moved is not None and moved[0] is new[0] and moved[1].line(line) == new[1]
    if (column, end_column) != new[3:]:
        return False
    if region is new[0]:
        # an unchanged method or block: the same place is the same code (the rest of a class
        # is not one stretch of lines: there only the same node is)
        return region.mappable and (line, end_line) == new[1:3]
    moved = successor(region)
    if moved is None or moved[0] is not new[0]:
        return False
    # every line of the node kept, unchanged and in order: the same code
    lines = moved[1]
    return all(lines.line(offset) == new[1] + offset - line for offset in range(line, end_line + 1)) and \
        lines.line(end_line) == new[2]
