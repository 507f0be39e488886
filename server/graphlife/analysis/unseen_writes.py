"""Places that code the engine did not run may have written, and what is known of them after.

Why: an error must hold on every path, and some paths run code the engine never
follows at that point. A method analyzed alone starts from what ``__init__`` made,
but any other method (or a hook, or code of another object) may have assigned the
attribute since: ``self.out = torch.zeros(2)`` in ``__init__`` and
``self.out = x * w`` in ``set()`` make ``self.out.sum().backward()`` in ``run()``
fine under torch, though ``__init__`` alone would say it has no graph. A call into a
library, or a hook the engine cannot run, may write the objects it is given or
reaches. What such a write may leave is *weakened*: a tensor keeps what it may be
(its graph, its storage) but loses every certainty (whether it requires grad, that
it is a tensor at all); anything else becomes unknown. Modules, optimizers and
gradient scalers keep their identity (code that is not the user's rarely swaps a
model for another, and a model that became unknown would silence every rule of
the training loop around it); their own attributes are weakened like any object's.

The syntactic part (:func:`attribute_writes`) says which attribute names code
outside ``__init__`` assigns anywhere in a file; the value part
(:func:`weakened`, :func:`weaken_object`) is what the engine applies.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass

from graphlife.analysis.state import State
from graphlife.analysis.tree_index import TreeIndex, child_nodes, index_of
from graphlife.analysis.values import UNKNOWN, Callbacks, HeapObject, HeapRef, TensorVal, TupleVal, Value

#: Kinds of heap objects whose identity survives a write the engine did not see.
STRUCTURAL_KINDS = frozenset({"module", "optimizer", "scaler", "params"})

#: Methods of Python's containers that change their content.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard", "popitem",
    "sort", "reverse", "appendleft", "extendleft", "popleft", "__setitem__", "__delitem__",
})

#: How deep a weakening follows objects held by objects.
MAX_DEPTH = 4


@dataclass(frozen=True)
class AttributeWrites:
    """The attributes that code of a file assigns outside the ``__init__`` that builds an object."""

    #: Attribute names assigned (``x.name = ...``, ``x.name += ...``, ``del x.name``).
    names: frozenset[str] = frozenset()
    #: Attribute names whose content changes (``x.name[k] = v``, ``x.name.append(v)``).
    contents: frozenset[str] = frozenset()
    #: Some write names no attribute (``setattr(x, name, v)``, ``x.__dict__``): every one may change.
    any_name: bool = False

    def touches(self, name: str) -> bool:
        return self.any_name or name in self.names


#: The attribute of a statement that keeps what :func:`_statement_writes` found in it.
_WRITES = "_graphlife_attribute_writes"


def attribute_write_names(statements: list[ast.stmt]) -> tuple[frozenset[str], frozenset[str], bool]:
    """What :func:`attribute_writes` finds in these statements, as (names, contents, any name).

    Each statement's writes are found once and kept on it, and a class's are those of its
    statements: the language server keeps the statements of unchanged code (and of the unchanged
    methods of an edited class) between versions, so after an edit only the changed code is
    walked. The unit cache keys the methods analyzed alone on the file's writes (a write added
    anywhere changes what they start from)."""
    names: set[str] = set()
    contents: set[str] = set()
    any_name = False
    for stmt in statements:
        found = _statement_writes(stmt)
        names |= found[0]
        contents |= found[1]
        any_name = any_name or found[2]
    return frozenset(names), frozenset(contents), any_name


def _statement_writes(stmt: ast.stmt) -> tuple[frozenset[str], frozenset[str], bool]:
    found: tuple[frozenset[str], frozenset[str], bool] | None = getattr(stmt, _WRITES, None)
    if found is not None:
        return found
    collector = _WriteCollector()
    if isinstance(stmt, ast.ClassDef):
        # The same walk as from the class itself (what it holds is visited as another object's
        # code, outside any `__init__`), one body statement at a time.
        for expr in (*stmt.decorator_list, *stmt.bases, *stmt.keywords):
            collector.visit(expr)
        body = attribute_write_names(stmt.body)
        collector.names |= body[0]
        collector.contents |= body[1]
        collector.any_name = collector.any_name or body[2]
    else:
        collector.visit(stmt)
    found = frozenset(collector.names), frozenset(collector.contents), collector.any_name
    setattr(stmt, _WRITES, found)  # a cache hung on the node (the same code gives the same answer)
    return found


def attribute_writes(tree: ast.Module) -> AttributeWrites:
    """Every attribute write of ``tree`` but those that build a new object: stores on the first
    parameter of an ``__init__`` made directly in its body (not in a function or lambda defined
    there, which may run any time later: a hook).

    In a full check, the writes are read from the nodes the tree index's walk filed
    (:func:`_writes_from_index`) instead of a walk of every node of the file."""
    index = index_of(tree)
    if index is not None and index.whole_file and not all(_WRITES in stmt.__dict__ for stmt in tree.body):
        _writes_from_index(tree, index)
    return AttributeWrites(*attribute_write_names(tree.body))


#: Where a node is, as :class:`_WriteCollector` would have reached it from the top-level
#: statement it is in: the statement whose writes it counts in (a top-level statement, or one of the
#: body of a class whose writes are its statements'), the ``building`` parameter it is visited with,
#: whether it is visited at all (an annotation of a function is not), and what the node is: 1 a class
#: whose statements count apart, 2 the parameters of a ``def``, 0 anything else.
_Place = tuple[ast.AST | None, str | None, bool, int]
_TOP: _Place = (None, None, True, 0)


def _place(node: ast.AST, parents: dict[int, ast.AST], places: dict[int, _Place]) -> _Place:
    """Where ``node`` is (:data:`_Place`), from its ancestors' places (kept in ``places``)."""
    path: list[ast.AST] = []
    current = node
    known: _Place | None = None
    while True:
        known = places.get(id(current))
        if known is not None:
            break
        parent = parents.get(id(current))
        if parent is None or parent.__class__ is ast.Module:
            known = (current, None, True, 1 if current.__class__ is ast.ClassDef else 0)
            places[id(current)] = known
            break
        path.append(current)
        current = parent
    for child in reversed(path):
        unit, building, visible, what = known
        kind = current.__class__
        if kind is ast.ClassDef:
            if what == 1 and isinstance(child, ast.stmt):
                known = (child, None, visible, 1 if child.__class__ is ast.ClassDef else 0)
            else:
                known = (unit, None, visible, 0)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            assert isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.stmt):  # its body
                params = current.args.posonlyargs + current.args.args
                inner = params[0].arg if current.name == "__init__" and params else None
                known = (unit, inner, visible, 0)
            elif child is current.args:
                known = (unit, None, visible, 2)
            else:  # a decorator, or the return annotation (not visited)
                known = (unit, None, visible and child is not current.returns, 0)
        elif kind is ast.Lambda:
            known = (unit, None, visible, 0)
        elif what == 2:  # the parameters of a def: their defaults are visited, not their annotations
            known = (unit, None, visible and child.__class__ is not ast.arg, 0)
        else:
            known = (unit, building, visible, 0)
        places[id(child)] = known
        current = child
    return known


def _writes_from_index(tree: ast.Module, index: TreeIndex) -> None:
    """Keep on each statement what :func:`_statement_writes` would find in it, from the writes
    the tree index filed (:attr:`TreeIndex.written`) and its calls: the walk of the whole file
    that finding them took cost about as much as the index's own walk."""
    parents = index.parents
    places: dict[int, _Place] = {}
    found: dict[int, tuple[set[str], set[str], list[bool]]] = {}

    def note(unit: ast.AST | None) -> tuple[set[str], set[str], list[bool]]:
        entry = found.get(id(unit))
        if entry is None:
            entry = found[id(unit)] = (set(), set(), [False])
        return entry

    load = ast.Load
    for node in index.written:
        if node.__class__ is ast.Subscript:
            assert isinstance(node, ast.Subscript)
            if not isinstance(node.value, ast.Attribute):
                continue
            unit, _, visible, _ = _place(node, parents, places)
            if visible:
                note(unit)[1].add(node.value.attr)
            continue
        assert isinstance(node, ast.Attribute)
        unit, building, visible, _ = _place(node, parents, places)
        if not visible:
            continue
        if node.ctx.__class__ is load:
            note(unit)[2][0] = True  # `obj.__dict__` loaded (only those are filed)
            continue
        if not (building is not None and isinstance(node.value, ast.Name) and node.value.id == building):
            entry = note(unit)
            entry[0].add(node.attr)
            if node.attr == "__dict__":
                entry[2][0] = True
    for call in index.by_kind[ast.Call]:
        assert isinstance(call, ast.Call)
        func = call.func
        if isinstance(func, ast.Name):
            if func.id not in ("setattr", "delattr", "vars"):
                continue
            unit, _, visible, _ = _place(call, parents, places)
            if visible:
                note(unit)[2][0] = True
        elif (isinstance(func, ast.Attribute) and func.attr in MUTATING_METHODS
              and isinstance(func.value, ast.Attribute)):
            unit, _, visible, _ = _place(call, parents, places)
            if visible:
                note(unit)[1].add(func.value.attr)
    _keep_writes(tree.body, found)


def _keep_writes(statements: list[ast.stmt], found: dict[int, tuple[set[str], set[str], list[bool]]]
                 ) -> tuple[frozenset[str], frozenset[str], bool]:
    """Hang on each statement (and on those of a class's body) what ``found`` says it writes,
    as :func:`_statement_writes` would; the union of the statements'."""
    names: set[str] = set()
    contents: set[str] = set()
    any_name = False
    for stmt in statements:
        kept: tuple[frozenset[str], frozenset[str], bool] | None = stmt.__dict__.get(_WRITES)
        if kept is None:
            own = found.get(id(stmt))
            own_names, own_contents, own_any = (set(own[0]), set(own[1]), own[2][0]) if own else (set(), set(), False)
            if isinstance(stmt, ast.ClassDef):
                body = _keep_writes(stmt.body, found)
                own_names |= body[0]
                own_contents |= body[1]
                own_any = own_any or body[2]
            kept = frozenset(own_names), frozenset(own_contents), own_any
            setattr(stmt, _WRITES, kept)
        names |= kept[0]
        contents |= kept[1]
        any_name = any_name or kept[2]
    return frozenset(names), frozenset(contents), any_name


class _WriteCollector:
    """One walk of the code (iterative: a check of a large file walks every node once, and an
    ``ast.NodeVisitor`` dispatch per node cost a tenth of the whole analysis there)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.contents: set[str] = set()
        self.any_name = False

    def visit(self, root: ast.AST) -> None:
        # Each entry: a node, and the first parameter of the `__init__` whose body it is directly in.
        stack: list[tuple[ast.AST, str | None]] = [(root, None)]
        pop, push = stack.pop, stack.append
        function_kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
        while stack:
            node, building = pop()
            kind = type(node)
            if kind in function_kinds:
                assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                params = node.args.posonlyargs + node.args.args
                inner = params[0].arg if node.name == "__init__" and params else None
                for stmt in node.body:
                    push((stmt, inner))
                for expr in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
                    if expr is not None:
                        push((expr, None))
                continue
            if kind is ast.Lambda or kind is ast.ClassDef:
                building = None  # runs later (a hook), or is another object's code
            elif kind is ast.Attribute:
                assert isinstance(node, ast.Attribute)
                self._attribute(node, building)
            elif kind is ast.Subscript:
                assert isinstance(node, ast.Subscript)
                if isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(node.value, ast.Attribute):
                    self.contents.add(node.value.attr)
            elif kind is ast.Call:
                assert isinstance(node, ast.Call)
                self._call(node)
            for child in child_nodes(node):
                push((child, building))

    def _attribute(self, node: ast.Attribute, building: str | None) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)) and not (
                building is not None and isinstance(node.value, ast.Name) and node.value.id == building):
            self.names.add(node.attr)
            if node.attr == "__dict__":
                self.any_name = True
        if isinstance(node.ctx, ast.Load) and node.attr == "__dict__":
            self.any_name = True  # `obj.__dict__.update(...)`, `obj.__dict__[k] = v`

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr", "vars"):
            self.any_name = True
        elif (isinstance(func, ast.Attribute) and func.attr in MUTATING_METHODS
              and isinstance(func.value, ast.Attribute)):
            self.contents.add(func.value.attr)


def foreign_attribute_writes(tree: ast.AST, classes: frozenset[str]) -> AttributeWrites:
    """The attribute writes of another file of the project that may reach instances of the
    checked file's ``classes``: as :func:`attribute_writes`, but a method of a class that does
    not derive from one of them writes its own ``self``, not theirs, and is left out. A class
    derives from one when a base is spelled with its name (``Probe``, ``models.Probe``) or
    is not a plain name (a call, a subscript: it may be anything)."""
    collector = _ForeignWriteCollector(classes)
    collector.visit(tree)
    return AttributeWrites(frozenset(collector.names), frozenset(collector.contents), collector.any_name)


class _ForeignWriteCollector(_WriteCollector):
    """:class:`_WriteCollector` where ``building`` is the ``self`` of a method of an unrelated class."""

    def __init__(self, classes: frozenset[str]) -> None:
        super().__init__()
        self.classes = classes

    def visit(self, root: ast.AST) -> None:
        stack: list[tuple[ast.AST, str | None]] = [(root, None)]
        pop, push = stack.pop, stack.append
        while stack:
            node, own = pop()
            kind = type(node)
            if kind is ast.ClassDef:
                assert isinstance(node, ast.ClassDef)
                related = any(self._may_be_one_of(base) for base in node.bases)
                for item in node.body:
                    own_self = None if related else _self_parameter(item)
                    if own_self is None:
                        push((item, None))
                        continue
                    assert isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for part in (*item.body, *item.decorator_list, *item.args.defaults, *item.args.kw_defaults):
                        if part is not None:
                            push((part, own_self))  # the method's body, its `self` bound
                for expr in (*node.bases, *(keyword.value for keyword in node.keywords), *node.decorator_list):
                    push((expr, None))
                continue
            if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda) and own is not None:
                assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                arguments = node.args
                bound = {arg.arg for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
                if own in bound:
                    own = None  # a nested function's own parameter of the same name: not the method's `self`
            if kind is ast.Attribute:
                assert isinstance(node, ast.Attribute)
                self._attribute(node, own)
            elif kind is ast.Subscript:
                assert isinstance(node, ast.Subscript)
                if (isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(node.value, ast.Attribute)
                        and not _through(node.value, own)):
                    self.contents.add(node.value.attr)
            elif kind is ast.Call:
                assert isinstance(node, ast.Call)
                func = node.func
                if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
                        and _through(func.value, own)):
                    self._call(node)
            for child in child_nodes(node):
                push((child, own))

    def _call(self, node: ast.Call) -> None:
        """``setattr(x, "name", v)`` writes one name (code of another file is not read for its
        other setattr: a name that is not a constant may be any)."""
        func = node.func
        if (isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            self.names.add(node.args[1].value)
            return
        super()._call(node)

    def _may_be_one_of(self, base: ast.expr) -> bool:
        if isinstance(base, ast.Name):
            return base.id in self.classes
        if isinstance(base, ast.Attribute):
            return base.attr in self.classes
        return True


def _self_parameter(item: ast.stmt) -> str | None:
    """The first parameter of a method (``self``; ``cls`` of a class method), ``None`` for a
    static method or anything else in a class body."""
    if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if any(isinstance(decorator, ast.Name) and decorator.id == "staticmethod" for decorator in item.decorator_list):
        return None
    params = item.args.posonlyargs + item.args.args
    return params[0].arg if params else None


def _through(attribute: ast.Attribute, own: str | None) -> bool:
    return own is not None and isinstance(attribute.value, ast.Name) and attribute.value.id == own


# -- values ---------------------------------------------------------------------------------------------


def weakened(value: Value) -> Value:
    """What a place that held ``value`` may hold after a write the engine did not see (a
    module's hooks: those it had may have been removed; those unseen code added escaped)."""
    if isinstance(value, (TensorVal, TupleVal)):
        return value.join(UNKNOWN)
    if isinstance(value, Callbacks):
        return value.unsure()
    return UNKNOWN


def weaken_place(state: State, value: Value, reads: HeapReads | None = None) -> Value:
    """The new value of a place holding ``value`` that unseen code may have assigned: objects
    that keep their identity (:data:`STRUCTURAL_KINDS`) stay, with their own places weakened.
    ``reads``: see :func:`weaken_object`."""
    if isinstance(value, HeapRef):
        obj = state.heap.get(value.oid)
        if reads is not None:
            reads.setdefault(value.oid, obj)
        if obj is not None and obj.kind in STRUCTURAL_KINDS:
            weaken_object(state, value.oid, reads=reads)
            return value
    return weakened(value)


#: The heap objects a weakening read, each as it was when read (``None``: not in the heap).
HeapReads = dict[int, HeapObject | None]


def weaken_object(state: State, oid: int, names: AttributeWrites | None = None, depth: int = 0,
                  seen: set[int] | None = None, *, reads: HeapReads | None = None) -> None:
    """Weaken what object ``oid`` holds, and what the objects it holds hold (bounded): every
    attribute (or only those ``names`` says are written, and the contents of those it says
    change), its element summary and known items. Modules keep their children and parameters
    (their identity); what else they hold is weakened. An object whose content is already as
    weak is left as it is (the same object: a call that changed nothing stays pure for the memo).

    ``reads`` (when given) gets every heap object the weakening looked at, as it was when first
    read: what it did is a function of those objects alone (:mod:`graphlife.analysis.escaped_runs`)."""
    seen = set() if seen is None else seen
    if depth > MAX_DEPTH or oid in seen:
        return
    heap = state.heap
    obj = heap.get(oid)
    if reads is not None:
        reads.setdefault(oid, obj)
    if obj is None:
        return
    seen.add(oid)
    structural = obj.kind in STRUCTURAL_KINDS
    changed: dict[str, Value | None] = {}
    for name, value in _attributes_to_visit(obj.attrs, names):
        if name == "__children__" and structural:
            continue
        if names is not None and not names.touches(name):
            if name in names.contents and isinstance(value, HeapRef):
                weaken_object(state, value.oid, None, depth + 1, seen, reads=reads)
            continue
        if isinstance(value, HeapRef):
            held = heap.get(value.oid)
            if reads is not None:
                reads.setdefault(value.oid, held)
            if held is not None and held.kind in STRUCTURAL_KINDS:
                weaken_object(state, value.oid, None, depth + 1, seen, reads=reads)
                continue
        if structural and isinstance(value, TensorVal) and value.is_param:
            continue  # a module's parameters are its own (replacing one is a model surgery we do not see)
        if name == "__items__":
            changed[name] = None
            continue
        if isinstance(value, HeapRef) and names is None:
            weaken_object(state, value.oid, None, depth + 1, seen, reads=reads)
            continue  # the object stays (its identity); what it holds is weakened
        new = weakened(value)
        if new != value or type(new) is not type(value):
            changed[name] = new
    element = obj.elem if names is None else None
    new_element: Value | None = element
    if isinstance(element, HeapRef):
        weaken_object(state, element.oid, None, depth + 1, seen, reads=reads)
    elif element is not None:
        new_element = weakened(element)
    # Unseen code given the whole module may remove a backward hook (or register one).
    unhook = names is None and obj.backward_hooked is not None and obj.kind == "module" and obj.backward_hooked
    if not changed and not unhook and (new_element == element and type(new_element) is type(element)):
        return
    writable = state.heap_write(oid)
    if unhook:
        writable.backward_hooked = None
    for name, new_value in changed.items():
        if new_value is None:
            del writable.attrs[name]
        else:
            writable.attrs[name] = new_value
    if names is None:
        writable.elem = new_element


def _attributes_to_visit(attrs: dict[str, Value], names: AttributeWrites | None) -> Iterable[tuple[str, Value]]:
    """The attributes :func:`weaken_object` may change or follow, in the object's order: all of
    them, or only those ``names`` says are written or have their content changed. An escaped
    hook that writes one attribute of a large object (a training engine's ``self``, hundreds of
    attributes) is weakened at every call the engine cannot see into: the object's other
    attributes are not looked at one by one then."""
    if names is None or names.any_name:
        return attrs.items()  # not changed while it is walked: the object is written after
    wanted = names.names | names.contents
    present = [name for name in wanted if name in attrs]
    if len(present) <= 1:
        return [(name, attrs[name]) for name in present]
    # looked up one by one in the object's order: an attribute dict noting what a method reads
    # of its `self` (analysis/self_reads.py) notes these names, not the whole dict
    return [(name, attrs[name]) for name in dict.keys(attrs) if name in wanted]


# -- what a function may write when it runs where the engine cannot follow it ---------------------------


@dataclass(frozen=True)
class RootWrites:
    """What a function writes through one name it reaches (its ``self``, a name of an enclosing
    scope or of the module): attributes assigned, attributes whose content changes, or the
    object as a whole (its items, or anything when it is handed to other code)."""

    names: frozenset[str] = frozenset()
    contents: frozenset[str] = frozenset()
    whole: bool = False

    @functools.cached_property
    def as_attribute_writes(self) -> AttributeWrites:
        """Made once per function's root: asked again at every call where the function may run unseen."""
        return AttributeWrites(self.names, self.contents, False)


@dataclass(frozen=True)
class CallableEffects:
    """The places a function (and the functions defined in it) may write, by the name it reaches
    them through; and the module names it rebinds (``global``)."""

    roots: dict[str, RootWrites]
    globals: frozenset[str]


def function_effects(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> CallableEffects:
    """The writes of ``node``'s body through names it does not bind itself, and through its first
    parameter (``self`` of a bound method). Cached on the node (the same code gives the same answer)."""
    cached: CallableEffects | None = getattr(node, "_graphlife_effects", None)
    if cached is not None:
        return cached
    params = node.args.posonlyargs + node.args.args
    collector = _EffectCollector()
    body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    for stmt in body:
        collector.visit(stmt)
    local = collector.bound - collector.declared_global - collector.declared_nonlocal
    local |= {p.arg for p in [*params[1:], *node.args.kwonlyargs]}
    if node.args.vararg:
        local.add(node.args.vararg.arg)
    if node.args.kwarg:
        local.add(node.args.kwarg.arg)
    roots = {
        name: RootWrites(frozenset(collector.names.get(name, ())), frozenset(collector.contents.get(name, ())),
                         name in collector.whole)
        for name in {*collector.names, *collector.contents, *collector.whole} - local
    }
    effects = CallableEffects(roots, frozenset(collector.declared_global & collector.bound))
    setattr(node, "_graphlife_effects", effects)  # noqa: B010 - a cache hung on the node
    return effects


def _root_chain(expr: ast.expr) -> tuple[str, list[str]] | None:
    """``a.b.c`` -> ("a", ["b", "c"]); subscripts are passed through (``a.b[0].c`` -> ("a", ["b"]))."""
    attrs: list[str] = []
    while True:
        if isinstance(expr, ast.Attribute):
            attrs.insert(0, expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Subscript):
            attrs.clear()  # what the subscript reaches is inside the object before it
            expr = expr.value
        elif isinstance(expr, ast.Name):
            return expr.id, attrs
        else:
            return None


class _EffectCollector:
    """One iterative walk of a function's body (every node, nested functions and lambdas
    included): an ``ast.NodeVisitor``'s dispatch per node was most of the cost of reading the
    effects of each function a large file inlines."""

    def __init__(self) -> None:
        self.names: dict[str, set[str]] = {}
        self.contents: dict[str, set[str]] = {}
        self.whole: set[str] = set()
        self.bound: set[str] = set()
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()

    def visit(self, root: ast.AST) -> None:
        stack = [root]
        pop, extend = stack.pop, stack.extend
        while stack:
            node = pop()
            kind = type(node)
            if kind is ast.Name:
                assert isinstance(node, ast.Name)
                if isinstance(node.ctx, (ast.Store, ast.Del)):
                    self.bound.add(node.id)
                continue
            if kind is ast.Attribute:
                assert isinstance(node, ast.Attribute)
                if isinstance(node.ctx, (ast.Store, ast.Del)):
                    self._write(node, whole_item=False)
            elif kind is ast.Subscript:
                assert isinstance(node, ast.Subscript)
                if isinstance(node.ctx, (ast.Store, ast.Del)):
                    self._write(node, whole_item=True)
            elif kind is ast.Call:
                assert isinstance(node, ast.Call)
                self._call(node)
            elif kind is ast.Global:
                assert isinstance(node, ast.Global)
                self.declared_global.update(node.names)
            elif kind is ast.Nonlocal:
                assert isinstance(node, ast.Nonlocal)
                self.declared_nonlocal.update(node.names)
                self.whole.update(node.names)  # a rebinding in the enclosing scope: what it held may change
            extend(child_nodes(node))

    def _write(self, target: ast.expr, whole_item: bool) -> None:
        chain = _root_chain(target)
        if chain is None:
            return
        root, attrs = chain
        if not attrs:
            if whole_item:
                self.whole.add(root)
            return
        if len(attrs) == 1 and isinstance(target, ast.Attribute):
            self.names.setdefault(root, set()).add(attrs[0])
        else:
            self.contents.setdefault(root, set()).add(attrs[0])

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            chain = _root_chain(func.value)
            if chain is not None:
                root, attrs = chain
                if func.attr in MUTATING_METHODS:
                    if attrs:
                        self.contents.setdefault(root, set()).add(attrs[0])
                    else:
                        self.whole.add(root)
                elif not attrs:
                    self.whole.add(root)  # `self.helper(...)`: a method of the object may write any of it
                else:
                    self.contents.setdefault(root, set()).add(attrs[0])
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            chain = _root_chain(arg.value if isinstance(arg, ast.Starred) else arg)
            if chain is not None:
                root, attrs = chain
                if attrs:
                    self.contents.setdefault(root, set()).add(attrs[0])
                else:
                    self.whole.add(root)  # handed to other code, which may write it
