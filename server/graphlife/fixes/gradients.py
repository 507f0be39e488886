"""``loss.backward(create_graph=True)`` -> ``torch.autograd.grad(loss, inputs, create_graph=True)`` (GL204).

Why a recipe of its own: the rewrite touches up to three places that must agree --
the backward statement (which becomes an assignment of the returned gradients), the
``.grad`` reads it replaces, and, when the optimizer step needs the gradients the
backward used to leave in ``.grad``, the next backward (``penalty.backward()`` ->
``(loss + penalty).backward()``). The rule proves *which* reads and whether the merge
is needed (:mod:`graphlife.fixes.proofs.create_graph`); this module only checks that the
code still has that shape and writes the edits, each on the smallest node, so comments
and formatting elsewhere stay as they were.

Shapes:

- ``x.grad`` (one or more names): ``(x_grad,) = torch.autograd.grad(loss, x, create_graph=True)``
  or ``x_grad, y_grad = torch.autograd.grad(loss, (x, y), create_graph=True)``; each read
  becomes the new name.
- ``p.grad`` in a comprehension over a list of leaves (``for p in params`` or
  ``for p, v in zip(params, vs)``): ``grads = torch.autograd.grad(loss, params, create_graph=True)``
  and the comprehension walks ``grads`` (``for p_grad, v in zip(grads, vs)``); when ``p`` is
  also used for something else it walks both (``for p, v, p_grad in zip(params, vs, grads)``).
"""

from __future__ import annotations

import itertools
from typing import TypeGuard

import libcst as cst

from graphlife.findings import Span
from graphlife.fixes import TextEdit
from graphlife.fixes.cstutil import is_true, operand_text
from graphlife.fixes.document import Document

Edits = list[TextEdit] | None

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def autograd_grad(doc: Document, params: dict) -> Edits:
    backward, root_span = params.get("backward"), params.get("root")
    inputs, reads = params.get("inputs"), params.get("reads")
    sequence = params.get("sequence")
    if not (isinstance(backward, Span) and isinstance(root_span, Span) and isinstance(inputs, tuple) and inputs
            and all(isinstance(n, str) and n.isidentifier() for n in inputs) and isinstance(reads, tuple) and reads
            and all(isinstance(r, Span) for r in reads) and isinstance(sequence, bool)):
        return None
    if not doc.binds_torch or (sequence and len(inputs) != 1):
        return None
    line = doc.statement_line(backward)
    if line is None or not isinstance(line.body[0], cst.Expr):
        return None
    small = line.body[0]
    call = small.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"
            and len(call.args) == 1 and call.args[0].keyword is not None
            and call.args[0].keyword.value == "create_graph" and is_true(call.args[0].value)):
        return None  # already rewritten (idempotence) or not the shape the rule saw
    root = call.func.value
    if doc.span_of(root) != root_span:
        return None
    scope = _scope(doc, line)
    taken = _names_in(scope)
    nodes = []
    for span in reads:
        node = doc.node_at(span, cst.Attribute)
        if not (isinstance(node, cst.Attribute) and node.attr.value == "grad" and isinstance(node.value, cst.Name)):
            return None
        nodes.append(node)
    root_text = doc.code(root)
    edits: list[TextEdit] = []
    if sequence:
        name = inputs[0]
        grads = _fresh("grads", taken)
        taken.add(grads)
        statement = f"{grads} = torch.autograd.grad({root_text}, {name}, create_graph=True)"
        walked = _walk_gradients(doc, nodes, name, grads, taken)
        if walked is None:
            return None
        edits.extend(walked)
    else:
        targets: dict[str, str] = {}
        for name in inputs:
            targets[name] = _fresh(f"{name}_grad", taken)
            taken.add(targets[name])
        for node in nodes:
            target = targets.get(_grad_of(node))
            if target is None or _comprehension_binding(doc, node, _grad_of(node)) is not None:
                return None
            edits.append(TextEdit(doc.span_of(node), target))
        if len(inputs) == 1:
            statement = f"({targets[inputs[0]]},) = torch.autograd.grad({root_text}, {inputs[0]}, create_graph=True)"
        else:
            statement = (f"{', '.join(targets[n] for n in inputs)} = "
                         f"torch.autograd.grad({root_text}, ({', '.join(inputs)}), create_graph=True)")
    edits.append(TextEdit(doc.span_of(small), statement))
    merge = params.get("merge")
    if merge is not None:
        merged = _merge_into(doc, merge, root, root_text)
        if merged is None:
            return None
        edits.append(merged)
    return None if _overlap(edits) else edits


def _merge_into(doc: Document, span: object, root: cst.BaseExpression, root_text: str) -> TextEdit | None:
    """``other.backward()`` -> ``(root + other).backward()``."""
    if not isinstance(span, Span) or not isinstance(root, cst.Name):
        return None
    call = doc.node_at(span, cst.Call)
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"
            and not call.args):
        return None
    other = call.func.value
    text = f"({root_text} + {operand_text(doc.code(other), other, cst.Add, right=True)})"
    return TextEdit(doc.span_of(other), text)


def _walk_gradients(doc: Document, reads: list[cst.Attribute], name: str, grads: str, taken: set[str]) -> Edits:
    """Make each comprehension holding a read walk the gradients alongside (or instead of) ``name``."""
    groups: dict[int, tuple[cst.CSTNode, cst.CompFor, str, list[cst.Attribute]]] = {}
    for node in reads:
        variable = _grad_of(node)
        found = _comprehension_binding(doc, node, variable)
        if found is None:
            return None
        comp, for_in = found
        key = id(comp)
        if key not in groups:
            groups[key] = (comp, for_in, variable, [])
        elif groups[key][2] != variable:
            return None
        groups[key][3].append(node)
    edits: list[TextEdit] = []
    for comp, for_in, variable, nodes in groups.values():
        uses = _uses(comp, for_in, variable)
        grad_reads = [
            u for u in uses if isinstance(parent := doc.parent(u), cst.Attribute) and parent.attr.value == "grad"
        ]
        if {id(doc.parent(u)) for u in grad_reads} != {id(n) for n in nodes}:
            return None  # a `.grad` of the variable the rule did not prove: leave it all alone
        only_grad = len(grad_reads) == len(uses)
        new_name = _fresh(f"{variable}_grad", taken | _names_in(comp))
        target, iterable = for_in.target, for_in.iter
        if isinstance(target, cst.Name) and isinstance(iterable, cst.Name) and iterable.value == name:
            if only_grad:
                new_target, new_iter = new_name, grads
            else:
                new_target, new_iter = f"{variable}, {new_name}", f"zip({name}, {grads})"
        elif isinstance(target, cst.Tuple) and _is_zip(iterable):
            if not all(isinstance(e.value, cst.Name) for e in target.elements):
                return None
            names = [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
            args = [doc.code(a.value) for a in iterable.args]
            if len(names) != len(args) or names.count(variable) != 1:
                return None
            k = names.index(variable)
            if args[k] != name:
                return None
            if only_grad:
                names[k], args[k] = new_name, grads
            else:
                names.append(new_name)
                args.append(grads)
            open_, close = ("(", ")") if target.lpar else ("", "")
            new_target = f"{open_}{', '.join(names)}{close}"
            new_iter = f"{doc.code(iterable.func)}({', '.join(args)})"
        else:
            return None
        edits.append(TextEdit(doc.span_of(target), new_target))
        edits.append(TextEdit(doc.span_of(iterable), new_iter))
        replacement = new_name
        edits.extend(TextEdit(doc.span_of(node), replacement) for node in nodes)
    return edits


def _is_zip(node: cst.BaseExpression) -> TypeGuard[cst.Call]:
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "zip"
            and len(node.args) > 0 and all(a.keyword is None and not a.star for a in node.args))


def _grad_of(read: cst.Attribute) -> str:
    """The name whose ``.grad`` ``read`` is (every read was checked to be ``<name>.grad``)."""
    assert isinstance(read.value, cst.Name)
    return read.value.value


def _comprehension_binding(doc: Document, node: cst.CSTNode, name: str) -> tuple[cst.CSTNode, cst.CompFor] | None:
    """The one-``for`` comprehension around ``node`` whose target binds ``name``."""
    current = doc.parent(node)
    while current is not None and not isinstance(current, cst.BaseStatement):
        if isinstance(current, _COMPREHENSIONS):
            for_in = current.for_in
            if name in _target_names(for_in.target):
                return (current, for_in) if for_in.inner_for_in is None else None
        current = doc.parent(current)
    return None


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for element in target.elements:
            out |= _target_names(element.value)
        return out
    return set()


def _uses(comp: cst.CSTNode, for_in: cst.CompFor, variable: str) -> list[cst.Name]:
    """Every ``Name`` node reading ``variable`` in the comprehension (not its own target)."""
    found: list[cst.Name] = []

    class Finder(cst.CSTVisitor):
        def visit_CompFor(self, node: cst.CompFor) -> bool:
            if node is for_in:
                node.iter.visit(self)
                for condition in node.ifs:
                    condition.visit(self)
                return False
            return True

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == variable:
                found.append(node)

    comp.visit(Finder())
    return found


def _scope(doc: Document, node: cst.CSTNode) -> cst.CSTNode:
    current = doc.parent(node)
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.Module)):
        current = doc.parent(current)
    return current if current is not None else doc.module


def _names_in(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Collector(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.add(n.value)

    node.visit(Collector())
    return names


def _fresh(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    n = 2
    while f"{base}{n}" in taken:
        n += 1
    return f"{base}{n}"


def _overlap(edits: list[TextEdit]) -> bool:
    ranges = sorted(((e.span.line, e.span.column), (e.span.end_line, e.span.end_column)) for e in edits)
    return any(b[0] < a[1] for a, b in itertools.pairwise(ranges))
