"""The submodules of a module, as ``children()``, ``named_children()``, ``modules()`` and
``named_modules()`` list them, where the engine knows all of them.

Why: Grad-CAM and feature-logging code registers its hooks in a loop over these
(``for name, m in model.named_modules(): m.register_forward_hook(...)``). An engine that
does not know what the loop goes over hands each hook to code it cannot see (it escapes);
one that lists the modules runs each hook where torch runs it. Listing only some of them
would be worse than neither: the hooks of the others would run nowhere. So a list is given
only when every module on the way is known, in torch's order (registration order: the
attributes as ``__init__`` assigned them, a ``Sequential``'s layers in turn; ``modules()``
depth first, each module once); elsewhere ``None``.
"""

from __future__ import annotations

from graphlife.analysis.state import State
from graphlife.analysis.values import HeapObject, HeapRef, Number, TupleVal, Unknown, Value

#: More submodules than this: the loop over them is not unrolled anyway (one iteration
#: stands for all, with what they have in common), so listing them buys nothing.
MAX_LISTED = 16
#: Containers whose submodules live where the engine keeps only a summary (a slot per key).
_CONTAINERS = frozenset({"nn.ModuleList", "nn.ModuleDict", "nn.Sequential", "nn.ParameterList"})


def children(state: State, ref: HeapRef) -> list[tuple[str | None, HeapRef]] | None:
    """The direct submodules with their names (``None`` where the name is not known), or
    ``None`` when some of them may be unknown."""
    obj = state.heap.get(ref.oid)
    if obj is None or obj.kind != "module" or "library_model" in obj.extra:
        return None
    listed = obj.attrs.get("__children__")
    if isinstance(listed, TupleVal):
        if not all(_known_module(state, item) for item in listed.items):
            return None
        return [(str(index), item) for index, item in enumerate(listed.items) if isinstance(item, HeapRef)]
    if obj.cls in _CONTAINERS or listed is not None:
        return None
    return _attribute_children(state, obj)


def modules(state: State, ref: HeapRef) -> list[tuple[str | None, HeapRef]] | None:
    """The module itself (named ``""``) and every submodule below it, depth first, each once,
    with its dotted name; ``None`` when some may be unknown or there are too many."""
    found: list[tuple[str | None, HeapRef]] = []
    seen: set[int] = set()

    def visit(name: str | None, module: HeapRef) -> bool:
        if module.oid in seen:
            return True
        seen.add(module.oid)
        found.append((name, module))
        below = children(state, module)
        if below is None or len(found) > MAX_LISTED:
            return False
        for child_name, child in below:
            dotted = None if name is None or child_name is None else (
                child_name if not name else f"{name}.{child_name}")
            if not visit(dotted, child):
                return False
        return True

    return found if visit("", ref) and len(found) <= MAX_LISTED else None


def as_items(listed: list[tuple[str | None, HeapRef]], named: bool) -> tuple[Value, ...]:
    """The items of the list torch returns: the modules, or ``(name, module)`` pairs."""
    if not named:
        return tuple(module for _, module in listed)
    return tuple(TupleVal((Number(name), module)) for name, module in listed)


def _attribute_children(state: State, obj: HeapObject) -> list[tuple[str | None, HeapRef]] | None:
    out: list[tuple[str | None, HeapRef]] = []
    for name, value in obj.attrs.items():
        if name.startswith("[") or (name.startswith("__") and name.endswith("__")):
            continue  # the engine's own slots (hook tables, known keys), not attributes
        if isinstance(value, Unknown) or (not isinstance(value, HeapRef) and _may_hold_module(value)):
            return None  # it may be a module the engine does not know
        if isinstance(value, HeapRef) and _known_module(state, value):
            out.append((name, value))
        elif isinstance(value, HeapRef) and value.oid not in state.heap:
            return None
    return out


def _known_module(state: State, value: Value) -> bool:
    if not isinstance(value, HeapRef):
        return False
    obj = state.heap.get(value.oid)
    return obj is not None and obj.kind == "module"


def _may_hold_module(value: Value) -> bool:
    """A value that is not certainly something else than a module (a join with an unknown)."""
    return isinstance(value, TupleVal) and any(isinstance(item, (Unknown, HeapRef)) for item in value.items)
