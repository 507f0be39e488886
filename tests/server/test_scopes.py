"""The names a function binds: one walk (`scopes.bindings`) serves the interpreter's locals and
the semantic layer's count of bindings, so both see the same Python scoping."""

from __future__ import annotations

import ast

from graphlife.analysis.scopes import bindings, local_names

SOURCE = '''
def step(batch, model):
    global total
    import torch.nn as nn
    x, (y, z) = batch
    for i in range(3):
        total = i
    with model.no_sync() as ctx:
        pass
    try:
        pass
    except ValueError as error:
        pass
    match batch:
        case {"input": inp, **rest}:
            pass
        case [first, *others]:
            pass
    squares = [k * k for k in range(3)]
    fn = lambda q: q
    def helper():
        inner = 1
'''


def _function() -> ast.FunctionDef:
    node = ast.parse(SOURCE).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def test_locals_are_what_the_body_binds_in_its_own_scope() -> None:
    assert local_names(_function(), walrus_possible=False) == {
        "nn", "x", "y", "z", "i", "ctx", "error", "inp", "rest", "first", "others", "squares", "fn", "helper",
    }


def test_globals_are_declared_not_local_and_counted_per_binding() -> None:
    bound, declared = bindings(_function(), walrus_possible=False)
    assert declared == {"total"}
    assert bound.count("total") == 1 and "k" not in bound and "q" not in bound and "inner" not in bound


def test_walrus_binds_only_when_the_file_has_it() -> None:
    node = ast.parse("def f(xs):\n    if (n := len(xs)) > 1:\n        pass\n").body[0]
    assert isinstance(node, ast.FunctionDef)
    assert "n" in local_names(node, walrus_possible=True)


def test_targets_that_bind_no_name_are_not_walked_but_what_follows_as_is() -> None:
    # Without `:=` a with item's expression and an attribute or subscript target bind nothing.
    node = ast.parse(
        "def f(self, d):\n"
        "    with ctx(lambda y: y, [k for k in d]) as (a, self.b), other() as [c, *rest]:\n"
        "        self.x = d[0] = e = 1\n"
        "        self.items[len(d)] += 1\n"
    ).body[0]
    assert isinstance(node, ast.FunctionDef)
    bound, declared = bindings(node, walrus_possible=False)
    assert sorted(bound) == ["a", "c", "e", "rest"] and not declared
    assert sorted(bindings(node, walrus_possible=True)[0]) == ["a", "c", "e", "rest"]
