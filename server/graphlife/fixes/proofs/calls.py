"""What the proofs read from a call's syntax alone."""

from __future__ import annotations

import ast


def callee_name(call: ast.AST) -> str | None:
    """The last name of what a call calls: ``f(...)`` -> ``f``, ``x.step(...)`` -> ``step``.

    A proof uses it where a spelling is all there is to go on (a call it cannot resolve,
    an event of a call the engine did not model); what a name means is the semantic layer's."""
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None
