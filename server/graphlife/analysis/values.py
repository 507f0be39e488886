"""Abstract values: what the engine knows about each name at a program point.

Facts that can differ between paths are three-valued: ``True``, ``False`` or
``None`` (maybe). A tensor's graph is the set of graph nodes that may be its
``grad_fn``; ``certain`` says the set came from a single path, so that what is
reachable from it is reachable on every path (the basis of errors).
"""

from __future__ import annotations

import ast
from dataclasses import MISSING, dataclass, field, fields
from dataclasses import replace as _checked_replace
from typing import Any, TypeVar

from graphlife.analysis.self_reads import note_joined

Tri = bool | None


def join_tri(a: Tri, b: Tri) -> Tri:
    return a if a == b else None


class Value:
    """Base of every abstract value."""

    def join(self, other: Value) -> Value:
        if self == other:
            return self
        return UNKNOWN


_V = TypeVar("_V", bound="Value")


def replace(value: _V, **changes: Any) -> _V:
    """``dataclasses.replace`` for the engine's frozen values, without re-running ``__init__``:
    the engine makes a changed copy of a tensor fact for nearly every op, and the generic
    version was a tenth of the analysis. Unknown field names still fail loudly."""
    instance: Any = value  # a dataclass: every kind of value is one (``Value`` itself is not)
    cls = instance.__class__
    fields_ = cls.__dataclass_fields__
    if not changes.keys() <= fields_.keys():
        return _checked_replace(instance, **changes)  # raises the usual TypeError
    new: _V = object.__new__(cls)
    attributes = new.__dict__
    attributes.update(value.__dict__)
    attributes.update(changes)
    return new


@dataclass(frozen=True)
class Unknown(Value):
    """Nothing known (an opaque call, a parameter of a function analyzed on its own)."""

    def __repr__(self) -> str:
        return "Unknown"


UNKNOWN = Unknown()


@dataclass(frozen=True)
class NoneValue(Value):
    pass


NONE = NoneValue()


@dataclass(frozen=True)
class Unreplayed:
    """Where a value comes from that a second run of the same code does not give again: a draw of
    Python's or NumPy's random state, the clock, or state that code run inside a ``checkpoint``
    changes (``self.calls``, a global counter). A checkpoint's recomputation runs its function a
    second time (GL407), so such a value may differ there.

    ``key`` names the state read (``("attr", object id, name)`` or ``("global", name)``): it makes
    the value differ only if the checkpointed code also writes that state; ``None`` for a draw or
    the clock, which differ anyway. Compared by the site's identity (the same read is one source)."""

    site_id: int
    origin: str  # what to name: `random`, `numpy.random`, `time`, `self.calls`, `calls`
    key: tuple[object, ...] | None = None
    site: ast.AST | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class Number(Value):
    """A Python number or string (not a tensor): `.item()`, `float(loss)`, literals.

    ``unreplayed``: the sources of the number that a checkpoint's recomputation does not repeat
    (only recorded while a checkpointed function runs, see :class:`Unreplayed`)."""

    const: Any = None
    unreplayed: frozenset[Unreplayed] = frozenset()

    def join(self, other: Value) -> Value:
        if isinstance(other, TensorVal):
            return other.join(self)  # a number on some paths, a tensor on the others
        if isinstance(other, Number) and other != self:
            tags = self.unreplayed | other.unreplayed
            if tags and self.const == other.const and type(self.const) is type(other.const):
                return Number(self.const, tags)
            return Number(None, tags)  # a number either way (`correct = 0` then `correct += x.item()`)
        return Value.join(self, other)


@dataclass(frozen=True)
class TensorVal(Value):
    """A tensor: does it require grad, is it a leaf, which graph nodes, which storage."""

    requires_grad: Tri = False
    leaf: Tri = True
    grad_fn: frozenset[int] = frozenset()
    certain: bool = True
    storage: int | None = None
    inference: Tri = False
    is_param: bool = False
    origin: ast.AST | None = field(default=None, compare=False, hash=False)
    desc: str = field(default="", compare=False, hash=False)
    #: The leaf was created with ``requires_grad=True`` / is a parameter (for GL105 messages).
    created_with_grad: ast.AST | None = field(default=None, compare=False, hash=False)
    retains_grad: bool = False
    dtype: str | None = None
    device: str | None = None
    #: Parameters handed out by ``module.parameters()``: the module's heap id.
    owner: int | None = None
    #: Reached through ``.data``: in-place changes do not bump the version counter.
    via_data: bool = False
    #: The ``.to()``/``.double()`` call that made this non-leaf out of a leaf.
    converted_from: ast.AST | None = field(default=None, compare=False, hash=False)
    #: Why it has no graph (for GL104 messages): "computed under torch.no_grad()", ...
    why: str = field(default="", compare=False, hash=False)
    why_site: ast.AST | None = field(default=None, compare=False, hash=False)
    #: Made by an unknown call while gradients were off: maybe not a tensor at all, but
    #: certainly without a graph. Never treated as a module or callable.
    opaque: bool = False
    #: For ``t.grad``: the storages of the leaf (or parameters) whose gradient this is.
    grad_of: frozenset[int] = frozenset()
    #: Joined with ``None`` on some path (``h = None`` before a loop): ``h is None`` is undecided.
    nullable: bool = False
    #: Certainly one element (a full reduction, a loss with its default reduction, arithmetic
    #: of such values and numbers): ``.item()`` works on it (GL201's ``.item()`` fix).
    scalar: bool = False
    #: An input or output of a module with a full backward hook, as its forward sees it or its
    #: call returns it: torch passes it through ``BackwardHookFunction``, which returns a view,
    #: and an in-place change of that view raises (GL110). The call of the hooked module.
    hook_view: ast.AST | None = field(default=None, compare=False, hash=False)
    #: Stands for the tuple of tensors a multi-output op returns (``x.chunk(3)``, ``x.unbind()``,
    #: a tensor method the op table does not know), each item with these facts: between
    #: ``parts[0]`` and ``parts[1]`` of them (``None``: no bound). ``None``: one tensor. Why a
    #: tensor and not a tuple: everything that reads a graph through the tuple (unpacking it,
    #: ``torch.cat`` of it, storing it) reads it as before; what counts items (a custom
    #: Function's gradients, GL402) reads this.
    parts: tuple[int, int | None] | None = None

    def join(self, other: Value) -> Value:
        if self == other:
            return self
        if isinstance(other, TensorVal):
            return TensorVal(
                parts=join_parts(self.parts, other.parts),
                requires_grad=join_tri(self.requires_grad, other.requires_grad),
                leaf=join_tri(self.leaf, other.leaf),
                grad_fn=self.grad_fn | other.grad_fn,
                certain=False,
                storage=self.storage if self.storage == other.storage else None,
                inference=join_tri(self.inference, other.inference),
                is_param=self.is_param and other.is_param,
                origin=self.origin,
                desc=self.desc or other.desc,
                retains_grad=self.retains_grad and other.retains_grad,
                dtype=self.dtype if self.dtype == other.dtype else None,
                device=self.device if self.device == other.device else None,
                owner=self.owner if self.owner == other.owner else None,
                via_data=self.via_data and other.via_data,
                nullable=self.nullable or other.nullable,
                scalar=self.scalar and other.scalar,
            )
        if isinstance(other, Unknown):
            # Anything on the other path, a tensor with a graph among them (`x = layer(x)` in a
            # loop over layers the engine cannot see): whether it requires grad is not known.
            if not self.certain and self.requires_grad is None and self.nullable:
                return self  # already as weak (the same object: what is unchanged stays identical)
            return replace(self, certain=False, requires_grad=None, nullable=True)
        if isinstance(other, NoneValue):
            requires_grad = None if self.requires_grad else self.requires_grad
            return replace(self, certain=False, requires_grad=requires_grad, nullable=True)
        if isinstance(other, Number) and not isinstance(other.const, str):
            # `loss = 0` before a loop of `loss += ...` that may not run: a number on some path,
            # this tensor (and its graph) on the others. Known to maybe not be a tensor at all.
            return replace(self, certain=False, requires_grad=None if self.requires_grad else self.requires_grad,
                           nullable=True, scalar=False)
        return UNKNOWN


def join_parts(a: tuple[int, int | None] | None, b: tuple[int, int | None] | None) -> tuple[int, int | None] | None:
    """The item counts of :attr:`TensorVal.parts` on either path (one tensor counts as one item)."""
    if a == b:
        return a
    low_a, high_a = a if a is not None else (1, 1)
    low_b, high_b = b if b is not None else (1, 1)
    return min(low_a, low_b), None if high_a is None or high_b is None else max(high_a, high_b)


def one_tensor(value: TensorVal) -> TensorVal:
    """An item of what ``value`` stands for: one tensor with its facts (unpacking ``x.chunk(2)``)."""
    return replace(value, parts=None) if value.parts is not None else value


def _init_through_dict(cls: type) -> None:
    """Give the frozen dataclass ``cls`` an ``__init__`` that fills the instance's ``__dict__``
    in one step, with the same parameters and defaults. Why: the generated one sets each field
    through ``object.__setattr__`` (that is how a frozen dataclass keeps its fields
    read-only), 23 calls for a tensor fact, and the engine makes one for nearly every op:
    half the cost of making one. Only for fields with a plain default or none."""
    fields_ = [spec for spec in fields(cls) if spec.init]
    assert all(spec.default_factory is MISSING for spec in fields_), cls
    defaults = {f"_default_{spec.name}": spec.default for spec in fields_ if spec.default is not MISSING}
    parameters = ", ".join(spec.name if spec.default is MISSING else f"{spec.name}=_default_{spec.name}"
                           for spec in fields_)
    entries = ", ".join(f"{spec.name!r}: {spec.name}" for spec in fields_)
    namespace: dict[str, Any] = {"_set_attribute": object.__setattr__, **defaults}
    exec(f"def __init__(self, {parameters}):\n    _set_attribute(self, '__dict__', {{{entries}}})\n",  # noqa: S102
         namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", init)  # noqa: B010 - replaces the generated method (same signature)


_init_through_dict(TensorVal)


@dataclass(frozen=True)
class TupleVal(Value):
    """A tuple or list literal whose items are known (``(h, c)``, an RNN's output): exactly these
    items. A tuple of a length not known is a ``"list"`` heap object (``tuple(g for g in ...)``,
    ``(*grads, None)``; its ``extra["at_least"]`` says how many items it certainly has), or a
    tensor whose :attr:`TensorVal.parts` says how many it may have (``x.chunk(3)``)."""

    items: tuple[Value, ...]

    def join(self, other: Value) -> Value:
        if self == other:
            return self
        if isinstance(other, TupleVal) and len(other.items) == len(self.items):
            return TupleVal(tuple(a.join(b) for a, b in zip(self.items, other.items)))
        if isinstance(other, (NoneValue, Unknown)):
            items = tuple(item.join(UNKNOWN) for item in self.items)
            if type(self) is TupleVal and all(new is old for new, old in zip(items, self.items)):
                return self  # already as weak
            return TupleVal(items)
        return UNKNOWN


@dataclass(frozen=True)
class ValuesIndices(TupleVal):
    """What ``x.max(dim)``, ``x.sort()``, ``torch.topk`` return: ``(values, indices)``, also as
    ``.values`` and ``.indices``."""


@dataclass(frozen=True)
class NamedTupleVal(TupleVal):
    """An instance of a ``collections.namedtuple`` class: a tuple whose items are also read by
    field name (``saved.log_prob``)."""

    fields: tuple[str, ...] = ()

    def join(self, other: Value) -> Value:
        joined = TupleVal.join(self, other)
        if isinstance(other, NamedTupleVal) and other.fields == self.fields and type(joined) is TupleVal:
            return NamedTupleVal(joined.items, self.fields)  # records of one class on every path
        return joined

    def item(self, name: str) -> Value | None:
        """The item of field ``name`` (``None``: no such field)."""
        return self.items[self.fields.index(name)] if name in self.fields else None


@dataclass(frozen=True)
class NamedTupleClass(Value):
    """What ``collections.namedtuple(name, fields)`` returns: called, it makes a
    :class:`NamedTupleVal` of its arguments bound to the fields."""

    fields: tuple[str, ...]

    def instance(self, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """The tuple a call makes; unknown when the arguments do not fill the fields exactly
        (defaults, ``_make``, a starred argument the caller could not spread)."""
        if len(args) > len(self.fields) or not kwargs.keys() <= set(self.fields[len(args):]):
            return UNKNOWN
        items = [*args, *(kwargs[name] for name in self.fields[len(args):] if name in kwargs)]
        if len(items) != len(self.fields):
            return UNKNOWN
        return NamedTupleVal(tuple(items), self.fields)


@dataclass(frozen=True)
class HeapRef(Value):
    """A reference to a mutable object kept in the state's heap (module, optimizer, list, dict, instance)."""

    oid: int

    def join(self, other: Value) -> Value:
        return self if self == other else UNKNOWN


@dataclass(frozen=True)
class QualName(Value):
    """A name resolved through imports: ``torch``, ``torch.nn.functional.relu``, ``torch.optim.SGD``."""

    name: str


@dataclass(frozen=True)
class ImportedName(Value):
    """``name`` of the user's module ``module`` (``from losses import d_loss``), not used yet on
    this path: the module's body runs at the first use of one of its names (then the name is
    what that body bound). Why not at the import: a package's ``__init__`` often imports every
    module of the package, and a file uses a few of them."""

    module: str
    name: str


@dataclass(frozen=True)
class FunctionRef(Value):
    """A function or method defined in the analyzed file (called by inlining its body)."""

    node: ast.FunctionDef | ast.AsyncFunctionDef = field(compare=False, hash=False)
    key: int = 0  # id(node), for equality
    bound_self: Value | None = None
    #: A function defined in a function: the values of the enclosing function's names it reads,
    #: where it was defined (a hook made by ``get_activation(name)`` keeps its ``name``).
    closure: tuple[tuple[str, Value], ...] = ()


@dataclass(frozen=True)
class ClassRef(Value):
    """A class defined in the analyzed file."""

    node: ast.ClassDef = field(compare=False, hash=False)
    key: int = 0
    is_module: bool = False  # subclasses torch.nn.Module
    is_autograd_function: bool = False
    #: The values of its bases where the class statement ran (in its own module: a class
    #: imported from another file looks its methods up through the bases there).
    bases: tuple[Value, ...] | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class ContextVal(Value):
    """A grad-mode context manager: ``no_grad``, ``enable_grad``, ``inference_mode``, ``set_grad_enabled``."""

    kind: str  # "no_grad" | "enable_grad" | "inference_mode" | "set_grad_enabled"
    enabled: Tri = None


@dataclass(frozen=True)
class BoundMethod(Value):
    """``obj.method`` not yet called: the receiver and the method name."""

    receiver: Value
    name: str


@dataclass(frozen=True)
class PartialCall(Value):
    """``functools.partial(func, *args, **kwargs)``: a call of ``func`` with these leading
    arguments and keywords, made when it is called."""

    func: Value
    args: tuple[Value, ...] = ()
    kwargs: tuple[tuple[str, Value], ...] = ()


@dataclass(frozen=True)
class Callbacks(Value):
    """Functions registered on a module to run when torch calls it (forward hooks, forward
    pre-hooks, backward hooks). A join keeps every path's: a hook registered on some path may
    run; only those registered on every path (and not possibly removed by code the engine did
    not see) certainly run (``sure``)."""

    items: frozenset[Value] = frozenset()
    sure: frozenset[Value] = frozenset()

    def join(self, other: Value) -> Value:
        if isinstance(other, Callbacks):
            if self == other:
                return self
            return Callbacks(self.items | other.items, self.sure & other.sure)
        return Value.join(self, other)

    def unsure(self) -> Callbacks:
        """The same hooks, each of which may have been removed (or, joined with a path without
        the table, never registered)."""
        return Callbacks(self.items) if self.sure else self


def join_values(a: Value | None, b: Value | None) -> Value:
    """Join two possibly-missing values (a name bound on one path only). The very same value on
    both paths is its own join (every kind's ``join`` gives ``self`` for an equal value): no
    comparison of a tensor's fields for what two paths share."""
    if a is b and a is not None:
        return a
    if a is None:
        if b is None:
            return UNKNOWN
        if isinstance(b, Callbacks):
            return b.unsure()
        return b.join(UNKNOWN) if isinstance(b, (TensorVal, TupleVal)) else b
    if b is None:
        if isinstance(a, Callbacks):
            return a.unsure()
        return a.join(UNKNOWN) if isinstance(a, (TensorVal, TupleVal)) else a
    return a.join(b)


# -- heap objects --------------------------------------------------------------------


#: Records kept in :attr:`HeapObject.extra` as tuples that grow along a path: joined, they hold
#: what either path recorded (a custom Function's ``ctx``: what forward stored and saved on it).
_EXTRA_UNIONS = ("ctx_stores", "ctx_saves")
#: Set in :attr:`HeapObject.extra` when the ``__items__`` of a list are those of one path (a join
#: keeps the longer shape, or the only one known): not a count to rely on.
INEXACT_ITEMS = "items_inexact"


@dataclass
class HeapObject:
    """A mutable object: its kind and attributes. Copied on write by the state."""

    kind: str  # "module" | "optimizer" | "list" | "dict" | "object" | "params" | "scaler"
    attrs: dict[str, Value] = field(default_factory=dict)
    #: For modules: the torch class (``nn.Linear``) or the local class name.
    cls: str = ""
    class_ref: ClassRef | None = None
    #: For modules: storage ids of the parameters they own directly.
    param_storages: frozenset[int] = frozenset()
    #: For optimizers: storage ids of the parameters they update; None when unknown.
    opt_storages: frozenset[int] | None = None
    #: For modules built with an in-place flag (nn.ReLU(inplace=True)): where.
    inplace_site: ast.AST | None = None
    #: For lists: the join of every element ever stored (a summary).
    elem: Value | None = None
    site: ast.AST | None = None
    frozen: Tri = False  # requires_grad_(False) on every parameter
    #: For modules: a full backward hook is registered (``register_full_backward_hook``):
    #: True on every path, None on some (or unseen code may have removed it).
    backward_hooked: Tri = False
    extra: dict[str, Any] = field(default_factory=dict)

    def referents(self) -> list[Value]:
        """The values this object holds (attributes, the element summary, values kept in
        ``extra``), in that order: what a walk of the heap follows from it (the engine's heap
        collection, GL201's escape test)."""
        held = list(self.attrs.values())
        if self.elem is not None:
            held.append(self.elem)
        held.extend(v for v in self.extra.values() if isinstance(v, Value))
        return held

    def copy(self) -> HeapObject:
        return HeapObject(
            kind=self.kind,
            attrs=self.attrs.copy(),  # a dict that notes reads keeps noting (analysis/self_reads.py)
            cls=self.cls,
            class_ref=self.class_ref,
            param_storages=self.param_storages,
            opt_storages=self.opt_storages,
            inplace_site=self.inplace_site,
            elem=self.elem,
            site=self.site,
            frozen=self.frozen,
            backward_hooked=self.backward_hooked,
            extra=dict(self.extra),
        )

    def join(self, other: HeapObject) -> HeapObject:
        joined = self.copy()
        attrs_a, attrs_b = self.attrs, other.attrs
        # read through the base dict: an attribute dict noting what a method reads of its `self`
        # (analysis/self_reads.py) is told only the names whose values differ
        keys = set(dict.keys(attrs_a)) | set(dict.keys(attrs_b))
        if type(attrs_a) is not dict or type(attrs_b) is not dict:
            note_joined(attrs_a, attrs_b)
        for key in keys:
            a, b = dict.get(attrs_a, key), dict.get(attrs_b, key)
            if a is b:
                continue  # the copy holds it already (a value is its own join)
            if (
                key == "__items__"
                and isinstance(a, TupleVal)
                and isinstance(b, TupleVal)
                and len(a.items) != len(b.items)
            ):
                # The structure of a list built in a loop (layers of a Sequential): keep the longer shape.
                joined.attrs[key] = a if len(a.items) > len(b.items) else b
                joined.extra[INEXACT_ITEMS] = True
                continue
            if key == "__items__" and (a is None) != (b is None):
                joined.extra[INEXACT_ITEMS] = True  # the items are known on one path only
            joined.attrs[key] = join_values(a, b)
        if other.extra.get(INEXACT_ITEMS):
            joined.extra[INEXACT_ITEMS] = True
        if self.elem is None or other.elem is None:
            # An empty container has no elements: what may be inside is what the other side holds.
            joined.elem = self.elem if other.elem is None else other.elem
        else:
            joined.elem = self.elem.join(other.elem)
        for key in _EXTRA_UNIONS:
            mine, theirs = self.extra.get(key), other.extra.get(key)
            if mine is not None and theirs is not None and mine != theirs:
                joined.extra[key] = (*mine, *(item for item in theirs if item not in mine))
        joined.frozen = join_tri(self.frozen, other.frozen)
        joined.backward_hooked = join_tri(self.backward_hooked, other.backward_hooked)
        if self.opt_storages != other.opt_storages:
            if self.opt_storages is None or other.opt_storages is None:
                joined.opt_storages = None
            else:
                joined.opt_storages = self.opt_storages | other.opt_storages
        return joined
