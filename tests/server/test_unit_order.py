"""The order of the units analyzed alone (callers first) and what an edit walks to find it.

Why it matters to a user: the language server finds this order at every keystroke. Reading
it from every call of the file walked up to its function cost a fifth of an edit's check of a
class of 3,900 lines; the calls each function makes are now kept on the function's node,
which an edit elsewhere leaves as it was (:func:`graphlife.analysis.unit_order.calls_named_in`).
"""

from __future__ import annotations

import ast
import textwrap

from graphlife.analysis.unit_order import callers_first, calls_named_in
from graphlife.incremental import IncrementalChecker

SOURCE = textwrap.dedent("""\
    import torch


    def helper(x):
        return x * 2


    def outer(x):
        @decorate(later())
        def inner(y=default()):
            return helper(y)
        f = lambda z: step(z)
        return f(x)


    class Engine(torch.nn.Module):
        def _configure(self):
            return self.build()

        def build(self):
            return cls.make() + helper(1)

        def __init__(self):
            self._configure()
    """)


def _functions(tree: ast.Module) -> tuple[list, dict[int, ast.AST]]:
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    functions = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            owner = parents.get(id(node))
            functions.append((node, owner if isinstance(owner, ast.ClassDef) else None))
    functions.sort(key=lambda pair: pair[0].lineno)
    return functions, parents


def test_a_call_belongs_to_its_nearest_function():
    functions, _ = _functions(ast.parse(SOURCE))
    by_name = {func.name: func for func, _ in functions}
    # The decorator and default of `inner` are inner's calls, the lambda's call is outer's.
    assert set(calls_named_in(by_name["outer"])) == {(False, "step"), (False, "f")}
    assert set(calls_named_in(by_name["inner"])) == {(False, "decorate"), (False, "later"), (False, "default"),
                                                     (False, "helper")}
    assert set(calls_named_in(by_name["build"])) == {(True, "make"), (False, "helper")}


def test_callers_come_before_the_functions_they_call():
    functions, parents = _functions(ast.parse(SOURCE))
    order = [func.name for func, _ in callers_first(functions, parents)]
    assert order.index("__init__") < order.index("_configure") < order.index("build") < order.index("helper")
    assert order.index("inner") < order.index("helper")


def test_an_edit_in_one_method_reads_the_calls_of_that_method_only():
    methods = "".join(f"\n    def step_{i}(self, x):\n        return self.step_{i + 1}(x) + {i}\n" for i in range(40))
    source = f"import torch\n\n\nclass Big(torch.nn.Module):\n{methods}\n    def step_40(self, x):\n        return x\n"
    checker = IncrementalChecker()
    checker.check(source)
    kept = list(checker.parser.parse(source).tree.body[1].body)  # alive: no id of theirs is reused
    before = {id(node) for node in kept}
    edited = source.replace("return self.step_8(x) + 7", "return self.step_8(x) + 7 + 0")
    checker.check(edited)
    tree = checker.parser.parse(edited).tree
    walked = [func.name for func in tree.body[1].body
              if isinstance(func, ast.FunctionDef) and id(func) not in before]
    assert walked == ["step_7"]  # every other method kept its node, and with it its calls
    assert all(hasattr(func, "_graphlife_calls_named") for func in tree.body[1].body)


def test_a_whole_files_index_gives_the_calls_the_walk_gives():
    # A full check reads the calls from the tree index's calls, each placed in its nearest def.
    from graphlife.analysis.tree_index import TreeIndex
    from graphlife.analysis.unit_order import _calls_from_index

    tree = ast.parse(SOURCE)
    index = TreeIndex.of_module(tree)
    functions, _ = _functions(tree)
    every = {name for func, _ in functions for _, name in calls_named_in(func)}
    found = _calls_from_index(functions, index.parents, every, every)
    assert found is not None
    for func, _owner in functions:
        assert set(found.get(id(func), {})) == set(calls_named_in(func)), func.name
    assert _calls_from_index(functions, dict(index.parents), every, every) is None  # not the index's own map
    only = _calls_from_index(functions, index.parents, {"helper"}, {"make"})
    assert only is not None
    assert {key for calls in only.values() for key in calls} == {(False, "helper"), (True, "make")}
