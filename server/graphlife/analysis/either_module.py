"""A module chosen on some paths, another on the others: ``if args.model == 'Transformer':
model = TransformerModel(...) else: model = RNNModel(...)``.

Joined as two references, the name would be unknown after the ``if``, and every training
step written against it (the loss, its backward, what is accumulated from it) would go unseen.
Both paths agree on what matters to the loop around it: the name holds *a module*, whose
parameters are among those of the two and require grad unless both are frozen, and whose call
builds a graph from its inputs and those parameters. The join is such a module of unknown class
(called, it is an opaque op whose node is certain, as for any module the engine cannot look
into): facts about the graphs made from its output hold on every path, facts about what its
forward saves are not claimed.
"""

from __future__ import annotations

from collections.abc import Mapping

from graphlife.analysis.values import HeapObject, HeapRef, TupleVal, join_tri

#: How deep a module's children are walked for its parameters (as the engine's own walk).
_MAX_DEPTH = 6


def merged_oid(a: int, b: int) -> int:
    """The heap id of the join of objects ``a`` and ``b``: the same for the same pair on every
    join (a loop joins its paths again), never an id the engine hands out (those count up from
    zero), and distinct for distinct pairs (a pairing of the two ids, made non-negative)."""
    x, y = sorted((2 * a if a >= 0 else -2 * a - 1, 2 * b if b >= 0 else -2 * b - 1))
    return -((x + y) * (x + y + 1) // 2 + y) - 1


def merge_modules(a: int, heap_a: Mapping[int, HeapObject], b: int,
                  heap_b: Mapping[int, HeapObject]) -> tuple[int, HeapObject] | None:
    """The module that joins module ``a`` (in ``heap_a``) and module ``b`` (in ``heap_b``), with
    its heap id; ``None`` unless both are modules."""
    obj_a, obj_b = heap_a.get(a), heap_b.get(b)
    if obj_a is None or obj_b is None or obj_a.kind != "module" or obj_b.kind != "module":
        return None
    merged = HeapObject(
        kind="module",
        cls="",  # no class: a call is an opaque op of the inputs and the parameters
        param_storages=_parameters(heap_a, obj_a, 0) | _parameters(heap_b, obj_b, 0),
        site=obj_a.site,
        frozen=join_tri(obj_a.frozen, obj_b.frozen),
    )
    merged.extra["either"] = (a, b)
    library = obj_a.extra.get("library_model")
    if library is not None and library == obj_b.extra.get("library_model"):
        # A library's model on both paths (`models.__dict__[arch](pretrained=True)` or not): one
        # such model, whichever was built (`graphlife.analysis.library_models`).
        merged.cls = obj_a.cls
        merged.extra["library_model"] = library
    training = (obj_a.extra.get("training"), obj_b.extra.get("training"))
    if training[0] == training[1] and training[0] is not None:
        merged.extra["training"] = training[0]
    return merged_oid(a, b), merged


def _parameters(heap: Mapping[int, HeapObject], obj: HeapObject, depth: int) -> frozenset[int]:
    """The storages of every parameter ``obj`` owns, its children's included."""
    storages = set(obj.param_storages)
    if depth >= _MAX_DEPTH:
        return frozenset(storages)
    for held in obj.referents():
        for item in held.items if isinstance(held, TupleVal) else (held,):
            if isinstance(item, HeapRef):
                child = heap.get(item.oid)
                if child is not None and child.kind == "module":
                    storages |= _parameters(heap, child, depth + 1)
    return frozenset(storages)
