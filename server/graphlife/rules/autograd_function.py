"""Shared by the GL4xx rules: custom ``torch.autograd.Function`` classes and ``checkpoint`` calls.

Syntactic only (the rules run from ``check_module``), but never by spelling:
names are resolved through the file's imports and simple aliases
(``import torch.autograd as ag``, ``from torch.autograd import Function as F``,
``Fn = torch.autograd.Function``), and a class counts as a custom Function when
one of its bases resolves to ``torch.autograd.Function`` or is itself such a
class of the same file.

One pass over the tree (:class:`Index`) and the shared :class:`ModuleAnalysis`
(aliases, Function classes, ``apply`` calls) are computed once per file and
reused by all six rules.

Also here: the region edit used by fixes that touch forward *and* backward (a
:class:`~graphlife.findings.FixRecipe` of kind ``replace_text`` carries one
span, so several small edits are merged into one replacement of the smallest
region that covers them, with the text in between kept verbatim).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar, cast

from graphlife.analysis.positions import byte_to_char_column
from graphlife.analysis.rule_api import ModuleContext
from graphlife.analysis.tree_index import descendants
from graphlife.findings import Span

#: Fully qualified names of the base classes that make a custom autograd Function.
FUNCTION_BASES = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
    }
)
CHECKPOINT_FUNCTIONS = frozenset({"torch.utils.checkpoint.checkpoint"})
CHECKPOINT_SEQUENTIAL = frozenset({"torch.utils.checkpoint.checkpoint_sequential"})


# --------------------------------------------------------------------------- one pass over the file

NodeT = TypeVar("NodeT", bound=ast.AST)


class Index:
    """Nodes by kind, and (built on first use) each node's parent and innermost statement."""

    KINDS = (ast.Import, ast.ImportFrom, ast.ClassDef, ast.Call, ast.Assign)

    def __init__(self, root: ast.AST | None, maps_of: ast.AST | None = None) -> None:
        self.by_kind: dict[type, list[ast.AST]] = {kind: [] for kind in self.KINDS}
        self._maps_of = maps_of
        self._parents: dict[int, ast.AST] | None = None
        self._statements: dict[int, ast.stmt] | None = None
        if root is not None:
            kinds = self.by_kind
            for node in descendants(root):
                bucket = kinds.get(type(node))
                if bucket is not None:
                    bucket.append(node)
            for bucket in kinds.values():
                bucket.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))

    def of(self, kind: type[NodeT]) -> list[NodeT]:
        """The nodes of one of ``KINDS``, in source order."""
        return cast("list[NodeT]", self.by_kind[kind])

    @property
    def parents(self) -> dict[int, ast.AST]:
        if self._parents is None:
            self._build_maps()
        assert self._parents is not None  # built by _build_maps
        return self._parents

    @property
    def statements(self) -> dict[int, ast.stmt]:
        if self._statements is None:
            self._build_maps()
        assert self._statements is not None  # built by _build_maps
        return self._statements

    def _build_maps(self) -> None:
        """Parents and innermost statements: only files whose rules need them pay for the walk."""
        self._parents, self._statements = {}, {}
        stack: list[tuple[ast.AST, ast.stmt | None]] = [(self._maps_of, None)] if self._maps_of is not None else []
        while stack:
            node, stmt = stack.pop()
            if isinstance(node, ast.stmt):
                stmt = node
            elif stmt is not None:
                self._statements[id(node)] = stmt
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, ast.AST):
                    self._parents[id(value)] = node
                    stack.append((value, stmt))
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.AST):
                            self._parents[id(item)] = node
                            stack.append((item, stmt))


def index(tree: ast.Module) -> Index:
    """The :class:`Index` of ``tree``, built once per tree from one list of nodes by kind per
    top-level statement. Those lists are kept on the statements: the language server reuses
    the statements of unchanged blocks between edits, so only the changed ones are walked."""
    cached = getattr(tree, "_graphlife_gl4_index", None)
    located = getattr(tree, "_graphlife_located", None)
    if cached is None and located is not None:
        # A full check: the engine's index of the file walked every node already (in the
        # same order as a walk per statement, so the sorted lists are the same).
        cached = Index(None, maps_of=tree)
        kinds = cached.by_kind
        for node in located:
            bucket = kinds.get(type(node))
            if bucket is not None:
                bucket.append(node)
        for bucket in kinds.values():
            bucket.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        tree._graphlife_gl4_index = cached  # type: ignore[attr-defined]
    if cached is None:
        cached = Index(None, maps_of=tree)
        for stmt in tree.body:
            part = getattr(stmt, "_graphlife_gl4_index", None)
            if part is None:
                part = Index(stmt)
                stmt._graphlife_gl4_index = part  # type: ignore[attr-defined]
            for kind, nodes in part.by_kind.items():
                cached.by_kind[kind].extend(nodes)
        tree._graphlife_gl4_index = cached  # type: ignore[attr-defined]
    return cached


# --------------------------------------------------------------------------- import aliases


class Aliases:
    """Local name -> fully qualified name, from imports and simple module-level aliases."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, str] = {}
        found = index(tree)
        for node in sorted([*found.of(ast.Import), *found.of(ast.ImportFrom)], key=lambda n: n.lineno):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        # `ag = torch.autograd`, `Function = torch.autograd.Function` at module level.
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                resolved = self.resolve(stmt.value)
                if resolved and resolved.split(".")[0] == "torch":
                    self.names[stmt.targets[0].id] = resolved

    def resolve(self, node: ast.AST) -> str | None:
        """``ag.Function`` -> ``torch.autograd.Function``; ``None`` when not an imported name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.names:
            return None
        return ".".join([self.names[node.id], *reversed(parts)])


# --------------------------------------------------------------------------- Function classes


def is_static(method: ast.FunctionDef) -> bool:
    return any(_decorator_name(d) == "staticmethod" for d in method.decorator_list)


def is_classmethod(method: ast.FunctionDef) -> bool:
    return any(_decorator_name(d) == "classmethod" for d in method.decorator_list)


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


@dataclass
class FunctionClass:
    """A custom autograd Function of this file, with its methods (own and inherited from local bases)."""

    node: ast.ClassDef
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def forward(self) -> ast.FunctionDef | None:
        return self.methods.get("forward")

    @property
    def backward(self) -> ast.FunctionDef | None:
        return self.methods.get("backward")

    @property
    def setup_context(self) -> ast.FunctionDef | None:
        return self.methods.get("setup_context")

    def forward_takes_ctx(self) -> bool:
        """``forward(ctx, ...)``; ``False`` in the ``setup_context`` style, where forward gets only inputs."""
        return self.setup_context is None


def _positional(method: ast.FunctionDef) -> list[ast.arg]:
    return [*method.args.posonlyargs, *method.args.args]


def call_params(method: ast.FunctionDef) -> list[ast.arg]:
    """The parameters a call through the class fills: all for static methods, after ``self``/``cls`` otherwise."""
    params = _positional(method)
    if is_classmethod(method):
        return params[1:]
    return params


def ctx_name(method: ast.FunctionDef) -> str | None:
    """The name of the ctx parameter of a static forward/backward/setup_context (first parameter)."""
    params = call_params(method)
    return params[0].arg if params else None


#: What a ctx offers; a parameter used this way is the method's ctx.
_CTX_API = frozenset(
    "save_for_backward saved_tensors needs_input_grad mark_dirty mark_non_differentiable set_materialize_grads "
    "save_for_forward".split()
)


def used_as_ctx(method: ast.FunctionDef, name: str) -> bool:
    """``name`` is used like a ctx in the method: ctx API or attribute assignment."""
    for node in ast.walk(method):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
            if node.attr in _CTX_API or isinstance(node.ctx, ast.Store):
                return True
    return False


def takes_self_before_ctx(method: ast.FunctionDef) -> bool:
    """A non-static ``def forward(self, ctx, x)``: apply would bind the ctx to the first parameter."""
    if is_static(method) or is_classmethod(method):
        return False
    params = [*method.args.posonlyargs, *method.args.args]
    return len(params) >= 2 and used_as_ctx(method, params[1].arg) and not used_as_ctx(method, params[0].arg)


def method_ctx(fn: "FunctionClass", method: ast.FunctionDef | None) -> str | None:
    """The ctx parameter name of forward (unless setup_context style), setup_context or backward."""
    if method is None or (method is fn.forward and not fn.forward_takes_ctx()):
        return None
    return ctx_name(method)


def forward_inputs(fn: "FunctionClass") -> list[ast.arg]:
    """forward's input parameters (after ctx, unless setup_context style)."""
    if fn.forward is None:
        return []
    params = call_params(fn.forward)
    return params[1:] if fn.forward_takes_ctx() else params


def find_function_classes(tree: ast.Module, aliases: Aliases) -> list[FunctionClass]:
    """Every class of the file that subclasses ``torch.autograd.Function`` (directly or via local classes)."""
    classes: list[ast.ClassDef] = index(tree).of(ast.ClassDef)
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
                if aliases.resolve(base) in FUNCTION_BASES or (
                    isinstance(base, ast.Name)
                    and any(id(local) in found for local in by_name.get(base.id, ()) if local is not node)
                ):
                    found[id(node)] = FunctionClass(node)
                    changed = True
                    break
    # Methods: own ones win over those of local Function bases (nearest first).
    for node in classes:
        if id(node) not in found:
            continue
        fn_class = found[id(node)]
        for klass in _local_mro(node, by_name, found):
            for stmt in klass.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    fn_class.methods.setdefault(stmt.name, stmt)  # type: ignore[arg-type]
    return [found[id(node)] for node in classes if id(node) in found]


def _local_mro(node: ast.ClassDef, by_name: dict[str, list[ast.ClassDef]], found: dict[int, FunctionClass]) -> Iterator[ast.ClassDef]:
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


def function_classes_by_name(classes: list[FunctionClass]) -> dict[str, FunctionClass]:
    return {fn.name: fn for fn in classes}


# --------------------------------------------------------------------------- call sites


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
        args = self.call.args
        for arg in args[: index + 1]:
            if isinstance(arg, ast.Starred):
                return None
        return args[index] if index < len(args) else None


def apply_calls(tree: ast.Module, classes: list[FunctionClass]) -> list[ApplyCall]:
    """Every call of a Function's ``apply`` in the file, direct or through ``name = Fn.apply``."""
    by_name = function_classes_by_name(classes)

    def apply_target(node: ast.AST) -> FunctionClass | None:
        if isinstance(node, ast.Attribute) and node.attr == "apply" and isinstance(node.value, ast.Name):
            return by_name.get(node.value.id)
        return None

    bound: dict[str, FunctionClass] = {}
    found = index(tree)
    for node in found.of(ast.Assign):
        if (target := apply_target(node.value)) is not None:
            for name in node.targets:
                key = _target_key(name)
                if key:
                    bound[key] = target
    calls = []
    for call in found.of(ast.Call):
        fn = apply_target(call.func)
        if fn is None:
            key = _target_key(call.func)
            fn = bound.get(key) if key else None
        if fn is not None:
            calls.append(ApplyCall(call, fn))
    return calls


def _target_key(node: ast.AST) -> str | None:
    """``name`` or ``self.attr`` as a string key, else ``None``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


# --------------------------------------------------------------------------- ctx attribute access


def ctx_attribute(node: ast.AST, ctx: str | None) -> str | None:
    """``attr`` when ``node`` is ``<ctx>.attr``."""
    if ctx and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == ctx:
        return node.attr
    return None


def save_for_backward_calls(method: ast.FunctionDef, ctx: str | None) -> list[ast.Call]:
    return [
        node
        for node in walk_body(method)
        if isinstance(node, ast.Call) and ctx_attribute(node.func, ctx) == "save_for_backward"
    ]


def walk_body(method: ast.FunctionDef) -> Iterator[ast.AST]:
    """Every node of a function body, not descending into nested functions, lambdas or classes."""
    stack: list[ast.AST] = list(reversed(method.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def returns(method: ast.FunctionDef) -> list[ast.Return]:
    return [node for node in walk_body(method) if isinstance(node, ast.Return)]


def assigned_names(method: ast.FunctionDef) -> set[str]:
    """Names bound anywhere in the body (assignments, loops, with, imports, walrus, comprehensions excluded)."""
    names: set[str] = set()
    for node in walk_body(method):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


# --------------------------------------------------------------------------- literal kinds


def is_non_tensor_literal(node: ast.expr) -> bool:
    """An expression that is certainly not a tensor and not ``None``: numbers, strings, containers, shapes."""
    if isinstance(node, ast.Constant):
        return node.value is not None and node.value is not Ellipsis
    if isinstance(node, (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.JoinedStr, ast.ListComp, ast.DictComp, ast.SetComp, ast.Lambda)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return isinstance(node.operand.value, (int, float, complex))
    if isinstance(node, ast.Attribute) and node.attr in {"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad"}:
        return True
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in {"float", "int", "bool", "len", "str", "tuple", "list", "dict", "round"}:
            return True
        if isinstance(func, ast.Attribute) and func.attr in {"size", "dim", "numel", "item", "tolist", "stride", "element_size", "nelement", "ndimension", "data_ptr"}:
            return True
    return False


# --------------------------------------------------------------------------- spans and edits


def char_col(ctx: ModuleContext, line: int, byte_col: int) -> int:
    """1-based character column of a 0-based byte column on 1-based ``line``."""
    text = ctx.lines[line - 1] if 0 < line <= len(ctx.lines) else ""
    return byte_to_char_column(text, byte_col) + 1


def def_line_span(ctx: ModuleContext, method: ast.FunctionDef) -> Span:
    """``def name`` on the def line (not the decorators)."""
    line = method.lineno
    text = ctx.lines[line - 1] if 0 < line <= len(ctx.lines) else ""
    start = char_col(ctx, line, method.col_offset)
    name_at = text.find(method.name, start - 1)
    end = name_at + len(method.name) + 1 if name_at >= 0 else len(text) + 1
    return Span(line, start, line, end)


def point(ctx: ModuleContext, line: int, byte_col: int) -> Span:
    """An empty span (an insertion point)."""
    column = char_col(ctx, line, byte_col)
    return Span(line, column, line, column)


def source_of(ctx: ModuleContext, span: Span) -> str:
    """The text of ``span`` in the analyzed source."""
    if span.line == span.end_line:
        return ctx.lines[span.line - 1][span.column - 1 : span.end_column - 1]
    parts = [ctx.lines[span.line - 1][span.column - 1 :]]
    parts += ctx.lines[span.line : span.end_line - 1]
    parts.append(ctx.lines[span.end_line - 1][: span.end_column - 1])
    return "\n".join(parts)


def merge_edits(ctx: ModuleContext, edits: list[tuple[Span, str]]) -> tuple[Span, str] | None:
    """One ``(span, text)`` replacement equivalent to several non-overlapping edits, or ``None`` if they overlap."""
    if not edits:
        return None
    ordered = sorted(edits, key=lambda e: (e[0].line, e[0].column, e[0].end_line, e[0].end_column))
    for (first, _), (second, _) in zip(ordered, ordered[1:]):
        if (first.end_line, first.end_column) > (second.line, second.column):
            return None
    region = Span(ordered[0][0].line, ordered[0][0].column, ordered[-1][0].end_line, ordered[-1][0].end_column)
    pieces: list[str] = []
    cursor = (region.line, region.column)
    for span, text in ordered:
        pieces.append(source_of(ctx, Span(cursor[0], cursor[1], span.line, span.column)))
        pieces.append(text)
        cursor = (span.end_line, span.end_column)
    return region, "".join(pieces)


def line_indent(ctx: ModuleContext, line: int) -> str:
    text = ctx.lines[line - 1] if 0 < line <= len(ctx.lines) else ""
    return text[: len(text) - len(text.lstrip())]


def starts_its_line(ctx: ModuleContext, node: ast.stmt) -> bool:
    """The statement is the first thing on its line (so a line can be inserted before it)."""
    text = ctx.lines[node.lineno - 1] if 0 < node.lineno <= len(ctx.lines) else ""
    return char_col(ctx, node.lineno, node.col_offset) == len(line_indent(ctx, node.lineno)) + 1 and text.strip() != ""


# --------------------------------------------------------------------------- saved tensors in backward


def saved_unpacking(backward: ast.FunctionDef) -> tuple[ast.Assign | None, list[str]] | None:
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


def unpacking_text(names: list[str], value: str) -> str:
    """``a, b = value`` / ``a, = value``."""
    return f"{', '.join(names)}{',' if len(names) == 1 else ''} = {value}"


def ctx_attributes_used(fn: FunctionClass) -> set[str]:
    """Every ``ctx.<name>`` read or written in forward, setup_context and backward."""
    used: set[str] = set()
    for method in (fn.forward, fn.setup_context, fn.backward):
        name = method_ctx(fn, method)
        if name is None or method is None:
            continue
        for node in walk_body(method):
            attr = ctx_attribute(node, name)
            if attr:
                used.add(attr)
    return used


def report_span(ctx: ModuleContext, node: ast.AST, stmt: ast.stmt | None) -> Span:
    """The node's span when it starts its statement's first line, else the statement's (markers sit there)."""
    if stmt is None or getattr(node, "lineno", None) == stmt.lineno:
        return ctx.span(node)
    return ctx.span(stmt)


def scope_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of a scope's body, not descending into nested functions, lambdas or classes."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def segment(ctx: ModuleContext, node: ast.AST) -> str:
    """The source text of a node (``ast.get_source_segment`` re-splits the whole file on every call)."""
    return source_of(ctx, ctx.span(node))


class ModuleAnalysis:
    """What every GL4xx rule needs about one file, computed once per file and shared by the rules."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases = Aliases(tree)
        self.classes = find_function_classes(tree, self.aliases)
        self.calls = apply_calls(tree, self.classes) if self.classes else []

        self.index = index(tree)

    @property
    def parents(self) -> dict[int, ast.AST]:
        return self.index.parents

    @property
    def statements(self) -> dict[int, ast.stmt]:
        return self.index.statements


def analysis(ctx: ModuleContext) -> ModuleAnalysis:
    """The shared :class:`ModuleAnalysis` of the file behind ``ctx``."""
    cached = getattr(ctx, "_gl4_analysis", None)
    if cached is None or cached.tree is not ctx.tree:
        assert isinstance(ctx.tree, ast.Module)
        cached = ModuleAnalysis(ctx.tree)
        ctx._gl4_analysis = cached  # type: ignore[attr-defined]
    return cached
