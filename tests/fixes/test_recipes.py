"""Each recipe on small realistic snippets: the exact edit, comments kept, idempotence.

The snippets go through the real checker, so a test also proves the rule and the
recipe agree on the shape (a recipe that stops matching its rule's finding fails here).
"""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from graphlife.checker import check
from graphlife.findings import Finding, FixRecipe, Severity, Span
from graphlife.fixes import compute_fixes, fix_source
from graphlife.fixes.apply import apply_edits
from graphlife.recipes import (
    AddKeyword,
    AutogradGrad,
    CarriedName,
    CloneTensor,
    DetachCarriedState,
    DetachExpression,
    DetachRequiresGrad,
    DropDecorator,
    DropKeyword,
    InferenceModeToNoGrad,
    InsertBefore,
    LeafAfterConversion,
    MergeBackwards,
    OutOfPlace,
    ReplaceText,
    RetainGraph,
    UnwrapWith,
    WrapNoGrad,
)


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _finding(*recipes: FixRecipe) -> Finding:
    return Finding("GL000", "test", Severity.ERROR, Span(1, 1, 1, 2), "m", (), tuple(recipes))


class _AcceptAll:
    """The recipes' own shape checks, without the engine's verdict on the fixed text (the
    snippets here are fragments the engine has no finding on; tests/fixes/test_verify.py
    tests the verdict)."""

    def accepts(self, finding: Finding, fixed: str, edits: object) -> bool:
        return True


def _offered(finding: Finding, source: str) -> list:
    return compute_fixes(finding, source, verifier=_AcceptAll())  # type: ignore[arg-type]


def _apply_first(source: str, *recipes: FixRecipe) -> str | None:
    fixes = _offered(_finding(*recipes), source)
    return apply_edits(source, fixes[0].edits) if fixes else None


HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def test_detach_carried_state_from_checker_keeps_comments_and_is_idempotent():
    source = HEADER + _src('''
        rnn = nn.GRUCell(4, 8)
        opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
        hidden = torch.zeros(2, 8)
        for x in torch.randn(3, 2, 4):
            # one step of truncated BPTT
            hidden = rnn(x, hidden)  # carried
            loss = hidden.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        ''')
    fixed = fix_source(source)
    block = "    # one step of truncated BPTT\n    hidden = hidden.detach()\n    hidden = rnn(x, hidden)  # carried\n"
    assert block in fixed
    assert fix_source(fixed) == fixed
    assert not [f for f in check(fixed) if f.code == "GL101"]


def test_detach_carried_state_tuple_and_maybe_none_forms():
    source = _src('''
        state = None
        for x in xs:
            out, state = lstm(x, state)
        ''')
    loop = Span(2, 1, 3, 32)
    tuple_fix = DetachCarriedState(title="t", loop=loop,
                                   targets=(CarriedName("state", is_tuple=True, maybe_none=True),))
    assert _apply_first(source, tuple_fix) == _src('''
        state = None
        for x in xs:
            if state is not None:
                state = tuple(t.detach() for t in state)
            out, state = lstm(x, state)
        ''')


def test_detach_carried_state_refuses_a_name_unbound_before_the_loop():
    source = "for x in xs:\n    logits, state = model(x, state)\n    logits.sum().backward()\n"
    recipe = DetachCarriedState(title="t", loop=Span(1, 1, 3, 28), targets=(CarriedName("logits"),))
    assert _offered(_finding(recipe), source) == []


@pytest.mark.parametrize(("line", "expected"), [
    ("    probs += eps  # keep", "    probs = probs + eps  # keep"),
    ("    action *= self.max_action", "    action = action * self.max_action"),
    ("    x *= a + b", "    x = x * (a + b)"),
    ("    x -= lr * g", "    x = x - lr * g"),
    ("    x.add_(noise_std * torch.randn_like(x))", "    x = x.add(noise_std * torch.randn_like(x))"),
    ("    probs.clamp_(EPS, 1 - EPS)", "    probs = probs.clamp(EPS, 1 - EPS)"),
    ("    torch.relu_(h)", "    h = torch.relu(h)"),
    ("    h = F.relu(h, inplace=True)", "    h = F.relu(h)"),
])
def test_out_of_place_forms(line, expected):
    header = "def f(x, h, probs, eps, a, b, lr, g, noise_std, EPS, self, action):\n"
    source = f"{header}{line}\n"
    span = Span(2, 5, 2, len(line.split("  #")[0]) + 1)
    recipe = OutOfPlace(title="t", stmt=span)
    assert _apply_first(source, recipe) == f"{header}{expected}\n"


def test_out_of_place_setitem_clones_first_and_constructions_drop_inplace():
    source = "def f(scores, mask):\n    scores[mask] = 0.0\n"
    fixed = _apply_first(source, OutOfPlace(title="t", stmt=Span(2, 5, 2, 23)))
    assert fixed == "def f(scores, mask):\n    scores = scores.clone()\n    scores[mask] = 0.0\n"
    source = "net = nn.Sequential(\n    nn.Linear(2, 2),\n    nn.LeakyReLU(0.2, True),  # act\n)\n"
    span = Span(3, 5, 3, 28)
    fixed = _apply_first(source, OutOfPlace(title="t", stmt=span, construction=span))
    assert fixed == "net = nn.Sequential(\n    nn.Linear(2, 2),\n    nn.LeakyReLU(0.2),  # act\n)\n"
    source = "act = nn.ReLU(inplace=True)\n"
    span = Span(1, 7, 1, 28)
    fixed = _apply_first(source, OutOfPlace(title="t", stmt=span, construction=span))
    assert fixed == "act = nn.ReLU()\n"


def test_out_of_place_refuses_shapes_without_an_out_of_place_twin():
    shapes = (("    out['w'].masked_fill_(m, 0.0)", 34), ("    gate.zero_()", 17), ("    y = self.drop(y)", 21))
    for line, end in shapes:
        source = f"def f(out, m, gate, self, y):\n{line}\n"
        assert _offered(_finding(OutOfPlace(title="t", stmt=Span(2, 5, 2, end))), source) == []


def test_wrap_no_grad_indents_like_neighbours_and_keeps_comments():
    source = HEADER + _src('''
        w = torch.randn(3, requires_grad=True)
        for _ in range(2):
            w.sum().backward()
            w -= 0.1 * w.grad  # sgd
            w.grad = None
        ''')
    fixed = fix_source(source)
    assert "    with torch.no_grad():\n        w -= 0.1 * w.grad  # sgd\n    w.grad = None\n" in fixed
    assert fix_source(fixed) == fixed
    assert not [f for f in check(fixed) if f.code == "GL103"]


def test_wrap_no_grad_needs_torch_imported_by_that_name():
    source = "import torch as th\nw = th.ones(2, requires_grad=True)\nw.add_(1)\n"
    assert _offered(_finding(WrapNoGrad(title="t", stmt=Span(3, 1, 3, 10))), source) == []
    source = "import numpy as torch\nw = th.ones(2, requires_grad=True)\nw.add_(1)\n"
    assert _offered(_finding(WrapNoGrad(title="t", stmt=Span(3, 1, 3, 10))), source) == []
    guarded = "try:\n    import torch\nexcept ImportError:\n    raise\n"
    guarded += "w = torch.ones(2, requires_grad=True)\nw.add_(1)\n"
    (fix,) = _offered(_finding(WrapNoGrad(title="t", stmt=Span(6, 1, 6, 10))), guarded)
    assert fix.edits[0].new_text.startswith("with torch.no_grad():")


def test_detach_expression_and_retain_graph():
    source = "d_fake = D(fake)  # disc\n"
    assert _apply_first(source, DetachExpression(title="t", expr=Span(1, 12, 1, 16))) == \
        "d_fake = D(fake.detach())  # disc\n"
    source = "l = F.mse_loss(value, y)\n"
    assert _offered(_finding(DetachExpression(title="t", expr=Span(1, 16, 1, 21))), source) == []
    source = "loss.backward()\nloss.backward()\n"
    assert _apply_first(source, RetainGraph(title="t", call=Span(1, 1, 1, 16))) == \
        "loss.backward(retain_graph=True)\nloss.backward()\n"
    source = "loss.backward(gradient=g)\n"
    assert _apply_first(source, RetainGraph(title="t", call=Span(1, 1, 1, 26))) == \
        "loss.backward(gradient=g, retain_graph=True)\n"


def test_merge_backwards_only_for_adjacent_siblings():
    source = "for b in bs:\n    loss_a.backward()\n    loss_b.backward()  # second\n    opt.step()\n"
    recipe = MergeBackwards(title="t", first=Span(2, 5, 2, 22), second=Span(3, 5, 3, 22), first_root="loss_a",
                            second_root="loss_b")
    assert _apply_first(source, recipe) == "for b in bs:\n    (loss_a + loss_b).backward()  # second\n    opt.step()\n"
    apart = "loss_a.backward()\nx = 1\nloss_b.backward()\n"
    recipe = MergeBackwards(title="t", first=Span(1, 1, 1, 18), second=Span(3, 1, 3, 18), first_root="loss_a",
                            second_root="loss_b")
    assert _offered(_finding(recipe), apart) == []


@pytest.mark.parametrize(("stmt", "flag", "expected"), [
    ("x_adv.requires_grad = True", True, "x_adv = x_adv.detach().requires_grad_()"),
    ("x_adv.requires_grad = False", False, "x_adv = x_adv.detach()"),
    ("x_adv.requires_grad_(False)", False, "x_adv = x_adv.detach()"),
    ("x_adv.requires_grad_(requires_grad=False)", False, "x_adv = x_adv.detach()"),
])
def test_detach_requires_grad(stmt, flag, expected):
    source = f"def f(x_adv):\n    {stmt}  # flag\n"
    recipe = DetachRequiresGrad(title="t", stmt=Span(2, 5, 2, 5 + len(stmt)), target="x_adv", flag=flag)
    assert _apply_first(source, recipe) == f"def f(x_adv):\n    {expected}  # flag\n"


def test_leaf_after_conversion_inference_mode_and_clone():
    source = "w = torch.randn(3, requires_grad=True) * 0.01\n"
    assert _apply_first(source, LeafAfterConversion(title="t", expr=Span(1, 5, 1, 46))) == \
        "w = (torch.randn(3) * 0.01).requires_grad_()\n"
    source = "w = torch.randn(3, requires_grad=True).double()\n"
    assert _apply_first(source, LeafAfterConversion(title="t", expr=Span(1, 5, 1, 48))) == \
        "w = torch.randn(3).double().requires_grad_()\n"
    source = "with torch.inference_mode():  # cache\n    f = enc(x)\n"
    assert _apply_first(source, InferenceModeToNoGrad(title="t", item=Span(1, 6, 1, 28))) == \
        "with torch.no_grad():  # cache\n    f = enc(x)\n"
    source = "loss = F.mse_loss(p, t * 2)\n"
    assert _apply_first(source, CloneTensor(title="t", expr=Span(1, 22, 1, 27))) == \
        "loss = F.mse_loss(p, (t * 2).clone())\n"


def test_generic_recipes():
    source = "y = model(x)\nloss = y.sum()\n"
    insert = InsertBefore(title="t", anchor=Span(2, 1, 2, 15), code="y.retain_grad()")
    assert _apply_first(source, insert) == "y = model(x)\ny.retain_grad()\nloss = y.sum()\n"
    source = "out = checkpoint(f, x)\n"
    keyword = AddKeyword(title="t", call=Span(1, 7, 1, 23), keyword="use_reentrant", value="False")
    assert _apply_first(source, keyword) == \
        "out = checkpoint(f, x, use_reentrant=False)\n"
    source = "loss.backward(retain_graph=True)\n"
    drop = DropKeyword(title="t", call=Span(1, 1, 1, 33), keyword="retain_graph")
    assert _apply_first(source, drop) == "loss.backward()\n"
    assert _apply_first(source, ReplaceText(title="t", span=Span(1, 1, 1, 5), text="total")) == \
        "total.backward(retain_graph=True)\n"


def test_the_first_safe_fix_is_preferred_and_a_recipe_without_edits_is_skipped():
    source = "loss.backward()\nloss.backward()\n"
    fixes = _offered(_finding(FixRecipe(title="nothing to do"),
                              RetainGraph(title="keep", call=Span(1, 1, 1, 16)),
                              ReplaceText(title="rename", span=Span(1, 1, 1, 5), text="total")), source)
    assert [(f.title, f.preferred, f.safe) for f in fixes] == [("keep", False, False), ("rename", True, True)]


def test_fix_source_leaves_a_file_with_a_syntax_error_unchanged():
    source = HEADER + "w = torch.ones(2, requires_grad=True)\nw += 1\ndef broken(:\n"
    assert fix_source(source) == source


def test_shared_part_prefers_merged_backward_over_detach():
    source = "shared = enc(x)\nla = ha(shared).sum()\nlb = hb(shared).sum()\nla.backward()\nlb.backward()\n"
    fixes = _offered(_finding(
        DetachExpression(title="detach", expr=Span(2, 9, 2, 15)),
        MergeBackwards(title="merge", first=Span(4, 1, 4, 14), second=Span(5, 1, 5, 14), first_root="la",
                       second_root="lb"),
    ), source)
    assert [f.title for f in fixes] == ["merge"]
    assert apply_edits(source, fixes[0].edits).endswith("lb = hb(shared).sum()\n(la + lb).backward()\n")


# --------------------------------------------------------------------------- autograd_grad (GL204)

_GL204_HEADER = (
    HEADER + "torch.manual_seed(0)\nnet = nn.Linear(3, 1)\nsgd = torch.optim.SGD(net.parameters(), lr=0.1)\n"
)


def _gl204(source: str) -> list:
    return [f for f in check(source) if f.code == "GL204"]


def _gl204_fix(source: str) -> str:
    """The fixed source, after checking the fix is offered, idempotent, and ends the finding."""
    (finding,) = _gl204(source)
    assert [r.kind for r in finding.fixes] == ["autograd_grad"]
    fixed = fix_source(source)
    assert fixed != source and fix_source(fixed) == fixed
    assert not _gl204(fixed)
    return fixed


def test_autograd_grad_replaces_the_input_gradient_read_and_keeps_comments():
    source = _GL204_HEADER + _src('''
        for _ in range(2):
            inp = torch.randn(4, 3, requires_grad=True)
            objective = net(inp).sum()
            objective.backward(create_graph=True)  # keep me
            smooth = inp.grad.pow(2).sum()  # and me
            sgd.zero_grad()
            (objective + smooth).backward()
            sgd.step()
        ''')
    fixed = _gl204_fix(source)
    assert (
        "    (inp_grad,) = torch.autograd.grad(objective, inp, create_graph=True)  # keep me\n"
        "    smooth = inp_grad.pow(2).sum()  # and me\n"
        "    sgd.zero_grad()\n"
        "    (objective + smooth).backward()\n"
    ) in fixed


def test_autograd_grad_adds_the_loss_to_the_next_backward_when_the_step_needs_its_gradients():
    source = _GL204_HEADER + _src('''
        for _ in range(2):
            inp = torch.randn(4, 3, requires_grad=True)
            sgd.zero_grad()
            objective = net(inp).pow(2).sum()
            objective.backward(create_graph=True)
            smooth = 0.1 * inp.grad.pow(2).sum()
            smooth.backward()
            sgd.step()
        ''')
    fixed = _gl204_fix(source)
    assert (
        "    (inp_grad,) = torch.autograd.grad(objective, inp, create_graph=True)\n"
        "    smooth = 0.1 * inp_grad.pow(2).sum()\n"
        "    (objective + smooth).backward()\n"
    ) in fixed


@pytest.mark.parametrize(("read", "expected"), [
    # the variable only reads .grad: the comprehension walks the gradients instead
    ("dot = sum((w.grad * d).sum() for w, d in zip(weights, directions))",
     "dot = sum((w_grad * d).sum() for w_grad, d in zip(grads, directions))"),
    ("norms = [w.grad.norm() for w in weights]", "norms = [w_grad.norm() for w_grad in grads]"),
    # the variable is used for more than its .grad: the comprehension walks both
    ("fast = [w - 0.1 * w.grad for w in weights]", "fast = [w - 0.1 * w_grad for w, w_grad in zip(weights, grads)]"),
    ("fast = [w - s * w.grad for w, s in zip(weights, steps)]",
     "fast = [w - s * w_grad for w, s, w_grad in zip(weights, steps, grads)]"),
])
def test_autograd_grad_differentiates_a_list_walked_by_a_comprehension(read, expected):
    source = HEADER + _src(f'''
        a = torch.randn(3, requires_grad=True)
        b = torch.randn(1, requires_grad=True)
        weights = [a, b]
        directions = [torch.ones(3), torch.ones(1)]
        steps = [0.1, 0.2]
        x = torch.randn(5, 3)
        objective = ((x @ a + b) ** 2).sum()
        objective.backward(create_graph=True)
        {read}
        ''')
    fixed = _gl204_fix(source)
    assert "grads = torch.autograd.grad(objective, weights, create_graph=True)\n" + expected + "\n" in fixed


def test_autograd_grad_several_inputs_and_fresh_names():
    source = HEADER + _src('''
        net = nn.Bilinear(3, 3, 1)
        left = torch.randn(4, 3, requires_grad=True)
        right = torch.randn(4, 3, requires_grad=True)
        left_grad = "taken"
        score = net(left, right).sum()
        score.backward(create_graph=True)
        penalty = left.grad.norm() + right.grad.norm()
        print(penalty.item(), left_grad)
        ''')
    fixed = _gl204_fix(source)
    assert ("left_grad2, right_grad = torch.autograd.grad(score, (left, right), create_graph=True)\n"
            "penalty = left_grad2.norm() + right_grad.norm()\n") in fixed


#: (shape that gets the fix, the same shape changed so that the fix would change what the program computes)
_GL204_PAIRS = {
    "the .grad was empty before the backward / it held an earlier backward's gradient": (
        "w = torch.randn(3, requires_grad=True)\nx = torch.randn(4, 3)\n(x @ w).sum().backward()\nw.grad = None\n"
        "loss = (x @ w).pow(2).sum()\nloss.backward(create_graph=True)\nprint(w.grad.norm())\n",
        "w = torch.randn(3, requires_grad=True)\nx = torch.randn(4, 3)\n(x @ w).sum().backward()\n"
        "loss = (x @ w).pow(2).sum()\nloss.backward(create_graph=True)\nprint(w.grad.norm())\n"),
    "the parameters' gradients are reset before the step / only on some paths": (
        "for i in range(2):\n    x = torch.randn(4, 3, requires_grad=True)\n    loss = net(x).sum()\n"
        "    loss.backward(create_graph=True)\n    pen = x.grad.pow(2).sum()\n    sgd.zero_grad()\n"
        "    pen.backward()\n    sgd.step()\n",
        "for i in range(2):\n    x = torch.randn(4, 3, requires_grad=True)\n    loss = net(x).sum()\n"
        "    loss.backward(create_graph=True)\n    pen = x.grad.pow(2).sum()\n    if i % 2:\n        sgd.zero_grad()\n"
        "    pen.backward()\n    sgd.step()\n"),
    "a backward follows that can carry the loss / the step comes first": (
        "for i in range(2):\n    x = torch.randn(4, 3, requires_grad=True)\n    sgd.zero_grad()\n"
        "    loss = net(x).pow(2).sum()\n    loss.backward(create_graph=True)\n    pen = x.grad.pow(2).sum()\n"
        "    pen.backward()\n    sgd.step()\n",
        "for i in range(2):\n    x = torch.randn(4, 3, requires_grad=True)\n    sgd.zero_grad()\n"
        "    loss = net(x).pow(2).sum()\n    loss.backward(create_graph=True)\n    pen = x.grad.pow(2).sum()\n"
        "    sgd.step()\n    pen.backward()\n"),
    "the loss still holds the same tensor at the next backward / it was rebound": (
        "for i in range(2):\n    x = torch.randn(4, 3, requires_grad=True)\n    sgd.zero_grad()\n"
        "    loss = net(x).pow(2).sum()\n    loss.backward(create_graph=True)\n    pen = x.grad.pow(2).sum()\n"
        "    pen.backward()\n    sgd.step()\n",
        "for i in range(2):\n    x = torch.randn(4, 3, requires_grad=True)\n    sgd.zero_grad()\n"
        "    loss = net(x).pow(2).sum()\n    loss.backward(create_graph=True)\n    loss = x.grad.pow(2).sum()\n"
        "    loss.backward()\n    sgd.step()\n"),
    "nothing reads the merged gradients / a later read could differentiate through them": (
        "w = torch.randn(3, requires_grad=True)\nx = torch.randn(4, 3)\nloss = (x @ w).pow(2).sum()\n"
        "loss.backward(create_graph=True)\ng = w.grad.norm()\ng.backward()\n",
        "w = torch.randn(3, requires_grad=True)\nx = torch.randn(4, 3)\nloss = (x @ w).pow(2).sum()\n"
        "loss.backward(create_graph=True)\ng = w.grad.norm()\ng.backward()\nprint(w.grad)\n"),
    "every gradient user is visible / clip_grad_norm_ reads them behind the engine's back": (
        "for i in range(2):\n    x = torch.randn(4, 3, requires_grad=True)\n    sgd.zero_grad()\n"
        "    loss = net(x).pow(2).sum()\n    loss.backward(create_graph=True)\n    pen = x.grad.pow(2).sum()\n"
        "    pen.backward()\n    sgd.step()\n",
        "for i in range(2):\n    x = torch.randn(4, 3, requires_grad=True)\n    sgd.zero_grad()\n"
        "    loss = net(x).pow(2).sum()\n    loss.backward(create_graph=True)\n    pen = x.grad.pow(2).sum()\n"
        "    pen.backward()\n    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)\n    sgd.step()\n"),
    "every .grad read has a known receiver / some tensors come from an unknown library": (
        "w = torch.randn(3, requires_grad=True)\nx = torch.randn(4, 3)\nloss = (x @ w).pow(2).sum()\n"
        "loss.backward(create_graph=True)\nprint(w.grad.norm())\n",
        "import mylib\nw = torch.randn(3, requires_grad=True)\nx = torch.randn(4, 3)\nloss = (x @ w).pow(2).sum()\n"
        "loss.backward(create_graph=True)\nprint(w.grad.norm())\nfor t in mylib.tensors():\n    print(t.grad)\n"),
    "the module runs the code / a function analyzed alone has unknown callers": (
        "def penalty(net, x):\n    x.requires_grad_()\n    loss = net(x).sum()\n    loss.backward(create_graph=True)\n"
        "    return x.grad.pow(2).sum()\n\np = penalty(net, torch.randn(4, 3))\n"
        "sgd.zero_grad()\np.backward()\nsgd.step()\n",
        "def penalty(net, x):\n    x.requires_grad_()\n    loss = net(x).sum()\n    loss.backward(create_graph=True)\n"
        "    return x.grad.pow(2).sum()\n"),
}


@pytest.mark.parametrize("case", sorted(_GL204_PAIRS))
def test_autograd_grad_is_offered_only_where_the_program_computes_the_same(case):
    offered, refused = (_GL204_HEADER + body for body in _GL204_PAIRS[case])
    assert [r.kind for f in _gl204(offered) for r in f.fixes] == ["autograd_grad"], case
    findings = _gl204(refused)
    assert findings, "still reported"
    assert [fix for f in findings for fix in compute_fixes(f, refused)] == [], case


def test_autograd_grad_checks_the_shape_it_edits():
    source = "import torch\nloss.backward(create_graph=True)\ng = x.grad\n"
    recipe = AutogradGrad(title="t", backward=Span(2, 1, 2, 33), root=Span(2, 1, 2, 5), inputs=("x",),
                          sequence=False, reads=(Span(3, 5, 3, 11),))
    assert _apply_first(source, recipe) == \
        "import torch\n(x_grad,) = torch.autograd.grad(loss, x, create_graph=True)\ng = x_grad\n"
    # not `torch`, already rewritten, a read that is not `.grad` of an input: no fix
    renamed = source.replace("import torch\n", "import torch as th\n")
    assert _offered(_finding(recipe), renamed) == []
    done = _apply_first(source, recipe)
    assert done is not None
    assert _offered(_finding(recipe), done) == []
    assert _offered(_finding(replace(recipe, inputs=("y",))), source) == []
    assert _offered(_finding(replace(recipe, reads=(Span(3, 1, 3, 2),))), source) == []


# --------------------------------------------------------------------------- unwrap_with / drop_decorator (GL104)

_GL104_HEADER = HEADER + "torch.manual_seed(0)\nnet = nn.Linear(3, 1)\nx = torch.randn(4, 3)\n"


def _gl104(source: str) -> list:
    return [f for f in check(source) if f.code == "GL104"]


def _run_under_torch(source: str) -> BaseException | None:
    import torch  # noqa: F401 - the snippets import it again for free

    try:
        exec(compile(source, "<snippet>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the test's own snippets
    except Exception as exc:  # noqa: BLE001 - the exception is the observation
        return exc
    return None


def _gl104_fix(source: str, kind: str) -> str:
    """The fixed source, after checking the fix is offered, idempotent, ends the finding, and that
    the original raises under torch while the fixed snippet runs."""
    (finding,) = _gl104(source)
    assert [r.kind for r in finding.fixes] == [kind]
    fixed = fix_source(source)
    assert fixed != source and fix_source(fixed) == fixed
    assert not _gl104(fixed)
    assert isinstance(_run_under_torch(source), RuntimeError)
    assert _run_under_torch(fixed) is None
    return fixed


def test_unwrap_with_from_checker_keeps_comments_and_is_idempotent():
    source = _GL104_HEADER + _src('''
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(2):
            # fast forward
            with torch.inference_mode():  # no autograd here
                # predictions
                pred = net(x)

                loss = (pred - 1.0).pow(2).mean(
                    dim=0,
                ).sum()  # the loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        ''')
    (finding,) = _gl104(source)
    assert [r.message for r in finding.related][-1] == "gradients are turned off here (`torch.inference_mode()`)"
    fixed = _gl104_fix(source, "unwrap_with")
    assert (
        "    # fast forward\n"
        "    # no autograd here\n"
        "    # predictions\n"
        "    pred = net(x)\n"
        "\n"
        "    loss = (pred - 1.0).pow(2).mean(\n"
        "        dim=0,\n"
        "    ).sum()  # the loss\n"
        "    opt.zero_grad()\n"
    ) in fixed


@pytest.mark.parametrize(("block", "expected"), [
    ("with torch.no_grad():\n    loss = net(x).pow(2).mean()\n", "loss = net(x).pow(2).mean()\n"),
    ("with torch.set_grad_enabled(False):\n    loss = net(x).pow(2).mean()\n", "loss = net(x).pow(2).mean()\n"),
    ("with torch.inference_mode(mode=True):\n    loss = net(x).pow(2).mean()\n", "loss = net(x).pow(2).mean()\n"),
    ("from torch import no_grad\nwith no_grad():\n    loss = net(x).pow(2).mean()\n",
     "from torch import no_grad\nloss = net(x).pow(2).mean()\n"),
    ("with torch.no_grad(): loss = net(x).pow(2).mean()  # fast\n", "loss = net(x).pow(2).mean()  # fast\n"),
    ("with torch.no_grad() as unused:\n    loss = net(x).pow(2).mean()\n", "loss = net(x).pow(2).mean()\n"),
])
def test_unwrap_with_forms(block, expected):
    source = _GL104_HEADER + block + "loss.backward()\n"
    assert _gl104_fix(source, "unwrap_with") == _GL104_HEADER + expected + "loss.backward()\n"


def test_drop_decorator_from_checker_keeps_comments_and_other_decorators():
    source = _GL104_HEADER + _src('''
        import functools


        # the value target
        @functools.lru_cache(maxsize=None)
        @torch.no_grad()  # evaluation only
        def objective():
            return net(x).pow(2).mean()


        loss = objective()
        loss.backward()
        ''')
    (finding,) = _gl104(source)
    assert finding.related[-1].message == "gradients are turned off for all of `objective` here"
    fixed = _gl104_fix(source, "drop_decorator")
    assert ("# the value target\n@functools.lru_cache(maxsize=None)\n# evaluation only\ndef objective():\n"
            "    return net(x).pow(2).mean()\n") in fixed


def test_unwrap_with_and_drop_decorator_check_the_shape_they_edit():
    source = "with torch.no_grad(), open(p) as f:\n    y = g(x)\n"
    assert _offered(_finding(UnwrapWith(title="t", block=Span(1, 1, 2, 13))), source) == []
    source = "with torch.no_grad() as g:\n    y = g(x)\n"
    assert _offered(_finding(UnwrapWith(title="t", block=Span(1, 1, 2, 13))), source) == []
    assert _apply_first(source, UnwrapWith(title="t", unused_as=True, block=Span(1, 1, 2, 13))) == \
        "y = g(x)\n"
    source = 'with torch.no_grad():\n    y = f("""a\n    b""")\n'
    assert _offered(_finding(UnwrapWith(title="t", block=Span(1, 1, 3, 10))), source) == []
    source = (
        "def f():\n    if a:\n        with torch.no_grad():\n"
        "            y = g(x)\n# top\n            z = y\n    return z\n"
    )
    assert _apply_first(source, UnwrapWith(title="t", block=Span(3, 9, 6, 18))) == \
        "def f():\n    if a:\n        y = g(x)\n        # top\n        z = y\n    return z\n"
    # a span that is not a `with` / not a decorator: nothing
    assert _offered(_finding(UnwrapWith(title="t", block=Span(2, 5, 7, 13))), source) == []
    source = "class A:\n    @staticmethod\n    @torch.no_grad\n    def f(x):\n        return x\n"
    assert _apply_first(source, DropDecorator(title="t", decorator=Span(3, 6, 3, 19))) == \
        "class A:\n    @staticmethod\n    def f(x):\n        return x\n"
    assert _offered(_finding(DropDecorator(title="t", decorator=Span(4, 5, 5, 17))), source) == []


#: (shape that gets the fix, the same shape changed so that removing the `no_grad` would change what
#: the program computes, or would not give the value a graph)
_GL104_PAIRS = {
    "the block only computes the loss / it also updates the weights in place": (
        "with torch.no_grad():\n    loss = net(x).pow(2).mean()\nloss.backward()\n",
        "with torch.no_grad():\n    loss = net(x).pow(2).mean()\n    for p in net.parameters():\n"
        "        p.mul_(0.99)\nloss.backward()\n"),
    "... / a helper it calls updates the weights in place (seen by the engine)": (
        "def decay(m):\n    return [p.norm() for p in m.parameters()]\n\nwith torch.no_grad():\n"
        "    loss = net(x).pow(2).mean()\n    norms = decay(net)\nloss.backward()\n",
        "def decay(m):\n    for p in m.parameters():\n        p.mul_(0.99)\n\nwith torch.no_grad():\n"
        "    loss = net(x).pow(2).mean()\n    decay(net)\nloss.backward()\n"),
    "... / it accumulates a running sum in place": (
        "with torch.no_grad():\n    loss = net(x).pow(2).mean()\n    total = loss.item()\nloss.backward()\n",
        "total = 0.0\nwith torch.no_grad():\n    loss = net(x).pow(2).mean()\n"
        "    total += loss.item()\nloss.backward()\n"),
    "a detached .numpy() / a .numpy() that raises once the output keeps its graph": (
        "with torch.no_grad():\n    out = net(x)\n    loss = out.pow(2).mean()\n"
        "loss.backward()\nprint(out.detach().numpy())\n",
        "with torch.no_grad():\n    out = net(x)\n    loss = out.pow(2).mean()\n"
        "loss.backward()\nprint(out.cpu().numpy())\n"),
    "the helper runs only for training / it is also the evaluation helper": (
        "def run(m, b):\n    with torch.no_grad():\n"
        "        return m(b).pow(2).mean()\n\nloss = run(net, x)\nloss.backward()\n",
        "def run(m, b):\n    with torch.no_grad():\n        return m(b).pow(2).mean()\n\nprint(run(net, x).item())\n"
        "loss = run(net, x)\nloss.backward()\n"),
    "the decorated function has one call / it is also called for evaluation": (
        "@torch.no_grad()\ndef run(m, b):\n    return m(b).pow(2).mean()\n\nloss = run(net, x)\nloss.backward()\n",
        "@torch.no_grad()\ndef run(m, b):\n    return m(b).pow(2).mean()\n\nprint(run(net, x).item())\n"
        "loss = run(net, x)\nloss.backward()\n"),
    "the only no_grad region / another one encloses the call": (
        "def run(m, b):\n    with torch.no_grad():\n"
        "        return m(b).pow(2).mean()\n\nloss = run(net, x)\nloss.backward()\n",
        "def run(m, b):\n    with torch.no_grad():\n        return m(b).pow(2).mean()\n\nwith torch.no_grad():\n"
        "    loss = run(net, x)\nloss.backward()\n"),
    "the only no_grad region / another one encloses the block": (
        "for _ in range(1):\n    with torch.no_grad():\n        loss = net(x).pow(2).mean()\nloss.backward()\n",
        "with torch.no_grad():\n    for _ in range(1):\n"
        "        with torch.no_grad():\n            loss = net(x).pow(2).mean()\n"
        "loss.backward()\n"),
    "a literal False / a flag (the engine knows it, the edit cannot be sure)": (
        "with torch.set_grad_enabled(False):\n    loss = net(x).pow(2).mean()\nloss.backward()\n",
        "train = False\nwith torch.set_grad_enabled(train):\n    loss = net(x).pow(2).mean()\nloss.backward()\n"),
    "one context manager / two": (
        "with torch.no_grad():\n    loss = net(x).pow(2).mean()\nloss.backward()\n",
        "import contextlib\nwith torch.no_grad(), contextlib.suppress(ValueError):\n    loss = net(x).pow(2).mean()\n"
        "loss.backward()\n"),
    "an `as` target never read / read later": (
        "with torch.no_grad() as mode:\n    loss = net(x).pow(2).mean()\nloss.backward()\n",
        "with torch.no_grad() as mode:\n    loss = net(x).pow(2).mean()\nprint(mode)\nloss.backward()\n"),
    "a function nothing calls: straight-line code to the backward / evaluation returns before it": (
        "def step(model, b):\n    with torch.no_grad():\n"
        "        loss = model(b).pow(2).mean()\n    print(loss.item())\n"
        "    loss.backward()\n",
        "def step(model, b, train):\n    with torch.no_grad():\n"
        "        loss = model(b).pow(2).mean()\n    if not train:\n"
        "        return loss\n    loss.backward()\n"),
    "... / the backward only on some calls": (
        "def step(model, b):\n    with torch.no_grad():\n        loss = model(b).pow(2).mean()\n    loss.backward()\n",
        "def step(model, b, train):\n    with torch.no_grad():\n        loss = model(b).pow(2).mean()\n    if train:\n"
        "        loss.backward()\n"),
}


@pytest.mark.parametrize("case", sorted(_GL104_PAIRS))
def test_no_grad_fix_is_offered_only_where_nothing_else_needs_the_no_grad(case):
    offered, refused = (_GL104_HEADER + body for body in _GL104_PAIRS[case])
    (finding,) = _gl104(offered)
    assert [r.kind for r in finding.fixes] in (["unwrap_with"], ["drop_decorator"]), case
    fixed = fix_source(offered)
    assert fixed != offered and fix_source(fixed) == fixed and not _gl104(fixed), case
    findings = _gl104(refused)
    assert findings, "still reported"
    assert [fix for f in findings for fix in compute_fixes(f, refused)] == [], case
