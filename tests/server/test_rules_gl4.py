"""GL401-GL406 beyond the fixtures: import aliases, unknown arity, look-alikes, severities, fixes.

The last tests apply each bad fixture's ``replace_text`` fix and require that the
fixed program satisfies the rule's *good* runtime truth under torch.
"""

from __future__ import annotations

import textwrap
from dataclasses import fields
from pathlib import Path

import pytest

from fixturelib import fixture_paths, load_fixture
from graphlife.checker import check
from graphlife.findings import Finding, Severity, Span
from graphlife.rules import rule_by_code

GL4 = [f"GL40{i}" for i in range(1, 7)]


def findings(source: str, code: str) -> list[Finding]:
    return [f for f in check(textwrap.dedent(source)) if f.code == code]


def lines(source: str, code: str) -> list[tuple[int, str]]:
    return [(f.span.line, f.severity.value) for f in findings(source, code)]


def apply_replace(source: str, span: Span, text: str) -> str:
    rows = source.splitlines(keepends=True)

    def offset(line: int, column: int) -> int:
        return sum(len(r) for r in rows[: line - 1]) + column - 1

    return source[: offset(span.line, span.column)] + text + source[offset(span.end_line, span.end_column) :]


def first_replace_text(finding: Finding):
    return next((fix for fix in finding.fixes if fix.kind == "replace_text"), None)


def fix_all(source: str, code: str, limit: int = 10) -> str:
    """Apply the first ``replace_text`` fix of the first ``code`` finding until none is left."""
    for _ in range(limit):
        found = [f for f in check(source) if f.code == code]
        if not found:
            return source
        fix = first_replace_text(found[0])
        assert fix is not None, f"{code} finding without a replace_text fix: {found[0].message}"
        source = apply_replace(source, fix.span, fix.text)
        compile(source, "<fixed>", "exec")
    raise AssertionError(f"{code} still reported after {limit} fixes:\n{source}")


# --------------------------------------------------------------------------- documentation


@pytest.mark.parametrize("code", GL4)
def test_rule_documents_itself(code: str) -> None:
    rule = rule_by_code(code)
    assert rule is not None and (rule.check_module is not None or rule.hooks)  # it runs: on the file or the engine
    for section in ("What it does", "Why is this bad?", "What torch says", "Example", "Use instead", "Fixture line"):
        assert rule.doc.section(section), f"{code} lacks `## {section}`"
    assert code in rule.doc.section("Fixture line")


# --------------------------------------------------------------------------- finding Function classes


HEADER_VARIANTS = [
    ("import torch\n", "torch.autograd.Function"),
    ("import torch.autograd as ag\n", "ag.Function"),
    ("from torch.autograd import Function\n", "Function"),
    ("from torch.autograd import Function as AF\n", "AF"),
    ("from torch.autograd.function import Function\n", "Function"),
    ("import torch\nBase = torch.autograd.Function\n", "Base"),
    ("from torch import autograd\n", "autograd.Function"),
]


@pytest.mark.parametrize(("header", "base"), HEADER_VARIANTS)
def test_function_found_through_any_import(header: str, base: str) -> None:
    source = header + textwrap.dedent(f"""
        class Scale({base}):
            @staticmethod
            def forward(ctx, x, factor):
                return x * factor

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output
        """)
    assert [f.severity for f in findings(source, "GL402")] == [Severity.ERROR]


def test_subclass_of_local_function_inherits_forward() -> None:
    source = """
        from torch.autograd import Function

        class Base(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

        class Child(Base):
            @staticmethod
            def backward(ctx, g):
                return g
        """
    assert lines(source, "GL402") == [(12, "error")]


def test_module_with_forward_and_backward_names_is_not_a_function() -> None:
    source = """
        import torch.nn as nn

        class Block(nn.Module):
            def forward(self, x, y):
                return x + y

            def backward(self, g):
                return g
        """
    assert findings(source, "GL402") == [] and findings(source, "GL404") == []


def test_unrelated_function_base_is_not_matched() -> None:
    source = """
        from mylib import Function

        class Scale(Function):
            @staticmethod
            def forward(ctx, x, factor):
                return x * factor

            @staticmethod
            def backward(ctx, g):
                return g
        """
    assert findings(source, "GL402") == []


# --------------------------------------------------------------------------- GL402


def _fn(forward: str, backward: str, extra: str = "") -> str:
    return (
        "import torch\n\n"
        "class Fn(torch.autograd.Function):\n"
        "    @staticmethod\n"
        f"    def forward({forward}):\n"
        "        return x\n\n"
        "    @staticmethod\n"
        f"    def backward(ctx, g):\n{textwrap.indent(textwrap.dedent(backward), '        ')}\n" + extra
    )


@pytest.mark.parametrize(
    "body",
    [
        "grads = tuple(x for x in [g])\nreturn grads",
        "grads = make_grads(g)\nreturn grads",
        "return g.chunk(2)",
        "return g.tensor_split(2)",
        "return ctx.cached",
        "return (*ctx.parts, g)",
    ],
)
def test_gl402_unknown_counts_are_never_flagged(body: str) -> None:
    assert findings(_fn("ctx, x, y", body), "GL402") == []


@pytest.mark.parametrize(
    "body",
    [
        "grads = [g]\nif ctx.flag:\n    grads.append(None)\nreturn tuple(grads)",  # one count per path
        "return (g,) + (None,) * ctx.n",
        "return g.hsplit(2)",  # a method the op table does not know may return a tuple
        "return g.split(1)",
        "return g.unbind()",
        "return opaque_backward(g)",
    ],
)
def test_gl402_counts_the_engine_does_not_know_are_never_flagged(body: str) -> None:
    assert findings(_fn("ctx, x, y, z", body), "GL402") == []


def test_gl402_counts_follow_the_values() -> None:
    starred = _fn("ctx, x, y, z, w", "grads = (g, g * 2)\nreturn (*grads, None)")
    assert lines(starred, "GL402") == [(11, "error")]
    star_grads = _fn("ctx, x, y", "return g, None").replace("def backward(ctx, g)", "def backward(ctx, *gs)")
    assert findings(star_grads.replace("return g, None", "return (*gs, None)"), "GL402") == []
    assert lines(_fn("ctx, x, y, z", "return torch.std_mean(g)"), "GL402") == [(10, "error")]
    assert findings(_fn("ctx, x, y", "return torch.std_mean(g)"), "GL402") == []
    assert lines(_fn("ctx, x, y, z, w", "return g.chunk(3)"), "GL402") == [(10, "error")]
    assert findings(_fn("ctx, x", "return g.chunk(3)"), "GL402") == []  # may be one chunk
    assert lines(_fn("ctx, x, y, z", "a, b = g.chunk(2)\nreturn a, b"), "GL402") == [(11, "error")]
    helper = _fn("ctx, x, y, z", "return grads_of(g)", "def grads_of(g):\n    return g, g\n")
    assert lines(helper, "GL402") == [(10, "error")]


def test_gl402_forward_with_star_args_is_unknown() -> None:
    assert findings(_fn("ctx, x, *rest", "return g"), "GL402") == []


def test_gl402_name_bound_to_known_tuple_counts() -> None:
    assert lines(_fn("ctx, x, y, z", "grads = (g, None)\nreturn grads"), "GL402") == [(11, "error")]
    assert findings(_fn("ctx, x, y", "grads = (g, None)\nreturn grads"), "GL402") == []


def test_gl402_extra_trailing_none_is_accepted_but_extra_gradient_is_not() -> None:
    assert findings(_fn("ctx, x", "return g, None, None"), "GL402") == []
    assert findings(_fn("ctx, x", "grads = (g, None)\nreturn grads"), "GL402") == []
    assert findings(_fn("ctx, x", "return (g,) + (None,) * 2"), "GL402") == []
    assert lines(_fn("ctx, x", "grads = (g, g)\nreturn grads"), "GL402") == [(11, "error")]
    assert lines(_fn("ctx, x", "return g, g * 2"), "GL402") == [(10, "error")]


def test_gl402_only_some_returns_wrong_is_a_warning() -> None:
    body = "if ctx.flag:\n    return g\nreturn g, None"
    assert lines(_fn("ctx, x, y", body), "GL402") == [(11, "warning")]


def test_gl402_falling_off_the_end_may_be_right() -> None:
    body = "if ctx.flag:\n    return g, g"
    assert lines(_fn("ctx, x", body), "GL402") == [(11, "warning")]


def test_gl402_defaults_are_decided_by_apply_calls() -> None:
    passes_two = _fn("ctx, x, scale=2.0", "return g * 2", "y = Fn.apply(torch.ones(1), 3.0)\n")
    passes_one = _fn("ctx, x, scale=2.0", "return g * 2", "y = Fn.apply(torch.ones(1))\n")
    unknown = _fn("ctx, x, scale=2.0", "return g * 2", "y = Fn.apply(*args)\n")
    assert lines(passes_two, "GL402") == [(10, "error")]
    assert findings(passes_one, "GL402") == []
    assert findings(unknown, "GL402") == []


def test_gl402_keyword_arguments_of_apply_count() -> None:
    source = _fn("ctx, x, scale=2.0", "return g", "y = Fn.apply(torch.ones(1), scale=3.0)\n")
    assert lines(source, "GL402") == [(10, "error")]


def test_gl402_apply_alias_calls_count() -> None:
    source = _fn("ctx, x, scale=2.0", "return g", "scaled = Fn.apply\ny = scaled(torch.ones(1), 3.0)\n")
    assert lines(source, "GL402") == [(10, "error")]


def test_gl402_setup_context_style_has_no_ctx_in_forward() -> None:
    source = """
        import torch

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(x, w):
                return x * w

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g
        """
    assert lines(source, "GL402") == [(15, "error")]


def test_gl402_fix_pads_with_none_and_turns_lists_into_tuples() -> None:
    (short,) = findings(_fn("ctx, x, y, z", "return g"), "GL402")
    fixed = apply_replace(_fn("ctx, x, y, z", "return g"), short.fixes[0].span, short.fixes[0].text)
    assert "return g, None, None" in fixed
    source = _fn("ctx, x, y", "return [g, g * 2]")
    (listed,) = findings(source, "GL402")
    assert "return (g, g * 2)" in apply_replace(source, listed.fixes[0].span, listed.fixes[0].text)


# --------------------------------------------------------------------------- GL404


def test_gl404_static_methods_applied_are_fine() -> None:
    source = _fn("ctx, x", "return g", "y = Fn.apply(torch.ones(1))\nf = Fn.apply\nz = f(torch.ones(1))\n")
    assert findings(source, "GL404") == []


def test_gl404_instance_only_created_is_information_instance_called_is_error() -> None:
    created = _fn("ctx, x", "return g", "y = Fn().apply(torch.ones(1))\n")
    called = _fn("ctx, x", "return g", "fn = Fn()\ny = fn(torch.ones(1))\n")
    assert lines(created, "GL404") == [(11, "information")]
    assert lines(called, "GL404") == [(11, "error")]
    (finding,) = findings(called, "GL404")
    assert finding.related and finding.related[0].span.line == 12


def test_gl404_no_static_fix_when_init_holds_state() -> None:
    source = textwrap.dedent("""
        from torch.autograd import Function

        class Gate(Function):
            def __init__(self, slope):
                super().__init__()
                self.slope = slope

            def forward(self, x):
                return x * self.slope
        """)
    (finding,) = [f for f in check(source) if f.code == "GL404"]
    assert finding.severity is Severity.INFORMATION and finding.fixes == ()


def test_gl404_instance_call_is_looked_up_in_the_binding_scope() -> None:
    source = _fn(
        "ctx, x",
        "return g",
        "def build():\n    fn = Fn()\n    return fn.apply\n\ndef other(fn, x):\n    return fn(x)\n",
    )
    assert lines(source, "GL404") == [(12, "information")]
    held = _fn(
        "ctx, x",
        "return g",
        "class Net:\n    def __init__(self):\n        self.act = Fn()\n"
        "\n    def forward(self, x):\n        return self.act(x)\n",
    )
    assert lines(held, "GL404") == [(13, "error")]


def test_gl404_non_static_ctx_first_is_information_self_then_ctx_is_warning() -> None:
    source = """
        from torch.autograd import Function

        class A(Function):
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class B(Function):
            def forward(self, ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class C(Function):
            @classmethod
            def forward(cls, ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        """
    assert lines(source, "GL404") == [(5, "information"), (13, "warning")]
    assert findings(source, "GL402") == []  # the misbound B has no meaningful arity


def test_gl404_fix_makes_methods_static_with_ctx() -> None:
    source = textwrap.dedent("""
        from torch.autograd import Function

        class Clip(Function):
            def forward(self, x):
                self.save_for_backward(x)
                return x.clamp(-1, 1)
        """)
    (finding,) = [f for f in check(source) if f.code == "GL404"]
    fixed = apply_replace(source, finding.fixes[0].span, finding.fixes[0].text)
    assert "    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)" in fixed


# --------------------------------------------------------------------------- GL405


CKPT = "import torch\nfrom torch.utils.checkpoint import checkpoint\n"


def test_gl405_explicit_false_or_kwargs_are_fine() -> None:
    assert findings(CKPT + "def f(block, x):\n    return checkpoint(block, x, use_reentrant=False)\n", "GL405") == []
    assert findings(CKPT + "def f(block, x, **kw):\n    return checkpoint(block, x, **kw)\n", "GL405") == []


def test_gl405_reentrant_true_with_inputs_that_may_require_grad_is_fine() -> None:
    assert findings(CKPT + "def f(block, x):\n    return checkpoint(block, x, use_reentrant=True)\n", "GL405") == []


def test_gl405_reentrant_on_fresh_or_detached_inputs_is_a_warning() -> None:
    fresh = CKPT + "def f(block):\n    x = torch.randn(2, 3)\n    return checkpoint(block, x, use_reentrant=True)\n"
    detached = CKPT + "def f(block, h):\n    return checkpoint(block, h.detach())\n"
    grad = (
        CKPT + "def f(block):\n    x = torch.randn(2, 3, requires_grad=True)\n"
        "    return checkpoint(block, x, use_reentrant=True)\n"
    )
    assert lines(fresh, "GL405") == [(5, "warning")]
    assert lines(detached, "GL405") == [(4, "warning")]
    assert findings(grad, "GL405") == []


def test_gl405_module_forward_input_decided_by_the_instance_calls() -> None:
    template = (
        CKPT
        + "class Net(torch.nn.Module):\n"
        + "    def forward(self, x):\n"
        + "        return checkpoint(self.block, x, use_reentrant=True)\n\n"
        + "def main():\n"
        + "    net = Net()\n"
        + "    batch = {batch}\n"
        + "    return net(batch)\n"
    )
    assert lines(template.format(batch="torch.randn(2, 3)"), "GL405") == [(5, "warning")]
    assert findings(template.format(batch="torch.randn(2, 3, requires_grad=True)"), "GL405") == []
    assert findings(template.format(batch="torch.randn(2, 3).requires_grad_()"), "GL405") == []
    passed_on = template.format(batch="torch.randn(2, 3)").replace("return net(batch)", "return run(net, batch)")
    assert findings(passed_on, "GL405") == []


def test_gl405_missing_keyword_is_information_with_keyword_fixes() -> None:
    source = CKPT + "def f(block, x):\n    return checkpoint(block, x,)\n"
    (finding,) = findings(source, "GL405")
    assert finding.severity is Severity.INFORMATION
    kinds = [fix.kind for fix in finding.fixes]
    assert kinds == ["add_keyword", "replace_text"]
    assert finding.fixes[0].keyword == "use_reentrant" and finding.fixes[0].value == "False"
    fixed = apply_replace(source, finding.fixes[1].span, finding.fixes[1].text)
    assert "checkpoint(block, x, use_reentrant=False,)" in fixed


def test_gl405_own_function_named_checkpoint_is_not_torch() -> None:
    source = "def checkpoint(model, store):\n    store['w'] = model\n\ncheckpoint(1, {})\n"
    assert findings(source, "GL405") == []


def test_gl405_a_function_import_names_torch_checkpoint_in_that_function_only() -> None:
    source = (
        "def recompute(block, x):\n"
        "    from torch.utils.checkpoint import checkpoint\n"
        "    return checkpoint(block, x)\n\n"
        "def save(model, checkpoint):\n"
        "    return checkpoint(model, {})\n"
    )
    assert lines(source, "GL405") == [(3, "information")]


def test_gl405_module_spellings() -> None:
    for header, call in [
        ("import torch.utils.checkpoint\n", "torch.utils.checkpoint.checkpoint"),
        ("import torch.utils.checkpoint as cp\n", "cp.checkpoint"),
        ("from torch.utils import checkpoint\n", "checkpoint.checkpoint"),
        ("from torch.utils.checkpoint import checkpoint_sequential as seq\n", "seq"),
    ]:
        args = "(layers, 2, x)" if call == "seq" else "(block, x)"
        source = header + f"def f(block, layers, x):\n    return {call}{args}\n"
        assert lines(source, "GL405") == [(3, "information")], header


# --------------------------------------------------------------------------- GL406


def _save(args: str, extra: str = "") -> str:
    return (
        "import torch\n\n"
        "class Fn(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x, alpha):\n"
        f"        ctx.save_for_backward({args})\n"
        "        return x * alpha\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g, None\n" + extra
    )


@pytest.mark.parametrize("args", ["x, None", "x", "*ctx.tensors", "x, alpha"])
def test_gl406_tensors_none_and_unknowns_are_fine(args: str) -> None:
    assert findings(_save(args), "GL406") == []


@pytest.mark.parametrize("args", ["x, x.shape", "x, x.size()", "x, 0.5", "x, len(x)", "(x, alpha)", "x, x.item()"])
def test_gl406_certain_non_tensors_are_errors(args: str) -> None:
    assert lines(_save(args), "GL406") == [(6, "error")]


def test_gl406_input_filled_with_literals_is_a_warning() -> None:
    assert lines(_save("x, alpha", "y = Fn.apply(torch.ones(2), 0.5)\n"), "GL406") == [(6, "warning")]
    not_only_literals = _save("x, alpha", "y = Fn.apply(torch.ones(2), 0.5)\nz = Fn.apply(torch.ones(2), w)\n")
    assert findings(not_only_literals, "GL406") == []


# --------------------------------------------------------------------------- GL401


def _attr(statement: str, signature: str = "ctx, x, scale", extra: str = "", ret: str = "x * scale") -> str:
    return (
        "import torch\n\n"
        "class Fn(torch.autograd.Function):\n"
        "    @staticmethod\n"
        f"    def forward({signature}):\n"
        "        y = x.exp()\n"
        f"        {statement}\n"
        f"        return {ret}\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g, None\n" + extra
    )


def test_gl401_tensor_input_and_output_are_flagged() -> None:
    assert lines(_attr("ctx.x = x"), "GL401") == [(7, "information")]
    assert lines(_attr("ctx.y = y", ret="y"), "GL401") == [(7, "information")]


@pytest.mark.parametrize(
    ("statement", "signature", "extra"),
    [
        ("ctx.scale = scale", "ctx, x, scale", "out = Fn.apply(torch.ones(2), 0.5)\n"),
        ("ctx.scale = scale", "ctx, x, scale=0.5", ""),
        ("ctx.scale = scale", "ctx, x, scale: float", ""),
        ("ctx.y = y", "ctx, x, scale", ""),  # an intermediate, not returned
        ("ctx.shape = x.shape", "ctx, x, scale", ""),
        ("ctx.mask = x > 0", "ctx, x, scale", ""),
    ],
)
def test_gl401_non_tensors_and_intermediates_are_fine(statement: str, signature: str, extra: str) -> None:
    assert findings(_attr(statement, signature, extra), "GL401") == []


def test_gl401_module_input_is_not_a_tensor() -> None:
    source = textwrap.dedent("""
        import torch

        class RunModule(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, module):
                ctx.module = module
                ctx.weight_shape = module.weight.shape
                return module(x)

            @staticmethod
            def backward(ctx, g):
                return g, None
        """)
    assert findings(source, "GL401") == []


def test_gl401_objects_with_attributes_are_not_tensors() -> None:
    source = textwrap.dedent("""
        import torch
        import torch.distributed as dist

        class Sync(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, group, meta, mesh: "DeviceMesh"):
                ctx.group = group
                ctx.meta = meta
                ctx.mesh = mesh
                dist.all_reduce(x, group=group)
                size = dist.get_world_size(group)
                return x * meta.scale / size

            @staticmethod
            def backward(ctx, g):
                return g, None, None, None
        """)
    assert findings(source, "GL401") == []


def test_gl401_input_without_tensor_evidence_is_not_flagged() -> None:
    source = _attr("ctx.scale = scale", ret="y * 2")
    assert findings(source, "GL401") == []


def test_gl401_fix_saves_and_reads_back() -> None:
    source = textwrap.dedent("""
        import torch

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(w)
                y = x * w
                ctx.y = y
                return y

            @staticmethod
            def backward(ctx, g):
                (w,) = ctx.saved_tensors
                return g * w, g * ctx.y
        """)
    fixed = fix_all(source, "GL401")
    assert "ctx.save_for_backward(w, y)" in fixed and "w, y = ctx.saved_tensors" in fixed
    assert "ctx.y" not in fixed
    assert fixed.index("y = x * w") < fixed.index("ctx.save_for_backward(w, y)")


# --------------------------------------------------------------------------- GL403


def _grad(body: str) -> str:
    return (
        "import torch\nimport torch.nn.functional as F\n\n"
        "class Fn(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return x * 2\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad_output):\n" + textwrap.indent(textwrap.dedent(body), "        ")
    )


@pytest.mark.parametrize(
    "body",
    [
        "grad_output[grad_output < 0] = 0\nreturn grad_output\n",
        "grad_output *= 2\nreturn grad_output\n",
        "grad_output.mul_(2)\nreturn grad_output\n",
        "g = grad_output\ng.add_(1)\nreturn g\n",
        "flat = grad_output.view(-1)\nflat.zero_()\nreturn grad_output\n",
        "torch.relu_(grad_output)\nreturn grad_output\n",
        "torch.mul(grad_output, 2, out=grad_output)\nreturn grad_output\n",
        "return F.relu(grad_output, inplace=True)\n",
        "grad_output[:, 0] += 1\nreturn grad_output\n",
        "if ctx.flag:\n    grad_output.mul_(2)\nreturn grad_output\n",
    ],
)
def test_gl403_inplace_on_gradient_is_flagged(body: str) -> None:
    assert [f.severity for f in findings(_grad(body), "GL403")] == [Severity.WARNING]


@pytest.mark.parametrize(
    "body",
    [
        "g = grad_output.clone()\ng[g < 0] = 0\nreturn g\n",
        "grad_output = grad_output * 2\ngrad_output.mul_(2)\nreturn grad_output\n",
        "g = grad_output[grad_output > 0]\ng.mul_(2)\nreturn grad_output\n",
        "if ctx.flag:\n    grad_output = grad_output.clone()\ngrad_output.mul_(2)\nreturn grad_output\n",
        "for _ in range(2):\n    grad_output = grad_output * 2\n    grad_output.mul_(2)\nreturn grad_output\n",
        "return grad_output.masked_fill(grad_output < 0, 0)\n",
    ],
)
def test_gl403_new_tensors_and_may_aliases_are_fine(body: str) -> None:
    assert findings(_grad(body), "GL403") == []


def test_gl403_fixes_clone_before_the_statement() -> None:
    source = _grad("grad_output.mul_(2)\nreturn grad_output\n")
    (finding,) = findings(source, "GL403")
    assert [fix.kind for fix in finding.fixes] == ["out_of_place", "replace_text"]
    fixed = apply_replace(source, finding.fixes[1].span, finding.fixes[1].text)
    assert "        grad_output = grad_output.clone()\n        grad_output.mul_(2)\n" in fixed
    assert findings(fixed, "GL403") == []


# --------------------------------------------------------------------------- fixes on the fixtures


def _bad_fixtures() -> list[Path]:
    return fixture_paths(codes=set(GL4))


@pytest.mark.parametrize(
    "path", [p for p in _bad_fixtures() if p.name.startswith("bad_")], ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_fix_spans_lie_in_the_source(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    rows = source.splitlines()
    for finding in check(source, str(path)):
        if finding.code not in GL4:
            continue
        for fix in finding.fixes:
            for value in (getattr(fix, f.name) for f in fields(fix)):
                if isinstance(value, Span):
                    assert 1 <= value.line <= value.end_line <= len(rows) + 1
                    assert 1 <= value.column <= len(rows[value.line - 1]) + 1
                    if value.end_line <= len(rows):
                        assert value.end_column <= len(rows[value.end_line - 1]) + 1


#: Bad fixtures whose shape has no safe automatic fix (the finding offers none rather than a wrong one).
NO_FIX = {
    "GL401/bad_tuple_assignment_to_ctx.py",  # `ctx.a, ctx.b = a, b`
    "GL401/bad_sigmoid_output_subclass.py",  # read in a closure, backward shared by the base class
    "GL402/bad_extra_non_none_gradient.py",  # which gradient is extra is the author's call
    "GL404/bad_legacy_constructor_arguments.py",  # `Fn(0.2)(x)` and state set in `__init__`: it must move
}
FIXABLE = [p for p in _bad_fixtures() if p.name.startswith("bad_") and f"{p.parent.name}/{p.name}" not in NO_FIX]


@pytest.mark.parametrize("name", sorted(NO_FIX))
def test_unfixable_fixtures_offer_no_fix_for_the_shape(name: str) -> None:
    path = Path(__file__).resolve().parents[1] / "fixtures" / name
    source = path.read_text(encoding="utf-8")
    code = path.parent.name
    marked = load_fixture(path).lines_marked(code)
    unfixed = [f for f in check(source) if f.code == code and f.span.line in marked and first_replace_text(f) is None]
    assert unfixed, f"{name} now gets a fix for every finding: move it out of NO_FIX so the fix is tested"


@pytest.mark.parametrize("path", FIXABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixed_bad_fixture_meets_the_good_runtime_truth(path: Path, tmp_path: Path) -> None:
    """The rule's own replace_text fix turns a bad fixture into one torch treats as good."""
    import oracle.expect_gl4  # noqa: F401 - registers the GL4xx truths
    from oracle.expectations import EXPECTATIONS

    code = path.parent.name
    fixed = fix_all(path.read_text(encoding="utf-8"), code)
    fixed = "\n".join(line.split("  # expect:")[0] for line in fixed.splitlines()) + "\n"
    target = tmp_path / code / f"good_fixed_{path.name[4:]}"
    target.parent.mkdir()
    target.write_text(fixed, encoding="utf-8")
    fixture = load_fixture(target)
    expectation = EXPECTATIONS[code]
    outcome = expectation.run(fixture)
    problems = expectation.check(fixture, outcome)
    assert not problems, f"{problems}\n{outcome.describe()}\n--- fixed source ---\n{fixed}"
