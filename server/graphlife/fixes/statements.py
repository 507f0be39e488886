"""Recipes that rewrite or add whole statements: in-place -> out-of-place, detach at the
loop boundary, ``with torch.no_grad():`` around an update, merged backwards.

Why statement-level: these fixes change what a *name* refers to (``x = x + y``) or
where code runs (inside a ``with``, at the top of each iteration), so the edit is a
small statement or a new line placed where the rule's reasoning says it belongs,
indented like its neighbours. Every recipe checks the shape first and returns
``None`` when the code is not what the recipe was written for.
"""

from __future__ import annotations

import libcst as cst

from graphlife.findings import Span
from graphlife.fixes import TextEdit
from graphlife.fixes.cstutil import is_true, keyword_arg, operand_text, without_arg
from graphlife.fixes.document import Document

Edits = list[TextEdit] | None

#: In-place tensor methods whose out-of-place twin is the same name without ``_``.
#: (``zero_``, ``fill_``, ``copy_``, ``normal_`` ... have no twin and are not rewritten.)
OUT_OF_PLACE_TWINS = frozenset({
    "abs", "acos", "add", "addcdiv", "addcmul", "addmm", "asin", "atan", "atan2", "bernoulli_",
    "ceil", "clamp", "clamp_max", "clamp_min", "clip", "cos", "cosh", "div", "erf", "exp", "expm1",
    "floor", "floor_divide", "fmod", "frac", "index_add", "index_copy", "index_fill", "lerp", "log",
    "log1p", "log2", "log10", "masked_fill", "masked_scatter", "mul", "nan_to_num", "neg", "pow",
    "reciprocal", "relu", "remainder", "round", "rsqrt", "scatter", "scatter_add", "sigmoid", "sign",
    "sin", "sinh", "sqrt", "square", "squeeze", "sub", "t", "tan", "tanh", "transpose", "tril", "triu",
    "true_divide", "trunc", "unsqueeze", "hardtanh", "leaky_relu", "elu", "selu", "celu", "rrelu",
    "softmax", "log_softmax", "threshold",
}) - {"bernoulli_"}

#: Module classes whose positional ``inplace`` argument sits at this index.
POSITIONAL_INPLACE = {
    "ReLU": 0, "ReLU6": 0, "SELU": 0, "SiLU": 0, "Mish": 0, "Hardswish": 0, "Hardsigmoid": 0,
    "LeakyReLU": 1, "ELU": 1, "CELU": 1, "Dropout": 1, "Dropout1d": 1, "Dropout2d": 1, "Dropout3d": 1,
    "AlphaDropout": 1, "Hardtanh": 2, "Threshold": 2, "RReLU": 2,
}

#: Receivers that are modules, not tensors: ``torch.relu_(x)`` -> ``x = torch.relu(x)``.
FUNCTIONAL_NAMESPACES = frozenset({"torch", "F", "functional"})


def _is_rebindable(node: cst.BaseExpression) -> bool:
    """A name or attribute chain: ``x = f(x)`` rebinds it without touching other tensors."""
    if isinstance(node, cst.Name):
        return True
    return isinstance(node, cst.Attribute) and _is_rebindable(node.value)


def _small(doc: Document, span: object) -> tuple[cst.SimpleStatementLine, cst.BaseSmallStatement] | None:
    if not isinstance(span, Span):
        return None
    line = doc.statement_line(span)
    if line is None:
        return None
    return line, line.body[0]


def _insert_line_before(doc: Document, stmt: cst.CSTNode, code: str) -> TextEdit | None:
    span = doc.span_of(stmt)
    if not doc.starts_line(span):
        return None
    indent = doc.line_text(span.line)[: span.column - 1]
    return TextEdit(Span(span.line, 1, span.line, 1), f"{indent}{code}{doc.newline}")


# --------------------------------------------------------------------------- out_of_place


def out_of_place(doc: Document, params: dict) -> Edits:
    """Replace the in-place change by its out-of-place form (GL102)."""
    construction = params.get("construction")
    if isinstance(construction, Span):
        return _drop_inplace_in(doc, construction)
    found = _small(doc, params.get("stmt"))
    if found is None:
        span = params.get("stmt")
        return _drop_inplace_in(doc, span) if isinstance(span, Span) else None
    line, small = found
    if isinstance(small, cst.AugAssign):
        return _augmented(doc, small)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        edits = _method_call(doc, small, small.value)
        if edits is not None:
            return edits
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Subscript):
        base = small.targets[0].target.value
        if _is_rebindable(base):
            name = doc.code(base)
            edit = _insert_line_before(doc, line, f"{name} = {name}.clone()")
            return None if edit is None else [edit]
        return None
    return _drop_inplace_in(doc, doc.span_of(small))


def _augmented(doc: Document, aug: cst.AugAssign) -> Edits:
    """``x op= y`` -> ``x = x op y`` for a name or attribute target."""
    if not _is_rebindable(aug.target):
        return None
    op = doc.code(aug.operator).strip()[:-1]
    binary = {
        "+": cst.Add, "-": cst.Subtract, "*": cst.Multiply, "/": cst.Divide, "//": cst.FloorDivide,
        "%": cst.Modulo, "@": cst.MatrixMultiply, "**": cst.Power, "&": cst.BitAnd, "|": cst.BitOr,
        "^": cst.BitXor, "<<": cst.LeftShift, ">>": cst.RightShift,
    }.get(op)
    if binary is None:
        return None
    target = doc.code(aug.target)
    value = operand_text(doc.code(aug.value), aug.value, binary, right=True)
    return [TextEdit(doc.span_of(aug), f"{target} = {target} {op} {value}")]


def _method_call(doc: Document, stmt: cst.Expr, call: cst.Call) -> Edits:
    func = call.func
    if keyword_arg(call, "inplace") is not None:
        return _drop_inplace_in(doc, doc.span_of(call))
    if not isinstance(func, cst.Attribute) or not func.attr.value.endswith("_") or func.attr.value.startswith("_"):
        return None
    twin = func.attr.value[:-1]
    if twin not in OUT_OF_PLACE_TWINS or any(a.keyword is not None and a.keyword.value == "out" for a in call.args):
        return None
    new_call = doc.code(call.with_changes(func=func.with_changes(attr=cst.Name(twin))))
    receiver = func.value
    if isinstance(receiver, cst.Name) and receiver.value in FUNCTIONAL_NAMESPACES:
        if (
            not call.args
            or call.args[0].keyword is not None
            or call.args[0].star
            or not _is_rebindable(call.args[0].value)
        ):
            return None
        target = doc.code(call.args[0].value)
    elif _is_rebindable(receiver):
        target = doc.code(receiver)
    else:
        return None
    return [TextEdit(doc.span_of(stmt), f"{target} = {new_call}")]


def _drop_inplace_in(doc: Document, span: Span) -> Edits:
    """Drop ``inplace=True`` (or a module's positional ``True``) from the one call inside ``span``."""
    nodes = doc.nodes_at(span)
    if not nodes:
        return None
    calls: list[tuple[cst.Call, cst.Arg]] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            arg = keyword_arg(node, "inplace")
            if arg is not None:
                if is_true(arg.value):
                    calls.append((node, arg))
                return
            name = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", None)
            index = POSITIONAL_INPLACE.get(name) if isinstance(name, str) else None
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if index is not None and len(positional) == index + 1 and is_true(positional[index].value):
                calls.append((node, positional[index]))

    nodes[0].visit(Finder())
    if len(calls) != 1:
        return None
    call, arg = calls[0]
    return [TextEdit(doc.span_of(call), doc.code(without_arg(call, arg)))]


# --------------------------------------------------------------------------- detach_requires_grad


def detach_requires_grad(doc: Document, params: dict) -> Edits:
    """``y.requires_grad = True`` on a non-leaf -> ``y = y.detach().requires_grad_()`` (GL107)."""
    found = _small(doc, params.get("stmt"))
    target, flag = params.get("target"), params.get("flag")
    if found is None or not isinstance(target, str) or not isinstance(flag, bool):
        return None
    _, small = found
    receiver, value = None, None
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        attr = small.targets[0].target
        if isinstance(attr, cst.Attribute) and attr.attr.value == "requires_grad" and isinstance(small.value, cst.Name):
            receiver, value = attr.value, small.value.value
    elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_":
            receiver = call.func.value
            if not call.args:
                value = "True"
            elif len(call.args) == 1 and (
                call.args[0].keyword is None or call.args[0].keyword.value == "requires_grad"
            ):
                arg = call.args[0].value
                value = arg.value if isinstance(arg, cst.Name) else None
    if receiver is None or value not in ("True", "False") or (value == "True") != flag:
        return None
    if not _is_rebindable(receiver) or doc.code(receiver) != target:
        return None
    suffix = ".detach().requires_grad_()" if flag else ".detach()"
    return [TextEdit(doc.span_of(small), f"{target} = {target}{suffix}")]


# --------------------------------------------------------------------------- insert_before


def insert_before(doc: Document, params: dict) -> Edits:
    anchor, code = params.get("anchor"), params.get("code")
    if not isinstance(code, str) or "\n" in code:
        return None
    stmt = doc.statement(anchor) if isinstance(anchor, Span) else None
    if stmt is None:
        return None
    try:
        cst.parse_statement(code)
    except cst.ParserSyntaxError:
        return None
    edit = _insert_line_before(doc, stmt, code)
    return None if edit is None else [edit]


def insert_after(doc: Document, params: dict) -> Edits:
    """A line after a simple statement, at its indentation (GL303: `h.retain_grad()` once `h` exists)."""
    anchor, code = params.get("anchor"), params.get("code")
    if not isinstance(code, str) or "\n" in code or not isinstance(anchor, Span):
        return None
    stmt = doc.statement(anchor)
    if stmt is None or not isinstance(stmt, cst.SimpleStatementLine):
        return None  # after a compound statement the right place is ambiguous
    try:
        cst.parse_statement(code)
    except cst.ParserSyntaxError:
        return None
    span = doc.span_of(stmt)
    if not doc.starts_line(span):
        return None
    indent = doc.line_text(span.line)[: span.column - 1]
    after = span.end_line + 1
    return [TextEdit(Span(after, 1, after, 1), f"{indent}{code}{doc.newline}")]


def move_statement_after(doc: Document, params: dict) -> Edits:
    """Move a one-line statement (GL305: a `.data` change) to just after another in the same block."""
    return _move(doc, params, after=True)


def move_statement_before(doc: Document, params: dict) -> Edits:
    """Move a one-line statement (GL301: `optimizer.zero_grad()`) to just before another in the same block."""
    return _move(doc, params, after=False)


def _move(doc: Document, params: dict, *, after: bool) -> Edits:
    stmt_span, anchor_span = params.get("stmt"), params.get("anchor")
    if not isinstance(stmt_span, Span) or not isinstance(anchor_span, Span):
        return None
    moved, anchor = doc.statement(stmt_span), doc.statement(anchor_span)
    if not isinstance(moved, cst.SimpleStatementLine) or not isinstance(anchor, cst.SimpleStatementLine):
        return None
    if doc.parent(moved) is not doc.parent(anchor) or moved is anchor:
        return None  # another block: moving it could change when it runs
    moved_span, anchor_at = doc.span_of(moved), doc.span_of(anchor)
    if moved_span.line != moved_span.end_line or not doc.starts_line(moved_span) or not doc.starts_line(anchor_at):
        return None
    if after and (anchor_at.end_line >= moved_span.line >= anchor_at.line or anchor_at.end_line < moved_span.line):
        return None  # "after" moves a statement down, past the anchor
    text = doc.line_text(moved_span.line).strip()
    indent = doc.line_text(anchor_at.line)[: anchor_at.column - 1]
    where = anchor_at.end_line + 1 if after else anchor_at.line
    return [
        TextEdit(Span(where, 1, where, 1), f"{indent}{text}{doc.newline}"),
        TextEdit(Span(moved_span.line, 1, moved_span.line + 1, 1), ""),
    ]


# --------------------------------------------------------------------------- merge_backwards


def merge_backwards(doc: Document, params: dict) -> Edits:
    """Two adjacent ``a.backward()`` / ``b.backward()`` -> one ``(a + b).backward()`` (GL101)."""
    first, second = _small(doc, params.get("first")), _small(doc, params.get("second"))
    first_root, second_root = params.get("first_root"), params.get("second_root")
    if first is None or second is None or not isinstance(first_root, str) or not isinstance(second_root, str):
        return None
    calls: list[tuple[cst.Call, cst.Attribute]] = []  # each backward call and its `<root>.backward`
    for _line, small in (first, second):
        if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
            return None
        func = small.value.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "backward"):
            return None
        calls.append((small.value, func))
    (first_call, first_func), (call, second_func) = calls
    if first_call.args or doc.code(first_func.value) != first_root or doc.code(second_func.value) != second_root:
        return None
    parent = doc.parent(first[0])
    body = getattr(parent, "body", None)
    if not isinstance(body, (list, tuple)) or doc.parent(second[0]) is not parent:
        return None
    index = list(body).index(first[0])
    if index + 1 >= len(body) or body[index + 1] is not second[0]:
        return None
    first_span = doc.span_of(first[0])
    if not doc.starts_line(first_span) or first_span.line == doc.span_of(second[0]).line:
        return None
    # delete the first statement's lines (its own trailing comment goes with it)
    delete = TextEdit(Span(first_span.line, 1, first_span.end_line + 1, 1), "")
    merged = cst.parse_expression(f"({first_root} + {second_root})")
    new_call = call.with_changes(func=second_func.with_changes(value=merged))
    return [delete, TextEdit(doc.span_of(call), doc.code(new_call))]


# --------------------------------------------------------------------------- wrap_no_grad


def wrap_no_grad(doc: Document, params: dict) -> Edits:
    """Put the update statement(s) inside ``with torch.no_grad():`` (GL103)."""
    if not doc.binds_torch:
        return None
    start = doc.statement(params["stmt"]) if isinstance(params.get("stmt"), Span) else None
    end_span = params.get("end_stmt")
    end = doc.statement(end_span) if isinstance(end_span, Span) else start
    if start is None or end is None:
        return None
    parent = doc.parent(start)
    body = getattr(parent, "body", None)
    if not isinstance(body, (list, tuple)) or doc.parent(end) is not parent:
        return None
    body = list(body)
    i, j = body.index(start), body.index(end)
    if j < i:
        return None
    stmts = body[i : j + 1]
    if any(doc.has_multiline_string(s) for s in stmts):
        return None
    first, last = doc.span_of(stmts[0]), doc.span_of(stmts[-1])
    if not doc.starts_line(first):
        return None
    indent = doc.line_text(first.line)[: first.column - 1]
    unit = doc.indent_unit
    lines = [doc.line_text(n).rstrip("\r\n") for n in range(first.line, last.end_line + 1)]
    nl = doc.newline
    body_text = nl.join(unit + text if text.strip() else text for text in lines)
    new = f"{indent}with torch.no_grad():{nl}{body_text}"
    return [TextEdit(Span(first.line, 1, last.end_line, doc.line_end(last.end_line)), new)]


# --------------------------------------------------------------------------- detach_carried_state


def detach_carried_state(doc: Document, params: dict) -> Edits:
    """Detach each carried name once, at the top of the loop body (GL101, GL203).

    The new lines go after the detaches the loop already starts with, and a name detached
    there is skipped: applying the fix twice changes nothing. Each name must be assigned
    before the loop (so the new line never reads an unbound name) and reassigned inside it
    (so it really is carried); otherwise there is no fix.
    """
    targets, loop_span = params.get("targets"), params.get("loop")
    if not isinstance(targets, tuple) or not targets or not isinstance(loop_span, Span):
        return None
    loop = _loop_at(doc, loop_span)
    if loop is None or not isinstance(loop.body, cst.IndentedBlock) or not loop.body.body:
        return None
    body = list(loop.body.body)
    top = 0
    while top < len(body) and _detached_by(doc, body[top]) is not None:
        top += 1
    done = {name for stmt in body[:top] for name in [_detached_by(doc, stmt)] if name is not None}
    lines: list[str] = []
    first_span = doc.span_of(body[0])
    if not doc.starts_line(first_span):
        return None
    indent = doc.line_text(first_span.line)[: first_span.column - 1]
    nl, unit = doc.newline, doc.indent_unit
    for carried in targets:
        target = getattr(carried, "name", None)
        if not isinstance(target, str) or target in done:
            continue
        try:
            target_expr = cst.parse_expression(target)
        except cst.ParserSyntaxError:
            return None
        if not (_is_rebindable(target_expr) or isinstance(target_expr, cst.Subscript)):
            return None
        if not _assigned_in(doc, loop.body, target) or not _assigned_before(doc, loop, target):
            return None
        var = "s" if target == "t" else "t"
        assign = (f"{target} = tuple({var}.detach() for {var} in {target})" if carried.is_tuple
                  else f"{target} = {target}.detach()")
        if carried.maybe_none:
            lines.append(f"{indent}if {target} is not None:{nl}{indent}{unit}{assign}{nl}")
        else:
            lines.append(f"{indent}{assign}{nl}")
        done.add(target)
    if not lines:
        return None
    at = doc.span_of(body[top]).line if top < len(body) else doc.span_of(body[-1]).end_line + 1
    if top < len(body) and not doc.starts_line(doc.span_of(body[top])):
        return None
    return [TextEdit(Span(at, 1, at, 1), "".join(lines))]


def _detached_by(doc: Document, stmt: cst.CSTNode) -> str | None:
    """The name a statement at the top of a loop detaches (``h = h.detach()``, a tuple's
    ``state = tuple(t.detach() for t in state)``, either under ``if h is not None:``)."""
    if isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock):
        inner = stmt.body.body
        return _detached_by(doc, inner[0]) if len(inner) == 1 else None
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    name = doc.code(small.targets[0].target).strip()
    items: set[str] = set()  # the variables of `tuple(t.detach() for t in name)`
    receivers: list[set[str]] = []  # what each `.detach()` in the value detaches

    def references(node: cst.CSTNode) -> set[str]:
        found: set[str] = set()

        class Refs(cst.CSTVisitor):
            def visit_Name(self, n: cst.Name) -> None:
                found.add(n.value)

            def visit_Attribute(self, n: cst.Attribute) -> None:
                found.add(doc.code(n).strip())

        node.visit(Refs())
        return found

    class Finder(cst.CSTVisitor):
        def visit_CompFor(self, node: cst.CompFor) -> None:
            if doc.code(node.iter).strip() == name:
                items.update(references(node.target))

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("detach", "detach_"):
                receivers.append(references(func.value))

    small.value.visit(Finder())
    return name if any(name in found or found & items for found in receivers) else None


def _loop_at(doc: Document, span: Span) -> cst.For | cst.While | None:
    for node, rng in doc.positions.items():
        at = (rng.start.line, rng.start.column + 1)
        if isinstance(node, (cst.For, cst.While)) and at == (span.line, span.column):
            return node
    return None


def _assigned_targets(doc: Document, node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    def add(target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                add(el.value)
        else:
            names.add(doc.code(target).strip())

    class Visitor(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            for t in n.targets:
                add(t.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            if n.value is not None:
                add(n.target)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            add(n.target)

        def visit_For(self, n: cst.For) -> None:
            add(n.target)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            return False

    node.visit(Visitor())
    return names


def _assigned_in(doc: Document, block: cst.CSTNode, target: str) -> bool:
    return target in _assigned_targets(doc, block)


def _assigned_before(doc: Document, loop: cst.CSTNode, target: str) -> bool:
    """Bound before the loop: earlier statements of the enclosing function (or module);
    a parameter; or, for ``self.x``-style targets, any assignment in the class."""
    loop_line = doc.span_of(loop).line
    scope = doc.parent(loop)
    while scope is not None and not isinstance(scope, (cst.FunctionDef, cst.Module)):
        scope = doc.parent(scope)
    if not isinstance(scope, (cst.FunctionDef, cst.Module)):
        return False  # no enclosing function or module (the loop is not in this document's tree)
    root = target.split(".")[0].split("[")[0]
    if isinstance(scope, cst.FunctionDef):
        arguments = (*scope.params.params, *scope.params.posonly_params, *scope.params.kwonly_params)
        params = [p.name.value for p in arguments]
        if target in params:
            return True
        if ("." in target or "[" in target) and root in params:
            if root == "self":
                return target in _assigned_targets(doc, doc.module) or target in _class_assigned(doc, scope)
            return True
    return any(target in _assigned_targets(doc, stmt) for stmt in _statements_before(doc, scope, loop_line))


def _class_assigned(doc: Document, func: cst.FunctionDef) -> set[str]:
    cls = doc.parent(func)
    while cls is not None and not isinstance(cls, cst.ClassDef):
        cls = doc.parent(cls)
    if cls is None:
        return set()
    names: set[str] = set()
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef):
            names |= _assigned_targets(doc, stmt)
    return names


def _statements_before(doc: Document, scope: cst.FunctionDef | cst.Module, line: int) -> list[cst.CSTNode]:
    body = scope.body.body if isinstance(scope, cst.FunctionDef) else scope.body
    out: list[cst.CSTNode] = []
    for stmt in body:
        span = doc.span_of(stmt)
        if span.line >= line:
            break
        if span.end_line < line:
            out.append(stmt)
        elif isinstance(stmt, cst.BaseCompoundStatement):
            # the loop is nested in this statement: look at what precedes it inside
            inner = getattr(stmt, "body", None)
            if isinstance(inner, cst.IndentedBlock):
                out.extend(s for s in inner.body if doc.span_of(s).end_line < line)
    return out


# --------------------------------------------------------------------------- unwrap_with / drop_decorator


def unwrap_with(doc: Document, params: dict) -> Edits:
    """``with torch.no_grad():`` + body -> the body, dedented in its place (GL104).

    The ``with`` must have one context manager and no ``as`` target (unless the rule says the
    target is never read, ``unused_as``). A comment on the ``with`` line is kept on a line of its
    own; lines of the body keep their comments; a body with a multi-line string is refused
    (dedenting would change the string).
    """
    span = params.get("block")
    node = doc.node_at(span, cst.With) if isinstance(span, Span) else None
    if node is None or len(node.items) != 1 or node.asynchronous is not None:
        return None
    if node.items[0].asname is not None and params.get("unused_as") is not True:
        return None
    if doc.has_multiline_string(node.body):
        return None
    at = doc.span_of(node)
    if not doc.starts_line(at) or doc.span_of(node.items[0]).end_line != at.line:
        return None
    indent = doc.line_text(at.line)[: at.column - 1]
    nl = doc.newline
    body = node.body
    if isinstance(body, cst.SimpleStatementSuite):
        if at.end_line != at.line:
            return None
        text = doc.code(body).strip(" \t").rstrip("\r\n")
        return [TextEdit(Span(at.line, 1, at.line, doc.line_end(at.line)), f"{indent}{text}")]
    if not isinstance(body, cst.IndentedBlock):
        return None
    inner = indent + (body.indent if body.indent is not None else doc.indent_unit)
    lines = []
    if body.header.comment is not None:
        lines.append(f"{indent}{body.header.comment.value}")
    for number in range(at.line + 1, at.end_line + 1):
        text = doc.line_text(number).rstrip("\r\n")
        if text.startswith(inner):
            lines.append(indent + text[len(inner):])
        elif not text.strip():
            lines.append("")
        elif text.lstrip().startswith("#"):
            lines.append(indent + text.lstrip())
        else:
            lines.append(text)  # a continuation line inside brackets or after `\`: any indentation is valid
    return [TextEdit(Span(at.line, 1, at.end_line, doc.line_end(at.end_line)), nl.join(lines))]


def drop_decorator(doc: Document, params: dict) -> Edits:
    """Remove one decorator line (GL104: ``@torch.no_grad()``); its comment stays on a line of its own."""
    span = params.get("decorator")
    if not isinstance(span, Span):
        return None
    for node in doc.nodes_at(span):
        decorator = doc.parent(node)
        if isinstance(decorator, cst.Decorator) and decorator.decorator is node:
            break
    else:
        return None
    at = doc.span_of(decorator)
    if not doc.starts_line(at):
        return None  # libcst ends every decorator with its own line end: only the `@` line(s) go
    indent = doc.line_text(at.line)[: at.column - 1]
    comment = decorator.trailing_whitespace.comment
    text = f"{indent}{comment.value}{doc.newline}" if comment is not None else ""
    return [TextEdit(Span(at.line, 1, at.end_line + 1, 1), text)]
