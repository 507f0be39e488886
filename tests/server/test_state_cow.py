"""The copy-on-write maps behind a state's names and heap behave like dicts copied in full.

A state's ``env`` and ``heap`` are :class:`CowMap`: a fork shares its entries with the map
it came from until one of them writes, and a join looks only at the keys written since
the two maps last shared a base. These tests hold them to what plain dicts copied at
every fork (and joined entry by entry) would give: the same entries, the same objects,
the same iteration order.
"""

from __future__ import annotations

import pickle
import random
from dataclasses import dataclass

import pytest

from graphlife.analysis import cow_map
from graphlife.analysis.cow_map import CowMap, join_maps
from graphlife.analysis.state import SHARE_FROM, State
from graphlife.analysis.values import (
    UNKNOWN,
    HeapObject,
    Number,
    TensorVal,
    join_values,
)


@dataclass(frozen=True)
class Val:
    """A value equal to others of the same ``n`` but a distinct object (as engine values are)."""

    n: int


def join(a, b):
    """A join whose result shows what it joined (and always is a new object)."""
    return ("join", a, b)


def reference_join(a: dict, b: dict, join) -> dict:
    """How two plain dicts were joined before the maps were shared (the old ``_merge``)."""
    if a == b:
        return dict(a)
    out = dict(a)
    for key, value_b in b.items():
        value_a = a.get(key)
        if value_a is not value_b:
            out[key] = join(value_a, value_b)
    for key in a.keys() - b.keys():
        out[key] = join(a[key], None)
    return out


def same_value(expected, actual) -> bool:
    """The same object, or a join of the same objects."""
    if isinstance(expected, tuple):
        return (isinstance(actual, tuple) and len(actual) == len(expected)
                and all(same_value(e, a) for e, a in zip(expected, actual)))
    return expected is actual


def assert_like(cow: CowMap, plain: dict) -> None:
    """Same keys in the same order, the same objects, the same answers to every read."""
    assert len(cow) == len(plain)
    assert list(cow) == list(plain)
    assert list(cow.keys()) == list(plain.keys())
    for (key, value), (plain_key, plain_value) in zip(cow.items(), plain.items()):
        assert key == plain_key and same_value(plain_value, value)
    for key in [*plain, "never-written"]:
        assert (key in cow) == (key in plain)
        assert same_value(plain.get(key), cow.get(key))
        if key in plain:
            assert same_value(plain[key], cow[key])
        else:
            with pytest.raises(KeyError):
                cow[key]


# -- forks never see each other's writes -----------------------------------------------


def test_a_write_in_a_fork_shows_neither_in_the_parent_nor_in_a_sibling():
    parent = CowMap({"a": Val(1), "b": Val(2)})
    parent["c"] = Val(3)  # in the delta, not the base
    first, second = parent.fork(), parent.fork()
    first["a"] = Val(10)
    first["c"] = Val(30)
    first["d"] = Val(40)
    second["b"] = Val(20)
    assert dict(parent.items()) == {"a": Val(1), "b": Val(2), "c": Val(3)}
    assert dict(first.items()) == {"a": Val(10), "b": Val(2), "c": Val(30), "d": Val(40)}
    assert dict(second.items()) == {"a": Val(1), "b": Val(20), "c": Val(3)}
    parent["a"] = Val(100)  # the parent writes after forking: the forks keep what they had
    assert first["a"] == Val(10) and second["a"] == Val(1)


def test_a_delete_in_a_fork_shows_neither_in_the_parent_nor_in_a_sibling():
    parent = CowMap({"a": Val(1), "b": Val(2)})
    parent["c"] = Val(3)
    first, second = parent.fork(), parent.fork()
    del first["a"]  # a key of the shared base
    assert first.pop("c") == Val(3)  # a key of the shared delta
    assert "a" not in first and "c" not in first and len(first) == 1
    assert list(parent) == ["a", "b", "c"] and list(second) == ["a", "b", "c"]
    with pytest.raises(KeyError):
        del first["a"]
    assert first.pop("a", None) is None


def test_deleting_a_key_written_before_a_fork_when_the_write_after_it_folds(monkeypatch):
    monkeypatch.setattr(cow_map, "FOLD_AT_LEAST", 0)
    monkeypatch.setattr(cow_map, "FOLD_FRACTION", 0.0)
    parent = CowMap({"a": 1})
    parent["b"] = 2
    child = parent.fork()
    del child["b"]  # the delta is shared: owning it folds it into a new base first
    assert list(child.items()) == [("a", 1)] and list(parent.items()) == [("a", 1), ("b", 2)]


def test_a_map_pickles_and_copies_as_a_dict_would():
    cow = CowMap({"a": 1})
    cow["b"] = 2
    again = pickle.loads(pickle.dumps(cow))  # noqa: S301 - our own bytes
    assert isinstance(again, CowMap) and list(again.items()) == [("a", 1), ("b", 2)]
    twin = cow.copy()
    twin["a"] = 3
    assert cow == {"a": 1, "b": 2} and twin == {"a": 3, "b": 2} and cow != twin


def test_a_deleted_key_that_comes_back_goes_last_as_in_a_dict():
    cow, plain = CowMap({"a": 1, "b": 2, "c": 3}), {"a": 1, "b": 2, "c": 3}
    for target in (cow, plain):
        del target["a"]
        target["a"] = 4
        target["b"] = 5
    assert list(cow.items()) == list(plain.items()) == [("b", 5), ("c", 3), ("a", 4)]


def test_a_fork_of_a_fork_after_compaction_keeps_its_entries():
    root = CowMap({i: Val(i) for i in range(4)})
    for i in range(4, 40):
        root[i] = Val(i)  # a delta larger than the base: folded at the next write after a fork
    child = root.fork()
    root[0] = Val(-1)
    grandchild = child.fork()
    child[1] = Val(-2)
    assert root[0] == Val(-1) and root[1] == Val(1)
    assert child[0] == Val(0) and child[1] == Val(-2)
    assert grandchild[0] == Val(0) and grandchild[1] == Val(1) and len(grandchild) == 40


# -- joins equal the joins of full copies -------------------------------------------------


def test_a_join_looks_only_at_the_keys_either_side_changed():
    shared = {f"name{i}": Val(i) for i in range(50)}
    base = CowMap(dict(shared))
    left, right = base.fork(), base.fork()
    first, second, fresh = Val(100), Val(200), Val(300)
    left["name1"] = first  # changed on one side only
    right["name2"] = second
    right["fresh"] = fresh  # a key only one side has
    compared = []

    def counting_join(a, b):
        compared.append((a, b))
        return join(a, b)

    joined = join_maps(left, right, counting_join)
    plain_left = {**shared, "name1": first}
    plain_right = {**shared, "name2": second, "fresh": fresh}
    assert_like(joined, reference_join(plain_left, plain_right, join))
    assert len(compared) == 3  # name1, name2, fresh: not the 48 entries both still share


def test_a_join_of_equal_maps_keeps_the_left_entries_without_joining():
    base = CowMap({"a": Val(1)})
    left, right = base.fork(), base.fork()
    left["b"], right["b"] = Val(2), Val(2)  # equal, distinct objects
    joined = join_maps(left, right, join)
    assert joined["b"] is left["b"]


def test_keys_only_the_right_side_has_come_last_in_its_order():
    base = CowMap({"a": 1})
    left, right = base.fork(), base.fork()
    left["x"] = 1
    for key in ("q", "p", "r"):
        right[key] = 2
    joined = join_maps(left, right, join)
    assert list(joined) == ["a", "x", "q", "p", "r"]


def test_maps_without_a_common_base_are_joined_entry_by_entry():
    left, right = CowMap({"a": Val(1), "b": Val(2)}), CowMap({"b": Val(2), "c": Val(3)})
    plain = reference_join({"a": Val(1), "b": Val(2)}, {"b": Val(2), "c": Val(3)}, join)
    joined = join_maps(left, right, join)
    assert list(joined) == list(plain)
    assert joined["a"] == ("join", Val(1), None) and joined["c"] == ("join", None, Val(3))


def test_joins_after_compactions_on_both_sides_use_the_common_ancestor():
    shared = {i: Val(i) for i in range(20)}
    changes = {i: Val(-i) for i in range(4)}
    base = CowMap(dict(shared))
    left, right = base.fork(), base.fork()
    left[1] = changes[1]
    left.compact()
    left[2] = changes[2]
    right[3] = changes[3]
    right.compact()
    assert left._lineage is not right._lineage
    plain_left = shared | {1: changes[1], 2: changes[2]}
    plain_right = shared | {3: changes[3]}
    assert cow_map._changed_since_common_base(left, right) == {1, 2, 3}
    assert_like(join_maps(left, right, join), reference_join(plain_left, plain_right, join))


# -- against plain dicts, at random ---------------------------------------------------------


KEYS = [f"k{i}" for i in range(12)]


def random_operations(seed: int, steps: int = 200) -> None:
    """Forks, writes, deletes, joins, compactions and reads on a family of maps, each mirrored
    by a plain dict copied in full at every fork and joined entry by entry."""
    rng = random.Random(seed)
    values = [Val(i % 4) for i in range(8)]  # equal values that are distinct objects
    start = {key: rng.choice(values) for key in rng.sample(KEYS, 6)}
    family: list[tuple[CowMap, dict]] = [(CowMap(dict(start)), dict(start))]
    for _ in range(steps):
        cow, plain = rng.choice(family)
        operation = rng.random()
        if operation < 0.2:
            family.append((cow.fork(), dict(plain)))
        elif operation < 0.5:
            key, value = rng.choice(KEYS), rng.choice(values)
            cow[key] = value
            plain[key] = value
        elif operation < 0.6 and plain:
            key = rng.choice(list(plain))
            if rng.random() < 0.5:
                del cow[key]
                del plain[key]
            else:
                assert same_value(plain.pop(key), cow.pop(key))
        elif operation < 0.75:
            other_cow, other_plain = rng.choice(family)
            family.append((join_maps(cow, other_cow, join), reference_join(plain, other_plain, join)))
        elif operation < 0.8:
            fresh = {key: rng.choice(values) for key in rng.sample(KEYS, 5)}
            family.append((CowMap(dict(fresh)), fresh))  # a map with no common ancestor
        elif operation < 0.85:
            cow.compact()
        elif operation < 0.87:
            cow.clear()
            plain.clear()
        elif operation < 0.9:
            other_cow, other_plain = rng.choice(family)
            assert (cow == other_cow) == (plain == other_plain)
            assert (cow == other_plain) == (plain == other_plain)
        else:
            assert list(cow.items()) == list(plain.items())
        for member, mirror in (family[-1], (cow, plain)):
            assert_like(member, mirror)
    for member, mirror in family:
        assert_like(member, mirror)


@pytest.mark.parametrize("seed", range(40))
def test_random_operations_behave_like_plain_dicts(seed):
    random_operations(seed)


@pytest.mark.parametrize("fold_at_least", [0, 2])
def test_random_operations_with_eager_folding(monkeypatch, fold_at_least):
    monkeypatch.setattr(cow_map, "FOLD_AT_LEAST", fold_at_least)
    monkeypatch.setattr(cow_map, "FOLD_FRACTION", 0.0)
    for seed in range(10):
        random_operations(seed)


def test_a_short_lineage_limit_falls_back_to_entry_by_entry_joins(monkeypatch):
    monkeypatch.setattr(cow_map, "MAX_LINEAGE_DEPTH", 2)
    for seed in range(10):
        random_operations(seed)


# -- the state ---------------------------------------------------------------------------------


SIZES = [3, SHARE_FROM + 10]  # copied whole (plain dicts), shared (CowMap)


@pytest.mark.parametrize("size", SIZES)
def test_state_copies_keep_names_and_heap_apart(size):
    names = {f"n{i}": Number(i) for i in range(size)}
    heap = {oid: HeapObject(kind="list") for oid in range(size)}
    state = State(env=dict(names), heap=dict(heap))
    copy = state.copy()
    copy.env["y"] = Number(2)
    copy.env["n0"] = UNKNOWN
    copy.heap_write(1).elem = Number(3)
    copy.heap[size + 1] = HeapObject(kind="dict")
    state.env["z"] = Number(4)  # the original goes on after the copy: the copy never sees it
    assert list(state.env.items()) == [*names.items(), ("z", Number(4))]
    assert state.heap[1].elem is None and size + 1 not in state.heap
    assert copy.env["n0"] is UNKNOWN and copy.heap[1].elem == Number(3) and "z" not in copy.env
    assert list(copy.env) == [*names, "y"]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("other_size", SIZES)
def test_state_joins_equal_the_joins_of_full_copies(size, other_size):
    tensor = TensorVal(requires_grad=True, leaf=False, grad_fn=frozenset({1}), storage=7)
    changed = Number("changed")
    names = {f"n{i}": Number(i) for i in range(max(size, other_size))}
    extra = {f"n{i}": names[f"n{i}"] for i in range(min(size, other_size), max(size, other_size))}
    state = State(env={key: names[key] for key in list(names)[:min(size, other_size)]},
                  heap={1: HeapObject(kind="list")})
    then, orelse = state.copy(), state.copy()
    (then if size > other_size else orelse).env.update(extra)  # one side binds more names
    then.env["t"] = tensor
    then.env["n1"] = changed
    orelse.env["n2"] = tensor
    orelse.heap_write(1).elem = tensor
    plain_then, plain_orelse = dict(then.env.items()), dict(orelse.env.items())
    then_copy = then.copy()  # a fork whose maps may be shared or copied whole
    joined = State.join_all([then_copy, orelse])
    expected = reference_join(plain_then, plain_orelse, join_values)
    assert list(joined.env.items()) == list(expected.items())
    for key, value in expected.items():
        if value is plain_then.get(key):
            assert joined.env[key] is value  # kept, not joined again
    assert joined.heap[1].elem == tensor and joined.heap[1] is not then.heap[1]


def test_a_large_map_is_shared_and_a_small_one_copied_whole():
    small = State(env={"a": Number(1)})
    assert type(small.copy().env) is dict and type(small.env) is dict
    large = State(env={f"n{i}": Number(i) for i in range(SHARE_FROM)})
    copy = large.copy()  # what a call does for its callee's names: the dict becomes the state's own
    assert isinstance(large.env, CowMap) and isinstance(copy.env, CowMap)
    copy.env["n0"] = Number(-1)
    assert large.env["n0"] == Number(0) and copy.env["n0"] == Number(-1)


def test_same_objects_answers_as_a_comparison_of_every_entry():
    """The call memo asks whether a call left the heap as it was (every object the very same)
    after every call it runs; between forks of one base it compares only the keys written since."""
    def every_entry(a, b) -> bool:
        return len(a) == len(b) and all(key in b and b[key] is value for key, value in a.items())

    rng = random.Random(7)
    values = [object() for _ in range(40)]
    answers = {True: 0, False: 0}
    for _ in range(400):
        maps = [CowMap({key: values[key] for key in range(rng.randint(0, 30))})]
        for _ in range(rng.randint(1, 30)):
            current, roll = rng.choice(maps), rng.random()
            key = rng.randint(0, 35)
            if roll < 0.3:
                maps.append(current.fork())
            elif roll < 0.55:
                current[key] = rng.choice(values)
            elif roll < 0.6:
                current[key] = current.get(key, values[0])  # written, but with the object it held
            elif roll < 0.75:
                current.pop(key, None)
            elif roll < 0.77:
                current.clear()
            elif roll < 0.85:
                current.compact()
            a, b = rng.choice(maps), rng.choice(maps)
            expected = every_entry(a, b)
            assert cow_map.same_objects(a, b) is expected
            assert cow_map.same_objects(dict(a.items()), dict(b.items())) is expected
            answers[expected] += 1
    assert answers[True] > 100 and answers[False] > 100  # both answers were exercised
