"""The whole-file passes of a check share the tree index's walk and answer as their own walks did.

Why: the tree index reads only the fields the grammar says hold nodes, files the attributes and
subscripts that may be written, and a full check reads the file's attribute writes from those
instead of walking every node again. Each shortcut must give what the plain walk gives, on code
with the corners the writes depend on (``__init__`` and what is nested in it, annotations,
classes in classes, ``setattr``, ``__dict__``).
"""

from __future__ import annotations

import ast
import textwrap

from graphlife.analysis import scopes, unseen_writes
from graphlife.analysis.tree_index import TreeIndex, child_nodes, descendants, node_fields

SOURCE = textwrap.dedent('''
    import torch

    def hook(x: setattr(obj, "a", 1) = other.__dict__, *, k=None, m: list.append = c.q.append(1)) -> d.e.pop():
        obj.z = 1
        store.items[0] = 2

    class Net(torch.nn.Module):
        registry.classes.append(1)

        @deco(lambda self: self.hidden)
        def __init__(self, width=defaults.w.pop()):
            super().__init__()
            self.w = torch.nn.Linear(width, width)
            self.cache[0] = 1
            self.__dict__["x"] = 2
            other.v = 3
            f = lambda: setattr(self, "g", 1)
            def inner():
                self.h = 4
            class Local:
                def __init__(self):
                    self.own = 5
            y = {**kw, "k": 1}

        def forward(self, x):
            self.last = x
            del self.old
            self.buf.extend([x])
            vars(self)
            return x

        class Inner:
            value = 1
            def __init__(me):
                me.kept = 1
                outer.seen = 2

    async def run(a, /, b, *args, c, **kwargs):
        global counter
        counter += 1
        async with ctx() as (p, q.r):
            p.t = 1
        match a:
            case {"k": v, **rest} if (w := v):
                a.m = w
            case Point(x=0, y=yy) as pt:
                pass
        try:
            pass
        except Exception as error:
            error.note = 1
        return [z for z in b if (n := z)]
''')


def _walk_writes(tree: ast.Module) -> list[tuple[frozenset[str], frozenset[str], bool] | None]:
    unseen_writes.attribute_write_names(tree.body)
    return _kept(tree.body)


def _kept(statements: list[ast.stmt]) -> list[tuple[frozenset[str], frozenset[str], bool] | None]:
    found: list[tuple[frozenset[str], frozenset[str], bool] | None] = []
    for stmt in statements:
        found.append(stmt.__dict__.get(unseen_writes._WRITES))
        if isinstance(stmt, ast.ClassDef):
            found.extend(_kept(stmt.body))
    return found


def test_a_full_check_reads_the_attribute_writes_from_the_index_as_the_walk_finds_them() -> None:
    walked, indexed = ast.parse(SOURCE), ast.parse(SOURCE)
    expected = unseen_writes.AttributeWrites(*unseen_writes.attribute_write_names(walked.body))
    index = TreeIndex.of_module(indexed)  # kept alive: attribute_writes finds it from the tree
    assert index.whole_file and index.written
    assert unseen_writes.attribute_writes(indexed) == expected
    assert _kept(indexed.body) == _walk_writes(walked)
    assert "a" not in expected.names and "own" not in expected.names and "kept" not in expected.names
    assert {"h", "last", "old", "seen", "v", "z", "note", "m", "t"} <= expected.names
    assert {"cache", "buf", "classes", "items"} <= expected.contents and expected.any_name


def test_a_merged_index_leaves_the_attribute_writes_to_the_walk() -> None:
    tree = ast.parse(SOURCE)
    merged = TreeIndex.merge(tree, [TreeIndex.of_statements(tree.body)])
    assert not merged.whole_file and merged.written
    expected = unseen_writes.AttributeWrites(*unseen_writes.attribute_write_names(ast.parse(SOURCE).body))
    assert unseen_writes.attribute_writes(tree) == expected


def test_the_index_gives_every_node_its_parent_and_skips_what_holds_no_node() -> None:
    tree = ast.parse(SOURCE)
    index = TreeIndex.of_module(tree)
    expected = {
        id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)
        if not isinstance(child, ast.expr_context)
    }
    assert index.parents == expected
    assert sorted(map(id, descendants(tree))) == sorted([id(tree), *expected])
    assert TreeIndex.of_statements(tree.body).located and not index.located
    assert node_fields(ast.Global) == () and node_fields(ast.Constant) == ()
    assert node_fields(ast.MatchClass) == ("cls", "patterns", "kwd_patterns")
    dict_node = next(node for node in ast.walk(tree) if isinstance(node, ast.Dict))
    assert None not in child_nodes(dict_node) and len(child_nodes(dict_node)) == 3


def test_the_bindings_of_a_scope_are_those_of_every_child_walked() -> None:
    tree = ast.parse(SOURCE)
    run = next(node for node in tree.body if isinstance(node, ast.AsyncFunctionDef))
    bound, declared = scopes.bindings(run, walrus_possible=False)
    assert declared == {"counter"}
    assert {"counter", "p", "v", "rest", "yy", "pt", "error"} <= set(bound) and "q" not in bound
    assert "w" not in bound and "n" not in bound
    with_walrus, _ = scopes.bindings(run, walrus_possible=True)
    assert "w" in with_walrus and "z" not in with_walrus
