"""Recipes that change where a graph is built or where gradients are turned off.

Why together: each fixes a graph by moving a piece of it -- the shared ``D(fake)`` of a
GAN step rebuilt for its second consumer, ``no_grad`` moved from a shared helper to the
callers that evaluate, and numbers taken out of the graph with ``.item()`` kept in it
with ``torch.stack``. Every recipe checks the shape it edits and gives up otherwise.
"""

from __future__ import annotations

import libcst as cst

from graphlife.findings import Span
from graphlife.fixes import TextEdit
from graphlife.fixes.cstutil import parenthesized
from graphlife.fixes.document import Document
from graphlife.fixes.statements import drop_decorator, wrap_no_grad

Edits = list[TextEdit] | None


def rebuild_shared_graph(doc: Document, params: dict) -> Edits:
    """``d_fake = D(fake)`` -> ``D(fake.detach())``, each later read of ``d_fake`` -> ``D(fake)``."""
    detach, reads, call = params.get("detach"), params.get("reads"), params.get("call")
    if not (isinstance(detach, Span) and isinstance(reads, tuple) and reads and isinstance(call, str)):
        return None
    node = doc.node_at(detach, cst.Name)
    arg = doc.parent(node) if node is not None else None
    owner = doc.parent(arg) if isinstance(arg, cst.Arg) else None
    if node is None or not isinstance(owner, cst.Call) or doc.code(owner) != call:
        return None  # not the call the rule saw (or already rewritten)
    edits = [TextEdit(detach, parenthesized(doc.code(node), node) + ".detach()")]
    for span in reads:
        read = doc.node_at(span, cst.Name) if isinstance(span, Span) else None
        if read is None:
            return None
        edits.append(TextEdit(span, call))
    return edits


def move_no_grad_to_callers(doc: Document, params: dict) -> Edits:
    """Drop ``@torch.no_grad()`` from a helper and wrap each evaluation caller's statement in
    ``with torch.no_grad():`` instead."""
    decorator, callers = params.get("decorator"), params.get("callers")
    if not isinstance(decorator, Span) or not isinstance(callers, tuple) or not callers:
        return None
    edits = drop_decorator(doc, {"decorator": decorator})
    if not edits:
        return None
    for caller in callers:
        wrapped = wrap_no_grad(doc, {"stmt": caller})
        if not wrapped:
            return None
        edits.extend(wrapped)
    return edits


def stack_instead_of_items(doc: Document, params: dict) -> Edits:
    """``torch.tensor([f(s).item() for s in xs])`` -> ``torch.stack([f(s).reshape(()) for s in xs])``.

    Only a ``torch.tensor`` call with one argument, a list comprehension (or list display)
    whose every element is ``<expr>.item()``: ``reshape(())`` keeps each number a
    zero-dimensional tensor in the graph, and ``stack`` makes the same 1-D tensor of them.
    """
    span = params.get("call")
    call = doc.node_at(span, cst.Call) if isinstance(span, Span) else None
    if call is None or len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "tensor" and isinstance(func.value, cst.Name)):
        return None
    value = call.args[0].value
    if isinstance(value, cst.ListComp):
        elements = [value.elt]
    elif isinstance(value, cst.List) and value.elements:
        elements = [e.value for e in value.elements]
    else:
        return None
    edits: list[TextEdit] = []
    for element in elements:
        if not (isinstance(element, cst.Call) and not element.args and isinstance(element.func, cst.Attribute)
                and element.func.attr.value == "item"):
            return None
        receiver = element.func.value
        edits.append(TextEdit(doc.span_of(element), parenthesized(doc.code(receiver), receiver) + ".reshape(())"))
    edits.append(TextEdit(doc.span_of(func), f"{func.value.value}.stack"))
    return edits
