"""The proof behind GL104's fix where the graph was lost in a ``no_grad`` region: unwrap the
``with torch.no_grad():`` block (its body dedented in its place), or drop the
``@torch.no_grad()`` decorator of the function whose result reaches the backward.

Where the break is: the engine records, for a tensor computed while gradients were off,
the statement that computed it (``TensorVal.why_site``). From that statement up to its
function (or the module), the innermost lexical construct that turns gradients off is the
break: a ``with`` whose one item is ``torch.no_grad()``, ``torch.inference_mode()`` or
``torch.set_grad_enabled(False)``, or, when there is none, a ``@torch.no_grad()`` /
``@torch.inference_mode()`` decorator of that function. Names of variables play no part;
what a context means (``no_grad()`` after ``from torch import no_grad``) and what it does
(``inference_mode(False)`` leaves the mode alone) is the semantic layer's answer
(:mod:`graphlife.analysis.semantics.grad`, through ``RuleContext.grad_switches``).

When it is offered -- only when removing that one construct makes the value keep its graph
and changes nothing else the program computes:

1. the construct is the only one that turns gradients off around the statement: no other
   ``no_grad`` region encloses it, in its function or around the calls that reach it (every
   call of the function in the file is checked, up through the callers' callers);
   a grad-mode context whose flag is not a literal refuses the fix (it may turn them off);
2. the ``with`` has exactly that one context manager and no ``as`` target that is read;
3. the region holds nothing whose ``no_grad`` matters for what the program computes:
   no augmented assignment (``p -= lr * p.grad``), no assignment to an attribute or an
   item, no call of an in-place method or function (``name_``), no ``out=``, no
   ``.numpy()`` of a tensor not detached first (raises on a tensor that requires grad), no
   ``backward``, ``grad`` or ``step``; and the engine saw no in-place change made while
   gradients were off on the way through it (a helper called from the block that updates
   weights in place). No such ``.numpy()`` either anywhere in the file outside a ``no_grad``
   region: a value that now keeps its graph could reach it;
4. the region serves nothing else: a decorated function is referenced exactly once in the
   file, by the call whose result reaches the backward; a ``with`` block is at module level,
   or in a function referenced exactly once (by a call), or straight-line code leads from the
   block to the backward in the same body (every run of the block meets the backward).

A decorated helper that is also called elsewhere (training and evaluation share it) gets
the other fix instead, ``move_no_grad_to_callers``: the decorator goes and every call but
those in the backward's own function and loop, before it, is wrapped in
``with torch.no_grad():`` -- each of those calls then computes exactly what it computed
before. Conditions 1 and 3 hold as above; every reference to the helper must be a plain
call that is the whole value of a simple statement, run with gradients on.

Reading the whole file (references, callers) goes through ``RuleContext.read_whole_file``,
which notes every definition and top-level statement as read, so the language server's unit
cache runs the unit again after any edit, as a full analysis would.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from graphlife.analysis.events import InplaceEvent
from graphlife.analysis.rule_api import RuleContext
from graphlife.analysis.semantics import GradSetting, GradSwitch
from graphlife.findings import FixRecipe, MessageTemplate, Related
from graphlife.fixes.proofs.calls import callee_name
from graphlife.recipes import DropDecorator, MoveNoGradToCallers, UnwrapWith

OFF, ON, UNKNOWN_MODE = GradSetting.OFF, GradSetting.ON, GradSetting.UNKNOWN

#: Calls in the region that make its ``no_grad`` matter (besides any ``name_`` in-place call, and
#: ``.numpy()`` on a tensor not detached first).
_GRAD_SENSITIVE_CALLS = frozenset({"backward", "grad", "step", "register_hook"})
#: How far the callers of callers are followed before giving up (no fix).
_MAX_CALLER_DEPTH = 6

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Function = ast.FunctionDef | ast.AsyncFunctionDef

TURNED_OFF_HERE = MessageTemplate("no-grad.turned-off-here", "gradients are turned off here (`{context}`)",
                                  zh_cn="梯度记录在这里被关闭（`{context}`）")
TURNED_OFF_FOR = MessageTemplate("no-grad.turned-off-for", "gradients are turned off for all of `{function}` here",
                                 zh_cn="这里关闭了整个 `{function}` 的梯度记录")
UNWRAP_TITLE = MessageTemplate("fix.unwrap-no-grad", "Keep the graph: run the block without `{context}`",
                               zh_cn="保留计算图：去掉 `{context}`，直接运行这段代码")
DROP_TITLE = MessageTemplate("fix.drop-no-grad-decorator", "Keep the graph: remove `@{decorator}` from `{function}`",
                             zh_cn="保留计算图：去掉 `{function}` 上的 `@{decorator}`")
MOVE_TITLE = MessageTemplate(
    "fix.move-no-grad-to-callers", "Keep the graph: move `@{decorator}` from `{function}` to its evaluation calls",
    zh_cn="保留计算图：把 `@{decorator}` 从 `{function}` 移到它的评估调用处")


@dataclass(frozen=True)
class Break:
    """Where gradients were turned off: a ``with`` statement or a decorator of ``function``."""

    node: ast.With | ast.expr  # the with statement, or the decorator expression
    function: Function | None  # the enclosing function (the decorated one)
    context: ast.expr  # the ``torch.no_grad()`` expression


def _switches(ctx: RuleContext, construct: ast.AST) -> tuple[GradSwitch, ...]:
    """The grad-mode switches of a ``with`` or a function that change the mode (an ``async with``
    has none; ``inference_mode(False)`` changes nothing)."""
    if not isinstance(construct, (ast.With, *_FUNCTIONS)):
        return ()
    return tuple(s for s in ctx.grad_switches(construct) if s.setting is not GradSetting.KEPT)


def _modes(switches: tuple[GradSwitch, ...]) -> list[GradSetting]:
    return [switch.setting for switch in switches]


# --------------------------------------------------------------------------- finding the break


def find_break(ctx: RuleContext, site: ast.AST | None) -> Break | None:
    """The one lexical construct that turned gradients off for ``site`` (a statement the engine
    says ran with gradients off), or ``None`` when there is none, or more than one."""
    if not isinstance(site, ast.stmt):
        return None
    found: Break | None = None
    node: ast.AST = site
    while True:
        parent = ctx.parent(node)
        if parent is None or isinstance(parent, (ast.ClassDef, ast.Lambda)):
            return None
        if isinstance(parent, ast.Module):
            return found
        if isinstance(parent, (ast.With, ast.AsyncWith)) and node in parent.body:
            switches = _switches(ctx, parent)
            modes = _modes(switches)
            if UNKNOWN_MODE in modes or (ON in modes and OFF in modes):
                return None
            if OFF in modes and isinstance(parent, ast.With):
                if found is not None:
                    return None  # gradients are off twice: unwrapping one keeps them off
                context = next(switch.expr for switch in switches if switch.setting is OFF)
                found = Break(parent, None, context)
            elif ON in modes:
                # turned back on outside the break: what encloses this does not matter; inside it,
                # the engine's "off" contradicts the code
                return _with_function(ctx, found, parent)
        if isinstance(parent, _FUNCTIONS):
            decorators = _switches(ctx, parent)
            if UNKNOWN_MODE in _modes(decorators) or len(decorators) > 1:
                return None
            if decorators and decorators[0].setting is OFF:
                if found is not None:
                    return None
                return Break(decorators[0].expr, parent, decorators[0].expr)
            if found is not None:
                return Break(found.node, parent, found.context)
            return None
        node = parent


def _with_function(ctx: RuleContext, found: Break | None, node: ast.AST) -> Break | None:
    if found is None:
        return None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, _FUNCTIONS):
            return Break(found.node, ancestor, found.context)
        if isinstance(ancestor, (ast.ClassDef, ast.Lambda)):
            return None
    return found


# --------------------------------------------------------------------------- what the region holds


def numpy_of_attached(call: ast.Call) -> bool:
    """``t.numpy()`` / ``t.cpu().numpy()``: raises once ``t`` requires grad (``t.detach().numpy()``,
    ``t.data.numpy()`` do not)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "numpy":
        return False
    receiver = func.value
    while isinstance(receiver, (ast.Attribute, ast.Call, ast.Subscript)):
        if isinstance(receiver, ast.Attribute) and receiver.attr in ("detach", "data"):
            return False
        receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
    return True


def grad_sensitive(nodes: Sequence[ast.AST]) -> ast.AST | None:
    """The first node in ``nodes`` whose behaviour depends on gradients being off (see module doc)."""
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.AugAssign):
                return node
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for part in ast.walk(target):
                        if isinstance(part, (ast.Attribute, ast.Subscript)) and isinstance(part.ctx, ast.Store):
                            return node
            if isinstance(node, ast.Call):
                name = callee_name(node)
                in_place = name is not None and name.endswith("_") and not name.startswith("_")
                if in_place or name in _GRAD_SENSITIVE_CALLS:
                    return node
                if numpy_of_attached(node):
                    return node
                if any(kw.arg == "out" for kw in node.keywords):
                    return node
    return None


# --------------------------------------------------------------------------- engine: in-place writes with gradients off


def note_inplace(event: InplaceEvent, ctx: RuleContext) -> None:
    """Remember the statements on the way to an in-place change made while gradients were off
    (per unit, kept by the engine: ``RuleContext.note_write_without_grad``): a block or function
    they pass through holds code whose ``no_grad`` matters."""
    if ctx.grad_mode(event.state).enabled is True:
        return
    ctx.note_write_without_grad()


# --------------------------------------------------------------------------- who else runs the region


class _File:
    """The whole file, read once per question: references to functions by name."""

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx
        self.tree = ctx.read_whole_file()

    def references(self, name: str) -> Sequence[ast.AST]:
        """Every ``name`` read or written, every ``.name`` attribute and ``"name"`` string in the
        file (definitions aside)."""
        return self.ctx.mentions(name)

    def called_once(self, func: Function) -> ast.Call | None:
        """The one call of ``func`` when the file mentions its name exactly once, as a callee."""
        refs = self.references(func.name)
        if len(refs) != 1:
            return None
        ref = refs[0]
        call = self.ctx.parent(ref)
        if not isinstance(call, ast.Call) or call.func is not ref:
            return None
        if isinstance(ref, ast.Attribute) or (isinstance(ref, ast.Name) and isinstance(ref.ctx, ast.Load)):
            return call
        return None

    def numpy_outside_no_grad(self, region: ast.AST) -> bool:
        """A ``.numpy()`` of a tensor not detached first, outside every ``no_grad`` region but
        ``region`` (the one the fix removes): a tensor that keeps its graph may reach it and raise."""
        return any(
            numpy_of_attached(call) and not self._under_no_grad(call, region) for call in self.ctx.file_calls()
        )

    def _under_no_grad(self, node: ast.AST, region: ast.AST) -> bool:
        current = node
        while True:
            parent = self.ctx.parent(current)
            if parent is None or isinstance(parent, ast.Module):
                return False
            if parent is not region:
                if isinstance(parent, ast.With) and OFF in _modes(_switches(self.ctx, parent)):
                    return True
                if isinstance(parent, _FUNCTIONS):
                    return OFF in _modes(_switches(self.ctx, parent))
            elif isinstance(parent, _FUNCTIONS):
                return False
            current = parent

    def runs_with_grad(self, node: ast.AST, depth: int = 0, seen: frozenset[int] = frozenset()) -> bool:
        """No lexical ``no_grad`` region encloses ``node``, nor any call of its function in the file,
        up through the callers (a function the file never calls starts with gradients on)."""
        if depth > _MAX_CALLER_DEPTH:
            return False
        current = node
        while True:
            parent = self.ctx.parent(current)
            if parent is None or isinstance(parent, (ast.ClassDef, ast.Lambda)):
                return False
            if isinstance(parent, ast.Module):
                return True
            if isinstance(parent, (ast.With, *_FUNCTIONS)):
                modes = _modes(_switches(self.ctx, parent))
                if UNKNOWN_MODE in modes or OFF in modes:
                    return False
                if ON in modes:
                    return True
            if isinstance(parent, _FUNCTIONS):
                if id(parent) in seen:
                    return False  # recursion: give up
                refs = [r for r in self.references(parent.name) if not isinstance(r, ast.Constant)]
                if len(refs) != len(self.references(parent.name)):
                    return False  # named in a string: called in ways the file does not show
                return all(self.runs_with_grad(ref, depth + 1, seen | {id(parent)}) for ref in refs)
            current = parent


def _straight_line_to(ctx: RuleContext, with_stmt: ast.With, backward_stmt: ast.stmt) -> bool:
    """The backward statement follows the block in the same body, with only simple statements
    that do not jump between them: every run of the block meets the backward."""
    parent = ctx.parent(with_stmt)
    if parent is None or ctx.parent(backward_stmt) is not parent:
        return False
    for field in ("body", "orelse", "finalbody"):
        body = getattr(parent, field, None)
        if isinstance(body, list) and with_stmt in body and backward_stmt in body:
            i, j = body.index(with_stmt), body.index(backward_stmt)
            if j <= i:
                return False
            between = body[i + 1 : j]
            return all(_simple(s) for s in between)
    return False


def _simple(stmt: ast.stmt) -> bool:
    """A statement that neither jumps nor holds other statements."""
    return isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass, ast.Delete, ast.Assert))


def _as_target_unused(with_stmt: ast.With, scope: ast.AST) -> bool:
    target = with_stmt.items[0].optional_vars
    if target is None:
        return True
    if not isinstance(target, ast.Name):
        return False
    return not any(
        isinstance(node, ast.Name) and node.id == target.id and node is not target for node in ast.walk(scope)
    )


# --------------------------------------------------------------------------- the fix


def no_grad_fixes(
    ctx: RuleContext, site: ast.AST | None, backward_stmt: ast.stmt
) -> tuple[list[Related], list[FixRecipe]]:
    """Related places (the region that turned gradients off) and the fix that removes it, when proven."""
    found = find_break(ctx, site)
    if found is None:
        return [], []
    context_text = ctx.text(found.context)
    if isinstance(found.node, ast.With):
        related = [Related(ctx.span(found.context), TURNED_OFF_HERE(context=context_text))]
        return related, _unwrap(ctx, found, found.node, backward_stmt)
    if found.function is None:
        return [], []  # a decorator always has its function
    related = [Related(ctx.span(found.context), TURNED_OFF_FOR(function=found.function.name))]
    return related, _drop(ctx, found, found.function) or _move_to_callers(ctx, found, found.function, backward_stmt)


def _unwrap(ctx: RuleContext, found: Break, with_stmt: ast.With, backward_stmt: ast.stmt) -> list[FixRecipe]:
    if len(with_stmt.items) != 1:
        return []
    if grad_sensitive(with_stmt.body) is not None or ctx.written_without_grad([with_stmt]):
        return []
    scope = found.function or ctx.read_whole_file()  # at module level, the whole file is the `as` name's scope
    if not _as_target_unused(with_stmt, scope):
        return []
    file = _File(ctx)
    if file.numpy_outside_no_grad(with_stmt):
        return []
    if found.function is not None:
        call = file.called_once(found.function)
        if call is not None:
            if not file.runs_with_grad(call):
                return []
        elif not (_straight_line_to(ctx, with_stmt, backward_stmt) and file.runs_with_grad(with_stmt)):
            return []
    return [UnwrapWith(title=UNWRAP_TITLE(context=ctx.text(found.context)),
                       block=ctx.span(with_stmt), unused_as=with_stmt.items[0].optional_vars is not None)]


def _drop(ctx: RuleContext, found: Break, func: Function) -> list[FixRecipe]:
    if grad_sensitive(func.body) is not None or ctx.written_without_grad(func.body):
        return []
    file = _File(ctx)
    call = file.called_once(func)
    if call is None or not file.runs_with_grad(call) or file.numpy_outside_no_grad(func):
        return []
    return [DropDecorator(title=DROP_TITLE(decorator=ctx.text(found.context), function=func.name),
                          decorator=ctx.span(found.context))]


def _move_to_callers(ctx: RuleContext, found: Break, func: Function, backward_stmt: ast.stmt) -> list[FixRecipe]:
    """A ``@torch.no_grad()`` helper called for training and for evaluation: the decorator goes,
    and every call but those on the way to the backward runs in ``with torch.no_grad():``
    instead, so each of those computes exactly what it computed before.

    The calls kept without ``no_grad`` are those in the backward's own function (or module
    level) and loop, before it; every reference to the helper must be a plain call that is
    the whole value of a simple statement starting its line, where gradients are on."""
    if grad_sensitive(func.body) is not None or ctx.written_without_grad(func.body):
        return []
    file = _File(ctx)
    if file.numpy_outside_no_grad(func):
        return []
    home = _home(ctx, backward_stmt)
    training: list[ast.stmt] = []
    evaluation: list[ast.stmt] = []
    for ref in file.references(func.name):
        call = ctx.parent(ref)
        if not (isinstance(ref, ast.Name) and isinstance(ref.ctx, ast.Load) and isinstance(call, ast.Call)
                and call.func is ref):
            return []
        stmt = ctx.parent(call)
        if not (isinstance(stmt, (ast.Assign, ast.Expr)) and stmt.value is call) or not file.runs_with_grad(call):
            return []
        if _home(ctx, stmt) == home and stmt.lineno < backward_stmt.lineno:
            training.append(stmt)
        else:
            evaluation.append(stmt)
    if not training or not evaluation:
        return []
    return [MoveNoGradToCallers(
        title=MOVE_TITLE(decorator=ctx.text(found.context), function=func.name),
        decorator=ctx.span(found.context), callers=tuple(ctx.span(stmt) for stmt in evaluation),
    )]


def _home(ctx: RuleContext, stmt: ast.stmt) -> ast.AST | None:
    """The innermost loop or function around ``stmt`` (``None``: module level, outside loops)."""
    for ancestor in ctx.ancestors(stmt):
        if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.While, *_FUNCTIONS)):
            return ancestor
    return None
