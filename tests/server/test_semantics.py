"""The semantic layer: what a name means at a node, grad-mode switches, autograd Functions.

These are the answers the GL4xx rules, the GL104/GL204 fix proofs and (through the calls
listed in ``graphlife.analysis.semantics``) the interpreter build on: a wrong scope here is
a finding on the wrong code or a missed one.
"""

from __future__ import annotations

import ast
import gc
import textwrap

import pytest

from graphlife.analysis.blocks import BlockParser
from graphlife.analysis.semantics import (
    GradSetting,
    ImportBinding,
    Semantics,
    import_bindings,
    semantics_of,
)
from graphlife.analysis.tree_index import TreeIndex, index_of


def model(source: str) -> tuple[ast.Module, Semantics]:
    tree = ast.parse(textwrap.dedent(source))
    return tree, semantics_of(tree)


def call_named(tree: ast.Module, text: str, nth: int = 0) -> ast.Call:
    """The ``nth`` call whose callee is written ``text``."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == text]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return calls[nth]


def meaning(source: str, callee: str, nth: int = 0) -> str | None:
    tree, semantics = model(source)
    return semantics.names.qualified_name(call_named(tree, callee, nth).func)


# --------------------------------------------------------------------------- imports


@pytest.mark.parametrize(
    ("statement", "bound"),
    [
        ("import torch", [ImportBinding("torch", "torch")]),
        ("import torch.nn", [ImportBinding("torch", "torch")]),
        ("import torch.nn as nn", [ImportBinding("nn", "torch.nn")]),
        ("import torch as T, os", [ImportBinding("T", "torch"), ImportBinding("os", "os")]),
        ("from torch import nn", [ImportBinding("nn", "torch.nn")]),
        ("from torch.autograd import Function as F", [ImportBinding("F", "torch.autograd.Function")]),
        ("from . import utils", [ImportBinding("utils", ".utils")]),
        ("from ..models import Net", [ImportBinding("Net", "..models.Net")]),
        ("from torch import *", []),
    ],
)
def test_import_bindings_are_what_python_binds(statement: str, bound: list[ImportBinding]) -> None:
    stmt = ast.parse(statement).body[0]
    assert isinstance(stmt, (ast.Import, ast.ImportFrom))
    assert list(import_bindings(stmt)) == bound


# --------------------------------------------------------------------------- names and scopes


def test_import_spellings_resolve_to_the_same_qualified_name() -> None:
    source = """
        import torch as T
        from torch import nn
        import torch.nn.functional as F
        T.relu(x)
        nn.functional.relu(x)
        F.relu(x)
    """
    assert meaning(source, "T.relu") == "torch.relu"
    assert meaning(source, "nn.functional.relu") == "torch.nn.functional.relu"
    assert meaning(source, "F.relu") == "torch.nn.functional.relu"


def test_a_function_import_is_seen_in_that_function_and_its_closures_only() -> None:
    source = """
        def uses_it():
            from torch.utils.checkpoint import checkpoint
            def inner():
                return checkpoint(f, x)
            return checkpoint(f, x)

        def elsewhere():
            return checkpoint(f, x)
    """
    assert meaning(source, "checkpoint", 0) == "torch.utils.checkpoint.checkpoint"  # the closure
    assert meaning(source, "checkpoint", 1) == "torch.utils.checkpoint.checkpoint"
    assert meaning(source, "checkpoint", 2) is None


def test_local_bindings_hide_the_module_meaning() -> None:
    source = """
        import torch
        import torch.nn.functional as F

        def parameter(F):
            return F.relu(x)

        def assigned():
            torch = make()
            return torch.relu(x)

        def comprehension(fs):
            return [F(x) for F in fs]

        def untouched():
            return F.relu(x)
    """
    assert meaning(source, "F.relu", 0) is None
    assert meaning(source, "torch.relu") is None
    assert meaning(source, "F") is None
    assert meaning(source, "F.relu", 1) == "torch.nn.functional.relu"


def test_class_body_names_are_not_seen_by_its_methods() -> None:
    source = """
        class Model:
            from torch import no_grad
            def forward(self):
                return no_grad()
            cached = no_grad()
    """
    assert meaning(source, "no_grad", 0) is None
    assert meaning(source, "no_grad", 1) == "torch.no_grad"


def test_decorators_and_defaults_are_read_in_the_scope_around_the_function() -> None:
    source = """
        import torch

        @torch.no_grad()
        def evaluate(torch=None, scale=torch.ones(1)):
            return torch.relu(x)
    """
    assert meaning(source, "torch.no_grad") == "torch.no_grad"
    assert meaning(source, "torch.ones") == "torch.ones"
    assert meaning(source, "torch.relu") is None  # the parameter


def test_aliases_count_when_every_binding_agrees() -> None:
    source = """
        import torch
        Fn = torch.autograd.Function
        ag = torch.autograd
        Base = ag.Function

        def pick(flag):
            if flag:
                context = torch.no_grad
            else:
                context = torch.inference_mode
            with context():
                pass

        def same():
            context = torch.no_grad
            with context():
                pass
    """
    tree, semantics = model(source)
    names = semantics.names
    classes = [stmt for stmt in tree.body if isinstance(stmt, ast.Assign)]
    assert [names.qualified_name(stmt.targets[0]) for stmt in classes] == [
        "torch.autograd.Function", "torch.autograd", "torch.autograd.Function"
    ]
    assert names.qualified_name(call_named(tree, "context", 0).func) is None  # no_grad or inference_mode
    assert names.qualified_name(call_named(tree, "context", 1).func) == "torch.no_grad"


def test_module_level_the_last_import_wins_and_other_bindings_do_not_hide_it() -> None:
    source = """
        try:
            from apex.checkpoint import checkpoint
        except ImportError:
            from torch.utils.checkpoint import checkpoint
        if use_deepspeed:
            checkpoint = deepspeed.checkpoint
        checkpoint(f, x)
    """
    assert meaning(source, "checkpoint") == "torch.utils.checkpoint.checkpoint"


def test_looking_for_one_function_among_every_call() -> None:
    source = """
        import torch.utils.checkpoint as cp
        from torch.utils import checkpoint as module
        import torch
        ckpt = torch.utils.checkpoint.checkpoint

        def f(cp, x):
            return cp.checkpoint(block, x)

        cp.checkpoint(block, x)
        module.checkpoint(block, x)
        ckpt(block, x)
        torch.relu(x)
    """
    _, semantics = model(source)
    wanted = {"torch.utils.checkpoint.checkpoint"}
    found = [semantics.names.qualified_name_in(call.func, wanted) for call in semantics.nodes(ast.Call)]
    assert found == [None, *["torch.utils.checkpoint.checkpoint"] * 3, None]


def test_builtins_are_names_the_file_does_not_bind() -> None:
    source = """
        def plain(xs, ys):
            return [a for a, b in zip(xs, ys)]

        def shadowed(xs, ys, zip):
            return [a for a, b in zip(xs, ys)]
    """
    tree, semantics = model(source)
    plain, shadowed = (call_named(tree, "zip", i) for i in range(2))
    assert not semantics.names.binds("zip", plain)
    assert semantics.names.binds("zip", shadowed)


def test_a_lookup_notes_the_scopes_it_read() -> None:
    source = """
        import torch
        try:
            from torch import no_grad
        except ImportError:
            pass

        def step():
            with no_grad():
                pass

        main()
    """
    tree, semantics = model(source)
    read: list[ast.AST] = []
    assert semantics.names.qualified_name(call_named(tree, "no_grad").func, read.append) == "torch.no_grad"
    step = tree.body[2]
    # the function, and the module-level statements that can bind names besides the imports
    # and definitions every unit of the language server's cache depends on anyway
    assert read == [step, tree.body[1], tree.body[3]]


# --------------------------------------------------------------------------- grad mode


@pytest.mark.parametrize(
    ("header", "expr", "setting", "inference"),
    [
        ("import torch", "torch.no_grad()", GradSetting.OFF, False),
        ("from torch import no_grad", "no_grad()", GradSetting.OFF, False),
        ("import torch as T", "T.enable_grad()", GradSetting.ON, False),
        ("import torch", "torch.autograd.grad_mode.enable_grad()", GradSetting.ON, False),
        ("import torch", "torch.set_grad_enabled(False)", GradSetting.OFF, False),
        ("import torch", "torch.set_grad_enabled(mode=True)", GradSetting.ON, False),
        ("import torch", "torch.set_grad_enabled(training)", GradSetting.UNKNOWN, False),
        ("import torch", "torch.inference_mode()", GradSetting.OFF, True),
        ("from torch import inference_mode", "inference_mode(True)", GradSetting.OFF, True),
        ("import torch", "torch.inference_mode(False)", GradSetting.KEPT, False),
        ("import torch", "torch.no_grad(*args)", GradSetting.UNKNOWN, False),
    ],
)
def test_with_items_that_switch_the_grad_mode(header: str, expr: str, setting: GradSetting, inference: bool) -> None:
    tree, semantics = model(f"{header}\nwith {expr}:\n    pass\n")
    stmt = tree.body[-1]
    assert isinstance(stmt, ast.With)
    (switch,) = semantics.grad.with_switches(stmt)
    assert (switch.setting, switch.inference) == (setting, inference)


def test_look_alikes_are_no_switch() -> None:
    tree, semantics = model("""
        import torch
        def no_grad():
            return open("f")
        with torch.no_grad:
            pass
        with no_grad():
            pass
    """)
    assert [semantics.grad.with_switches(s) for s in tree.body if isinstance(s, ast.With)] == [(), ()]


def test_decorators_switch_the_mode_of_the_whole_function() -> None:
    tree, semantics = model("""
        import torch
        @torch.no_grad
        def bare():
            pass
        @torch.inference_mode()
        def called():
            pass
    """)
    bare, called = (s for s in tree.body if isinstance(s, ast.FunctionDef))
    assert [s.setting for s in semantics.grad.decorator_switches(bare)] == [GradSetting.OFF]
    assert [(s.setting, s.inference) for s in semantics.grad.decorator_switches(called)] == [(GradSetting.OFF, True)]


def test_the_mode_at_a_node_is_the_innermost_switch_up_to_its_function() -> None:
    tree, semantics = model("""
        import torch
        from torch import enable_grad

        @torch.no_grad()
        def evaluate(model, x):
            a = model(x)
            with torch.inference_mode(False):
                b = model(x)
            with torch.no_grad(), enable_grad():
                c = model(x)
            def helper():
                d = model(x)
            return a, b, c

        e = evaluate(net, x)
    """)
    at = {stmt.targets[0].id: stmt for stmt in ast.walk(tree) if isinstance(stmt, ast.Assign)}
    grad = semantics.grad
    assert grad.setting_at(at["a"]) is GradSetting.OFF
    assert grad.setting_at(at["b"]) is GradSetting.OFF  # inference_mode(False) keeps the mode
    assert grad.setting_at(at["c"]) is GradSetting.ON  # the last one entered wins
    assert grad.setting_at(at["d"]) is GradSetting.KEPT  # the helper's callers decide
    assert grad.setting_at(at["e"]) is GradSetting.KEPT


# --------------------------------------------------------------------------- autograd Functions


FUNCTIONS = """
    import torch
    from torch.autograd import Function as F
    from torch.autograd.function import InplaceFunction

    class Scale(F):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.save_for_backward(x)
            ctx.alpha = alpha
            return x * alpha

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * ctx.alpha, None

    class Twice(Scale):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    class NewStyle(InplaceFunction):
        @staticmethod
        def forward(x, y):
            return x + y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g, g

    class NotOne(torch.nn.Module):
        pass

    scale = Scale.apply
    y = scale(x, 2.0) + Twice.apply(x) + NewStyle.apply(x, x)
"""


def test_function_classes_their_methods_and_ctx() -> None:
    _, semantics = model(FUNCTIONS)
    functions = semantics.functions
    assert [fn.name for fn in functions.classes] == ["Scale", "Twice", "NewStyle"]
    scale, twice, new_style = functions.classes
    assert twice.backward is scale.backward and twice.forward is not scale.forward  # inherited, own
    assert [a.arg for a in scale.forward_inputs()] == ["x", "alpha"]
    assert scale.ctx_of(scale.forward) == "ctx"
    assert scale.ctx_attributes_used() == {"save_for_backward", "alpha", "saved_tensors"}
    assert new_style.ctx_of(new_style.forward) is None  # setup_context style: forward gets inputs only
    assert [a.arg for a in new_style.forward_inputs()] == ["x", "y"]
    assert new_style.ctx_of(new_style.setup_context) == "ctx"


def test_apply_calls_directly_and_through_a_bound_name() -> None:
    _, semantics = model(FUNCTIONS)
    calls = semantics.functions.calls
    assert [(call.fn.name, call.argument_count()) for call in calls] == [("Scale", 2), ("Twice", 1), ("NewStyle", 2)]


# --------------------------------------------------------------------------- one walk, no cycles


def test_the_model_comes_from_the_checks_index_and_goes_with_it() -> None:
    tree = ast.parse(textwrap.dedent(FUNCTIONS))
    index = TreeIndex.of_module(tree)
    assert index_of(tree) is index
    first = semantics_of(tree)
    assert semantics_of(tree) is first and index.semantics is first
    assert first.nodes(ast.ClassDef) == [s for s in tree.body if isinstance(s, ast.ClassDef)]
    del index
    assert index_of(tree) is None  # the tree refers to its index weakly
    assert semantics_of(tree) is not first


def test_the_language_servers_merged_index_files_nodes_by_kind_too() -> None:
    parsed = BlockParser().parse(textwrap.dedent(FUNCTIONS))
    assert index_of(parsed.tree) is parsed.index
    assert [fn.name for fn in semantics_of(parsed.tree).functions.classes] == ["Scale", "Twice", "NewStyle"]


def test_the_model_leaves_no_reference_cycles() -> None:
    def use_everything() -> None:
        tree = ast.parse(textwrap.dedent(FUNCTIONS))
        index = TreeIndex.of_module(tree)
        semantics = semantics_of(tree, index)
        for call in semantics.nodes(ast.Call):
            semantics.names.qualified_name(call.func)
            semantics.grad.setting_at(call)
        assert semantics.functions.calls and semantics.mentions("Scale")

    use_everything()
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        use_everything()
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def test_nodes_where_sorts_only_what_it_keeps():
    """A rule looking for one keyword among every call of the file (GL108, GL405) gets them in
    source order without the model sorting every call (at each keystroke in the editor)."""
    source = "".join(f"f{i}(x, k={i % 3})\n" if i % 2 else f"g{i}(x)\n" for i in range(50))
    _tree, semantics = model("if True:\n    late(k=1)\n" + source)
    kept = semantics.nodes_where(ast.Call, lambda call: bool(call.keywords))
    assert ast.Call not in semantics._sorted  # nothing sorted the file's calls
    assert kept == [call for call in semantics.nodes(ast.Call) if call.keywords]
    assert [call.lineno for call in kept] == sorted(call.lineno for call in kept)
    assert semantics.nodes_where(ast.Call, lambda call: bool(call.keywords)) == kept  # from the sorted list now


def test_a_file_without_a_custom_function_does_not_sort_its_calls():
    """The autograd-Function model asks for the file's calls (sorted) only when the file defines
    a custom Function: every rule pass builds this model, at each keystroke in the editor."""
    _tree, semantics = model("import torch\n" + "".join(f"y{i} = torch.relu(x{i})\n" for i in range(30)))
    assert semantics.functions.classes == []
    assert ast.Call not in semantics._sorted
