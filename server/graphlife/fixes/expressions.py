"""Recipes that rewrite inside one statement: the edit covers only the node the rule named.

Why the narrow range: an edit that replaces just ``fake`` with ``fake.detach()`` (or
one call, or one small statement) cannot disturb comments or formatting elsewhere,
and the editor's undo shows exactly the change. Each recipe first checks the
node has the shape the recipe expects and returns ``None`` otherwise.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlife.findings import Span
from graphlife.fixes import TextEdit
from graphlife.fixes.cstutil import is_true, keyword_arg, parenthesized, with_keyword, without_arg
from graphlife.fixes.document import Document

Edits = list[TextEdit] | None


def _replace(doc: Document, node: cst.CSTNode, new_text: str) -> list[TextEdit]:
    return [TextEdit(doc.span_of(node), new_text)]


def _expr(doc: Document, span: Any) -> cst.BaseExpression | None:
    if not isinstance(span, Span):
        return None
    return doc.node_at(span, cst.BaseExpression)


def _call(doc: Document, span: Any) -> cst.Call | None:
    if not isinstance(span, Span):
        return None
    return doc.node_at(span, cst.Call)


def _method_suffix(doc: Document, params: dict, key: str, suffix: str) -> Edits:
    expr = _expr(doc, params.get(key))
    if expr is None:
        return None
    return _replace(doc, expr, parenthesized(doc.code(expr), expr) + suffix)


# --------------------------------------------------------------------------- per-kind recipes


def detach_expression(doc: Document, params: dict) -> Edits:
    """``fake`` -> ``fake.detach()`` (GL101 GAN shape: ``D(fake.detach())``).

    Only where the expression is an argument of a call that can own parameters
    (a module such as ``D`` or ``self.head``), directly or joined with others by
    ``torch.cat([...])`` / ``torch.stack([...])``. As an argument of a torch functional
    (``F.mse_loss(value, y)``) detaching would cut the loss off from every weight:
    "element 0 of tensors does not require grad".
    """
    expr = _expr(doc, params.get("expr"))
    if expr is None or _already_called(doc, expr, "detach"):
        return None
    arg = doc.parent(_through_join(doc, expr))
    call = doc.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(call, cst.Call) or _is_torch_functional(doc, call.func):
        return None
    return _method_suffix(doc, params, "expr", ".detach()")


#: ``torch.cat([real, fake])`` passes ``fake`` on to the module that receives the joined tensor.
_JOINS = frozenset({"cat", "concat", "concatenate", "stack"})


def _through_join(doc: Document, expr: cst.BaseExpression) -> cst.CSTNode:
    """The ``torch.cat([...])`` / ``torch.stack([...])`` call whose list holds ``expr``, or ``expr``."""
    element = doc.parent(expr)
    display = doc.parent(element) if isinstance(element, cst.Element) else None
    arg = doc.parent(display) if isinstance(display, (cst.List, cst.Tuple)) else None
    join = doc.parent(arg) if isinstance(arg, cst.Arg) else None
    if (isinstance(join, cst.Call) and join.args and join.args[0] is arg and isinstance(join.func, cst.Attribute)
            and join.func.attr.value in _JOINS and _is_torch_functional(doc, join.func)):
        return join
    return expr


def use_detach(doc: Document, params: dict) -> Edits:
    """A stored value -> ``value.detach()`` (GL201): the container keeps the numbers, not the graph."""
    expr = _expr(doc, params.get("expr"))
    if expr is None or _already_called(doc, expr, "detach") or _already_called(doc, expr, "item"):
        return None
    return _method_suffix(doc, params, "expr", ".detach()")


def clone_tensor(doc: Document, params: dict) -> Edits:
    """An inference tensor used under autograd -> ``expr.clone()`` (a normal tensor)."""
    expr = _expr(doc, params.get("expr"))
    if expr is None or _already_called(doc, expr, "clone"):
        return None
    return _method_suffix(doc, params, "expr", ".clone()")


def use_item(doc: Document, params: dict) -> Edits:
    """A stored one-element tensor -> ``value.item()`` (GL201): a Python number keeps no graph.
    The rule offers it only for values the engine knows have one element (a loss, a mean)."""
    expr = _expr(doc, params.get("expr"))
    if expr is None or _already_called(doc, expr, "item") or _already_called(doc, expr, "detach"):
        return None
    return _method_suffix(doc, params, "expr", ".item()")


def _in_shared_helper(doc: Document, node: cst.CSTNode) -> bool:
    """``node`` sits in a function called from several places: editing it would change
    every caller (a helper's ``loss.backward()`` would retain the graph on the last
    call too, where nothing uses it -- GL202)."""
    func = doc.parent(node)
    while func is not None and not isinstance(func, cst.FunctionDef):
        func = doc.parent(func)
    if func is None:
        return False
    name = func.name.value
    calls = 0
    for other in doc.positions:
        if isinstance(other, cst.Call):
            callee = other.func
            called = callee.attr.value if isinstance(callee, cst.Attribute) else getattr(callee, "value", None)
            calls += called == name
    return calls > 1


def _within(inner: Span, outer: Span) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (inner.end_line, inner.end_column) <= (
        outer.end_line, outer.end_column)


#: Names that refer to torch's parameter-free functional namespaces.
_FUNCTIONAL_ROOTS = frozenset({"torch", "F", "functional"})


def _is_torch_functional(doc: Document, func: cst.BaseExpression) -> bool:
    """``torch.x``, ``F.x``, ``torch.nn.functional.x``: a callee without parameters of its own."""
    while isinstance(func, cst.Attribute):
        func = func.value
    return isinstance(func, cst.Name) and func.value in _FUNCTIONAL_ROOTS and func is not None


def _already_called(doc: Document, expr: cst.CSTNode, method: str) -> bool:
    """``expr`` is already the receiver of ``.method()`` (applying again would double it)."""
    attr = doc.parent(expr)
    return isinstance(attr, cst.Attribute) and attr.attr.value == method and isinstance(doc.parent(attr), cst.Call)


def retain_graph(doc: Document, params: dict) -> Edits:
    """Add ``retain_graph=True`` to the earlier backward / ``autograd.grad`` call.

    Not offered when that call *is* the failing statement (the graph is carried
    across loop iterations): retaining it would keep every iteration's graph alive,
    and the optimizer step between iterations modifies the saved weights in place,
    so the next backward fails anyway (torch: "modified by an inplace operation").
    """
    call, finding = params.get("call"), params.get("_finding")
    if isinstance(call, Span) and isinstance(finding, Span) and _within(call, finding):
        return None
    node = _call(doc, call)
    if node is not None and _in_shared_helper(doc, node):
        return None
    return add_keyword(doc, {"call": params.get("call"), "keyword": "retain_graph", "value": "True"})


def add_keyword(doc: Document, params: dict) -> Edits:
    call = _call(doc, params.get("call"))
    name, value = params.get("keyword"), params.get("value")
    if call is None or not isinstance(name, str) or not isinstance(value, str):
        return None
    new = with_keyword(call, name, value)
    return None if new is None else _replace(doc, call, doc.code(new))


def drop_keyword(doc: Document, params: dict) -> Edits:
    call = _call(doc, params.get("call"))
    arg = None if call is None else keyword_arg(call, str(params.get("keyword")))
    if call is None or arg is None:
        return None
    return _replace(doc, call, doc.code(without_arg(call, arg)))


def inference_mode_to_no_grad(doc: Document, params: dict) -> Edits:
    """``with torch.inference_mode():`` -> ``with torch.no_grad():`` (tensors stay normal)."""
    span = params.get("item")
    if not isinstance(span, Span):
        return None
    node = doc.node_at(span, (cst.Call, cst.WithItem))
    if isinstance(node, cst.WithItem):
        node = node.item
    if not isinstance(node, cst.Call) or node.args:
        return None
    func = node.func
    if not (
        isinstance(func, cst.Attribute) and func.attr.value == "inference_mode" and isinstance(func.value, cst.Name)
    ):
        return None
    return _replace(doc, node, f"{func.value.value}.no_grad()")


def replace_text(doc: Document, params: dict) -> Edits:
    span, text = params.get("span"), params.get("text")
    if not isinstance(span, Span) or not isinstance(text, str):
        return None
    return [TextEdit(span, text)]


# --------------------------------------------------------------------------- leaf_after_conversion


def leaf_after_conversion(doc: Document, params: dict) -> Edits:
    """``torch.randn(3, requires_grad=True) * 0.01`` -> ``(torch.randn(3) * 0.01).requires_grad_()``.

    Only when exactly one call inside the expression says ``requires_grad=True``;
    otherwise it is unclear which tensor becomes the leaf.
    """
    expr = _expr(doc, params.get("expr"))
    if expr is None:
        return None
    found: list[tuple[cst.Call, cst.Arg]] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            arg = keyword_arg(node, "requires_grad")
            if arg is not None:
                found.append((node, arg))

    expr.visit(Finder())
    if len(found) != 1 or not is_true(found[0][1].value):
        return None
    call, _arg = found[0]

    class Dropper(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
            if original is call:
                victim = next(a for a in updated.args if a.keyword is not None and a.keyword.value == "requires_grad")
                return without_arg(updated, victim)
            return updated

    new = expr.visit(Dropper())
    if not isinstance(new, cst.BaseExpression):
        return None  # the transformer removes nothing: never taken
    return _replace(doc, expr, parenthesized(doc.code(new), new) + ".requires_grad_()")
