"""``collections.namedtuple``: the records RL code keeps its log-probs and values in.

``SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])`` then
``saved.append(SavedAction(m.log_prob(a), v))`` puts two tensors with graphs in a list,
and ``for (log_prob, value), R in zip(saved, returns)`` takes them out again for the
loss. Unknown records would hide those graphs (and the backward through them); a record
is a tuple whose items also have names, so it is modeled as one.
"""

from __future__ import annotations

from graphlife.analysis.engine_api import TorchEngine
from graphlife.analysis.state import State
from graphlife.analysis.values import UNKNOWN, NamedTupleClass, Number, Value

NAMEDTUPLE_FACTORIES = frozenset({"collections.namedtuple"})


def make_namedtuple_class(interp: TorchEngine, state: State, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """The class ``namedtuple(typename, field_names)`` makes, when its field names are known: a
    string (``'log_prob value'``, ``'a, b'``) or a literal list or tuple of strings."""
    names = args[1] if len(args) > 1 else kwargs.get("field_names")
    if names is None or kwargs.get("rename") is not None or kwargs.get("defaults") is not None:
        return UNKNOWN
    fields: list[str] = []
    if isinstance(names, Number) and isinstance(names.const, str):
        fields = names.const.replace(",", " ").split()
    else:
        items = interp.known_items(names, state)
        if items is None or not all(isinstance(item, Number) and isinstance(item.const, str) for item in items):
            return UNKNOWN
        fields = [item.const for item in items if isinstance(item, Number)]
    if not fields or not all(name.isidentifier() for name in fields) or len(set(fields)) != len(fields):
        return UNKNOWN
    return NamedTupleClass(tuple(fields))
