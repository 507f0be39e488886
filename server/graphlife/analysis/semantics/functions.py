"""The custom ``torch.autograd.Function`` classes of a file: their methods, ctx parameters,
inputs, saved tensors and the calls of their ``apply``.

Why here: six rules (GL401-GL406) read these classes, and the interpreter decides
which classes are Functions too. A class is one when a base means
``torch.autograd.Function`` where it is written (:mod:`.names`), however imported,
or is itself such a class of the same file. Its methods are its own and those of
its local Function bases (nearest first).

The ctx of a method: ``forward(ctx, ...)`` and ``backward(ctx, ...)`` take it first
(static methods); with ``setup_context(ctx, inputs, output)`` forward takes only its
inputs. ``Fn.apply(...)`` (or a name bound to ``Fn.apply``) runs forward.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from graphlife.analysis.semantics.names import Names, scope_nodes

#: Qualified names of the base classes that make a custom autograd Function.
FUNCTION_BASES = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
    }
)
#: ``torch.utils.checkpoint``'s functions (GL405), by qualified name.
CHECKPOINT_FUNCTIONS = frozenset({"torch.utils.checkpoint.checkpoint"})
CHECKPOINT_SEQUENTIAL = frozenset({"torch.utils.checkpoint.checkpoint_sequential"})

#: A method of a class: ``def`` or ``async def``.
Method = ast.FunctionDef | ast.AsyncFunctionDef

#: What a ctx offers; a parameter used this way is the method's ctx.
_CTX_API = frozenset(
    "save_for_backward saved_tensors needs_input_grad mark_dirty mark_non_differentiable set_materialize_grads "
    "save_for_forward".split()
)


# --------------------------------------------------------------------------- walking one scope


def walk_body(method: Method) -> Iterator[ast.AST]:
    """Every node of a function's body, not descending into nested functions, lambdas or classes."""
    return scope_nodes(method.body)


def returns(method: Method) -> list[ast.Return]:
    """The ``return`` statements of a function (not of nested ones)."""
    return [node for node in walk_body(method) if isinstance(node, ast.Return)]


# --------------------------------------------------------------------------- methods


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def is_static(method: Method) -> bool:
    """Decorated ``@staticmethod``."""
    return any(_decorator_name(d) == "staticmethod" for d in method.decorator_list)


def is_classmethod(method: Method) -> bool:
    """Decorated ``@classmethod``."""
    return any(_decorator_name(d) == "classmethod" for d in method.decorator_list)


def positional_params(method: Method) -> list[ast.arg]:
    """The positional parameters, ``self`` / ``cls`` included."""
    return [*method.args.posonlyargs, *method.args.args]


def call_params(method: Method) -> list[ast.arg]:
    """The parameters a call through the class fills: all for static methods, after ``cls``
    for class methods (and all for plain methods, called through ``apply`` with the ctx first)."""
    params = positional_params(method)
    return params[1:] if is_classmethod(method) else params


def ctx_name(method: Method) -> str | None:
    """The name of the ctx parameter of a static forward/backward/setup_context (first parameter)."""
    params = call_params(method)
    return params[0].arg if params else None


def used_as_ctx(method: Method, name: str) -> bool:
    """``name`` is used like a ctx in the method: ctx API or attribute assignment."""
    for node in ast.walk(method):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == name
            and (node.attr in _CTX_API or isinstance(node.ctx, ast.Store))
        ):
            return True
    return False


def takes_self_before_ctx(method: Method) -> bool:
    """A non-static ``def forward(self, ctx, x)``: apply would bind the ctx to the first parameter."""
    if is_static(method) or is_classmethod(method):
        return False
    params = positional_params(method)
    return len(params) >= 2 and used_as_ctx(method, params[1].arg) and not used_as_ctx(method, params[0].arg)


def ctx_attribute(node: ast.AST, ctx: str | None) -> str | None:
    """``attr`` when ``node`` is ``<ctx>.attr``."""
    if ctx and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == ctx:
        return node.attr
    return None


def save_for_backward_calls(method: Method, ctx: str | None) -> list[ast.Call]:
    """The ``<ctx>.save_for_backward(...)`` calls of a method."""
    return [
        node
        for node in walk_body(method)
        if isinstance(node, ast.Call) and ctx_attribute(node.func, ctx) == "save_for_backward"
    ]


def saved_unpacking(backward: Method) -> tuple[ast.Assign | None, list[str]] | None:
    """How backward reads ``ctx.saved_tensors``.

    ``(None, [])`` when it does not read them; ``(stmt, names)`` for the one
    statement ``a, b = ctx.saved_tensors`` of the body's top level; ``None``
    for any other shape (indexing, several reads), which fixes leave alone.
    """
    ctx = ctx_name(backward)
    reads = [n for n in walk_body(backward) if ctx_attribute(n, ctx) == "saved_tensors"]
    if not reads:
        return None, []
    if len(reads) != 1:
        return None
    for stmt in backward.body:
        if (
            isinstance(stmt, ast.Assign)
            and stmt.value is reads[0]
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], (ast.Tuple, ast.List))
        ):
            names = [e.id for e in stmt.targets[0].elts if isinstance(e, ast.Name)]
            if len(names) == len(stmt.targets[0].elts):
                return stmt, names
    return None


# --------------------------------------------------------------------------- Function classes


@dataclass
class FunctionClass:
    """A custom autograd Function of this file, with its methods (own and inherited from local bases)."""

    node: ast.ClassDef
    methods: dict[str, Method] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def forward(self) -> Method | None:
        return self.methods.get("forward")

    @property
    def backward(self) -> Method | None:
        return self.methods.get("backward")

    @property
    def setup_context(self) -> Method | None:
        return self.methods.get("setup_context")

    def forward_takes_ctx(self) -> bool:
        """``forward(ctx, ...)``; ``False`` in the ``setup_context`` style, where forward gets only inputs."""
        return self.setup_context is None

    def ctx_of(self, method: Method | None) -> str | None:
        """The ctx parameter name of forward (unless setup_context style), setup_context or backward."""
        if method is None or (method is self.forward and not self.forward_takes_ctx()):
            return None
        return ctx_name(method)

    def forward_inputs(self) -> list[ast.arg]:
        """forward's input parameters (after ctx, unless setup_context style)."""
        if self.forward is None:
            return []
        params = call_params(self.forward)
        return params[1:] if self.forward_takes_ctx() else params

    def ctx_attributes_used(self) -> set[str]:
        """Every ``ctx.<name>`` read or written in forward, setup_context and backward."""
        used: set[str] = set()
        for method in (self.forward, self.setup_context, self.backward):
            name = self.ctx_of(method)
            if name is None or method is None:
                continue
            for node in walk_body(method):
                attr = ctx_attribute(node, name)
                if attr:
                    used.add(attr)
        return used


@dataclass(frozen=True)
class ApplyCall:
    """A call that runs a Function's forward: ``Fn.apply(...)`` or a name bound to ``Fn.apply``."""

    call: ast.Call
    fn: FunctionClass

    def argument_count(self) -> int | None:
        """How many inputs the call passes (``None`` with ``*args`` / ``**kwargs``)."""
        if any(isinstance(a, ast.Starred) for a in self.call.args) or any(k.arg is None for k in self.call.keywords):
            return None
        return len(self.call.args) + len(self.call.keywords)

    def positional(self, index: int) -> ast.expr | None:
        """The ``index``-th positional argument, when no ``*args`` comes before it."""
        args = self.call.args
        if any(isinstance(arg, ast.Starred) for arg in args[: index + 1]):
            return None
        return args[index] if index < len(args) else None


class FunctionModel:
    """Every custom Function class of a file and every call of their ``apply``."""

    def __init__(self, names: Names, classes: Sequence[ast.ClassDef], assignments: Sequence[ast.Assign],
                 calls: Callable[[], Sequence[ast.Call]]) -> None:
        """``calls``: the file's calls in source order, asked for only when the file defines a
        custom Function (most files do not, and the language server makes this model at each
        keystroke: sorting every call of a large file for nothing)."""
        self.classes: list[FunctionClass] = _function_classes(names, classes)
        self.by_name: dict[str, FunctionClass] = {fn.name: fn for fn in self.classes}
        self.calls: list[ApplyCall] = _apply_calls(self.by_name, assignments, calls()) if self.classes else []

    def of_class(self, node: ast.ClassDef) -> FunctionClass | None:
        """The Function class defined by ``node`` (``None``: not a custom Function)."""
        return next((fn for fn in self.classes if fn.node is node), None)

    def calls_of(self, fn: FunctionClass) -> list[ApplyCall]:
        """The ``apply`` calls that run ``fn``."""
        return [call for call in self.calls if call.fn is fn]


def _function_classes(names: Names, classes: Sequence[ast.ClassDef]) -> list[FunctionClass]:
    """Every class of the file that subclasses ``torch.autograd.Function`` (directly or via local classes)."""
    by_name: dict[str, list[ast.ClassDef]] = {}
    for node in classes:
        by_name.setdefault(node.name, []).append(node)
    found: dict[int, FunctionClass] = {}
    changed = True
    while changed:
        changed = False
        for node in classes:
            if id(node) in found:
                continue
            for base in node.bases:
                if names.qualified_name(base) in FUNCTION_BASES or (
                    isinstance(base, ast.Name)
                    and any(id(local) in found for local in by_name.get(base.id, ()) if local is not node)
                ):
                    found[id(node)] = FunctionClass(node)
                    changed = True
                    break
    for node in classes:
        fn_class = found.get(id(node))
        if fn_class is None:
            continue
        for klass in _local_mro(node, by_name, found):
            for stmt in klass.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    fn_class.methods.setdefault(stmt.name, stmt)
    return [found[id(node)] for node in classes if id(node) in found]


def _local_mro(
    node: ast.ClassDef, by_name: dict[str, list[ast.ClassDef]], found: dict[int, FunctionClass]
) -> Iterator[ast.ClassDef]:
    """The class and its local Function bases, breadth first (own methods win)."""
    seen: set[int] = set()
    queue = [node]
    while queue:
        current = queue.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for base in current.bases:
            if isinstance(base, ast.Name):
                queue.extend(local for local in by_name.get(base.id, ()) if id(local) in found and local is not current)


def target_key(node: ast.AST) -> str | None:
    """``name`` or ``self.attr`` as a string key, else ``None``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _apply_calls(
    by_name: dict[str, FunctionClass], assignments: Sequence[ast.Assign], calls: Sequence[ast.Call]
) -> list[ApplyCall]:
    """Every call of a Function's ``apply`` in the file, direct or through ``name = Fn.apply``."""

    def apply_target(node: ast.AST) -> FunctionClass | None:
        if isinstance(node, ast.Attribute) and node.attr == "apply" and isinstance(node.value, ast.Name):
            return by_name.get(node.value.id)
        return None

    bound: dict[str, FunctionClass] = {}
    for node in assignments:
        if (target := apply_target(node.value)) is not None:
            for name in node.targets:
                key = target_key(name)
                if key:
                    bound[key] = target
    found = []
    for call in calls:
        fn = apply_target(call.func)
        if fn is None:
            key = target_key(call.func)
            fn = bound.get(key) if key else None
        if fn is not None:
            found.append(ApplyCall(call, fn))
    return found
