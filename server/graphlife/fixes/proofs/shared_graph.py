"""The fix for a subgraph two losses share, freed by the first backward (GL101's GAN shape).

Why by the shape of the graph and not by the line: in a GAN step the discriminator's
loss and the generator's loss both go through ``D(fake)``. After ``d_loss.backward()``
that part is freed, and the generator's backward fails. Detaching the value where the
generator reads it would stop the generator from learning; ``retain_graph=True`` keeps
the graph alive but the discriminator's ``step()`` then changes the weights it saved.
What trains each network is: the discriminator sees ``fake.detach()`` (it does not
train the generator), and the generator builds its own ``D(fake)`` after the
discriminator's step. So the fix detaches the input where the first consumer calls the
module and, when the first consumer's output is read again after its backward, makes
those reads a fresh call.
"""

from __future__ import annotations

import ast
from typing import cast

from graphlife.analysis.events import BackwardEvent
from graphlife.analysis.rule_api import RuleContext
from graphlife.analysis.self_reads import items_of_class
from graphlife.analysis.state import Node, State
from graphlife.analysis.values import HeapRef, TensorVal
from graphlife.findings import FixRecipe, MessageTemplate
from graphlife.recipes import DetachExpression, RebuildSharedGraph

DETACH_EARLIER = MessageTemplate("fix.detach-earlier-step", "Use `{expr}.detach()` in the earlier step",
                                 zh_cn="在前一步中改用 `{expr}.detach()`")
REBUILD_TITLE = MessageTemplate(
    "fix.rebuild-shared-graph", "Give `{module}` `{name}.detach()` here and call `{call}` again after the backward",
    zh_cn="在这里给 `{module}` 传入 `{name}.detach()`，并在反向传播之后重新调用 `{call}`")


def shared_graph_fix(event: BackwardEvent, ctx: RuleContext, node: Node, freeing: ast.AST | None) -> FixRecipe | None:
    """The fix for the GAN shape: a module's output whose graph was freed (``d_fake = D(fake)``)
    read again before the failing backward is rebuilt there from a detached input; a name
    whose graph was freed, passed to a module before the freeing backward (``D(fake)``), is
    detached there."""
    if freeing is None:
        return None
    state = event.state
    freeing_line = ctx.line(freeing).number
    failing_line = ctx.line(event.stmt).number
    reaching = [(name, value) for name, value in _tensors(state)
                if node.nid in _closure(ctx, value.grad_fn)
                and (node.nid in value.grad_fn or any(n in state.freed for n in value.grad_fn))]
    if not reaching:
        return None
    # the GAN shape lives in one training step: walking only its function keeps a file
    # with many findings linear (at module level, the walk reads the whole file)
    scope = ctx.enclosing_function(freeing) or ctx.read_whole_file()
    calls = sorted((c for c in ast.walk(scope) if isinstance(c, ast.Call)), key=lambda c: (c.lineno, c.col_offset))
    for name, value in reaching:
        call = value.origin
        if isinstance(call, ast.Call) and _assigned_name(ctx, call) == name and call.lineno <= freeing_line:
            rebuilt = _rebuild(ctx, scope, call, state, freeing_line, failing_line)
            if rebuilt is not None:
                return rebuilt
    for name, value in reaching:
        origin_line = getattr(value.origin, "lineno", 0)
        for call in calls:
            if not origin_line < call.lineno <= freeing_line:
                continue
            for arg in (a for top in call.args for a in _joined(ctx, top)):
                if (isinstance(arg, (ast.Name, ast.Attribute)) and ctx.text(arg) == name
                        and not _later_reads(ctx, scope, call, freeing_line, failing_line)):
                    return DetachExpression(title=DETACH_EARLIER(expr=ctx.text(arg)),
                                            expr=ctx.span(arg))
    return None


def _tensors(state: State) -> list[tuple[str, TensorVal]]:
    """The tensors a name holds (``fake``) or an object's attribute (``self.fake``: a trainer
    keeps the generator's output between its two steps)."""
    found: list[tuple[str, TensorVal]] = []
    for name, value in state.env.items():
        if isinstance(value, TensorVal):
            found.append((name, value))
        elif isinstance(value, HeapRef) and value.oid in state.heap:
            # which attributes hold tensors, not the whole `self` (the language server replays a
            # method after an edit of `__init__` that changed none of them: analysis/self_reads.py)
            found.extend((f"{name}.{attr}", item)
                         for attr, item in items_of_class(state.heap[value.oid].attrs, TensorVal))
    return found


#: Torch functions that join tensors into one input: ``D(torch.cat([real, fake]))`` gives
#: ``D`` the fake through them.
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})


def _joined(ctx: RuleContext, arg: ast.expr) -> list[ast.expr]:
    """``arg``, and the tensors it joins when it is ``torch.cat([...])`` / ``torch.stack([...])``."""
    if (isinstance(arg, ast.Call) and arg.args and isinstance(arg.args[0], (ast.List, ast.Tuple))
            and ctx.qualified_name(arg.func) in _JOINS):
        return [arg, *arg.args[0].elts]
    return [arg]


def _rebuild(ctx: RuleContext, scope: ast.AST, call: ast.Call, state: State, freeing_line: int,
             failing_line: int) -> FixRecipe | None:
    """``v = M(x)`` before the freeing backward and ``v`` read again before the failing one:
    ``M(x.detach())`` there and ``M(x)`` at each later read."""
    reads = _later_reads(ctx, scope, call, freeing_line, failing_line)
    inputs = [a for a in call.args if isinstance(a, ast.Name) and isinstance(state.env.get(a.id), TensorVal)
              and cast(TensorVal, state.env[a.id]).grad_fn]
    if not reads or len(inputs) != 1 or (isinstance(call.func, ast.Attribute) and call.func.attr in _NOT_MODULES):
        return None
    arg = inputs[0]
    changed = _assigned_between(scope, call.lineno, failing_line)
    if arg.id in changed or _names_in(call.func) & changed:
        return None  # the fresh call would see another input or another module
    text = ctx.text(call)
    return RebuildSharedGraph(
        title=REBUILD_TITLE(module=ctx.text(call.func), name=arg.id, call=text),
        detach=ctx.span(arg), reads=tuple(ctx.span(r) for r in reads), call=text,
    )


#: Tensor methods and torch functions are no module whose weights a fresh call would see.
_NOT_MODULES = frozenset({"detach", "clone", "view", "reshape"})


def _output_reused(ctx: RuleContext, scope: ast.AST, call: ast.Call, freeing_line: int, failing_line: int) -> bool:
    return bool(_later_reads(ctx, scope, call, freeing_line, failing_line))


def _later_reads(ctx: RuleContext, scope: ast.AST, call: ast.Call, freeing_line: int,
                 failing_line: int) -> list[ast.Name]:
    """The loads of the name ``call``'s result was bound to, after the freeing backward and up
    to the failing one, while that name still holds it."""
    output = _assigned_name(ctx, call)
    if output is None:
        return []
    if output in _assigned_between(scope, call.lineno + 1, failing_line):
        return []
    return [n for n in ast.walk(scope)
            if isinstance(n, ast.Name) and n.id == output and isinstance(n.ctx, ast.Load)
            and freeing_line < n.lineno <= failing_line]


def _assigned_name(ctx: RuleContext, call: ast.Call) -> str | None:
    parent = ctx.parent(call)
    if isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, ast.Name):
            return target.id
    return None


def _assigned_between(scope: ast.AST, first: int, last: int) -> set[str]:
    names: set[str] = set()
    for n in ast.walk(scope):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and first <= n.lineno <= last:
            names.add(n.id)
    return names


def _names_in(expr: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _closure(ctx: RuleContext, roots: frozenset[int]) -> set[int]:
    _, may = ctx.graph.reach(roots, False)
    return may
