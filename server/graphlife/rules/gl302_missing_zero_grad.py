"""A training loop that steps every iteration and never resets gradients.

## What it does
Follows each parameter's `.grad` through the loop: a backward accumulates into
it, a `step()` uses it, and nothing (`zero_grad()`, `p.grad = None`) resets it
before the next backward. Reports the `step()`. Gradient accumulation (zeroing
every k steps) is fine.

A training-step function that nothing in its file calls (`def train(self,
batch)`, run by another module once per batch) is reported too when it runs a
backward and a step and nothing in it, its class or its module ever resets
those gradients: from its second call on, it has the same bug.

Parameters handed another model's gradient tensor (`global_param._grad =
local_param.grad`, as A3C workers do) are reported too when that tensor is never
reset: the global optimizer's `zero_grad()` only sets their `.grad` to None, and
the local backward keeps adding to the tensor they are given again.

A step fused into the backward (`p.register_post_accumulate_grad_hook(hook)` with
`optimizers[p].step()` in the hook, which torch runs once the backward has added
`p`'s gradient to `p.grad`) is followed too: without `optimizers[p].zero_grad()`
right after it in the hook, the next backward adds to what it already applied.

## Why is this bad?
`backward()` adds to `.grad`. Without a reset, each step uses the sum of every
earlier gradient: the effective learning rate grows and training diverges or
stalls - silently.

## What torch says
Nothing.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Use instead
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Fix safety
Unsafe: `zero_grad()` at the top of the loop changes every step's update (the gradients
no longer accumulate); applied only with `--unsafe-fixes`.

## Fixture line
The `optimizer.step()` call.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import GradShareEvent, StepEvent, UnitEndEvent, ZeroGradEvent
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity
from graphlife.recipes import UNSAFE, InsertAfter, InsertBefore

ZH_CN = Translation(
    """训练循环每轮迭代都执行优化步，却从不重置梯度。

## 它检查什么
在循环中跟踪每个参数的 `.grad`：反向传播向其中累积，`step()` 使用它，而在下一次反向传播之前没有任何操作（`zero_grad()`、`p.grad = None`）重置它。报告那个 `step()`。梯度累积（每 k 步清零一次）没有问题。

本文件中没有任何地方调用的训练步函数（`def train(self, batch)`，由另一个模块每个 batch 调用一次），如果它执行了反向传播和优化步，而它自身、它所在的类和模块都从不重置这些梯度，也会被报告：从第二次调用开始，它就有同样的问题。

参数被交给另一个模型的梯度张量时（`global_param._grad = local_param.grad`，A3C 的 worker 就这样做），如果那个张量从不被重置，也会被报告：全局优化器的 `zero_grad()` 只把参数的 `.grad` 设为 None，而本地的反向传播不断往那个张量里累加，下一次它又被交给参数。

融合进反向传播的优化步（`p.register_post_accumulate_grad_hook(hook)`，钩子中执行 `optimizers[p].step()`；torch 在反向传播把 `p` 的梯度累加到 `p.grad` 之后运行它）也会被跟踪：如果钩子中没有紧接着调用 `optimizers[p].zero_grad()`，下一次反向传播就会累加到它已经用过的梯度上。

## 为什么这是问题？
`backward()` 是往 `.grad` 上累加。不重置的话，每一步用的都是之前所有梯度之和：有效学习率越来越大，训练发散或停滞——而且不报任何错。

## torch 的报错
不报错。

## 示例
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## 改为
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## 修复的安全性
不安全：在循环开头加 `zero_grad()` 会改变每一步的更新量（梯度不再累积）；只在加 `--unsafe-fixes` 时应用。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="c8fb22f5589e",
)

RULE = Rule(
    code="GL302",
    name="missing-zero-grad",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

_SUM = ("so every step applies the sum of all earlier gradients. Call `{optimizer}.zero_grad()` at the top of each "
        "iteration.")
_SUM_ZH = "因此每次优化步用的都是之前所有梯度的累加和。请在每次迭代开头调用 `{optimizer}.zero_grad()`。"
NEVER_RESET = MessageTemplate(
    "GL302.never-reset",
    "Gradients are never reset: `{step}` applies the new gradients on top of the ones `{earlier}` (line {line}) "
    "already used, " + _SUM,
    zh_cn="梯度从未清零：`{step}` 把新的梯度叠加在 `{earlier}`（{line}）已经用过的梯度之上，" + _SUM_ZH,
)
NEVER_RESET_NO_STEP = MessageTemplate(
    "GL302.never-reset-no-step",
    "Gradients are never reset: `{step}` applies the new gradients on top of the ones an earlier step already "
    "used, " + _SUM,
    zh_cn="梯度从未清零：`{step}` 把新的梯度叠加在之前某次优化步已经用过的梯度之上，" + _SUM_ZH,
)

_IN_HOOK = ("so every step applies the sum of all earlier gradients. The step runs in a post-accumulate-grad hook: "
            "call `{optimizer}.zero_grad()` right after it.")
_IN_HOOK_ZH = ("因此每次优化步用的都是之前所有梯度的累加和。"
               "这次优化步在梯度累积后钩子中运行：请紧接着它调用 `{optimizer}.zero_grad()`。")
NEVER_RESET_IN_HOOK = MessageTemplate(
    "GL302.never-reset-in-hook",
    "Gradients are never reset: `{step}` applies the new gradients on top of the ones an earlier backward's step "
    "already used, " + _IN_HOOK,
    zh_cn="梯度从未清零：`{step}` 把新的梯度叠加在之前某次反向传播中的优化步已经用过的梯度之上，" + _IN_HOOK_ZH,
)
AFTER_STEP_TITLE = MessageTemplate(
    "fix.zero-grad-after-step", "Call `{optimizer}.zero_grad()` after the step",
    zh_cn="在优化步之后调用 `{optimizer}.zero_grad()`")


SHARED = MessageTemplate(
    "GL302.shared",
    "Gradients are never reset: `{step}` applies the gradient tensor `{share}` (line {line}) hands to its "
    "parameters, and `zero_grad()` on this optimizer only sets their `.grad` to None, which leaves that tensor as "
    "it was; each backward adds to it, so every step applies the sum of all earlier gradients. Reset the gradients "
    "the backward fills (`zero_grad()` on the model it runs through) before each backward.",
    zh_cn="梯度从未清零：`{step}` 使用的是 `{share}`（{line}）交给其参数的梯度张量，而这个优化器的 `zero_grad()` "
    "只把参数的 `.grad` 设为 None，那个张量保持原样；每次反向传播都往里累加，"
    "所以每次优化步用的都是之前所有梯度的累加和。"
    "请在每次反向传播之前，清零反向传播所填充的梯度（对它经过的模型调用 `zero_grad()`）。",
)
SHARED_HERE = MessageTemplate("GL302.shared-here", "the parameters get this gradient tensor here",
                              zh_cn="参数在此得到这个梯度张量")
CALLED_AGAIN = MessageTemplate(
    "GL302.called-again",
    "Gradients are never reset: `{step}` applies the gradients of `{backward}` (line {line}), and nothing in "
    "`{function}` resets them, so from its second call on each step applies the sum of all earlier gradients. "
    "Call `{optimizer}.zero_grad()` before the backward.",
    zh_cn="梯度从未清零：`{step}` 使用 `{backward}`（{line}）的梯度，而 `{function}` 中没有任何代码清零它们，"
    "所以从第二次调用起，每次优化步用的都是之前所有梯度的累加和。请在反向传播之前调用 `{optimizer}.zero_grad()`。",
)
TOP_OF_LOOP_TITLE = MessageTemplate(
    "fix.zero-grad-top-of-loop", "Call `{optimizer}.zero_grad()` at the top of the loop",
                                    zh_cn="在循环开头调用 `{optimizer}.zero_grad()`")
TOP_OF_CLOSURE_TITLE = MessageTemplate(
    "fix.zero-grad-top-of-closure", "Call `{optimizer}.zero_grad()` at the top of `{closure}`",
    zh_cn="在 `{closure}` 的开头调用 `{optimizer}.zero_grad()`")
BEFORE_BACKWARD_TITLE = MessageTemplate(
    "fix.zero-grad-before-backward", "Call `{optimizer}.zero_grad()` before the backward",
                                        zh_cn="在反向传播之前调用 `{optimizer}.zero_grad()`")
EARLIER_STEP = MessageTemplate("GL302.earlier-step", "an earlier step used these gradients",
                               zh_cn="之前的某次优化步已经用过这些梯度")
ADDS_TO = MessageTemplate("GL302.adds-to", "this backward adds to the gradients", zh_cn="这次反向传播会累加到梯度上")


@dataclass
class GL302State:
    """In a function analyzed alone: the steps that used gradients only its own backward filled,
    and the gradients it resets (``None``: some it could not name; then nothing is reported)."""

    fresh_steps: list[tuple[StepEvent, ast.AST]] = field(default_factory=list)
    zeroed: set[int] | None = field(default_factory=set)
    #: Parameters whose `.grad` was handed another's gradient tensor, and where.
    shared: dict[int, ast.stmt] = field(default_factory=dict)


@RULE.on(GradShareEvent)
def on_grad_share(event: GradShareEvent, ctx: RuleContext) -> None:
    shared = ctx.unit_state(GL302State).shared
    for storage in event.storages:
        shared[storage] = event.stmt


@RULE.on(ZeroGradEvent)
def on_zero_grad(event: ZeroGradEvent, ctx: RuleContext) -> None:
    data = ctx.unit_state(GL302State)
    if event.storages is None or data.zeroed is None:
        data.zeroed = None
    else:
        data.zeroed |= event.storages


@RULE.on(StepEvent)
def on_step(event: StepEvent, ctx: RuleContext) -> None:
    """The step uses gradients a backward added on top of ones an earlier step already used."""
    storages = event.storages
    if not storages:
        return
    statuses = [event.state.grads.get(s) for s in storages]
    backward = statuses[0][1] if statuses[0] is not None else None
    if not ctx.running_loops() and backward is not None and all(
        st is not None and st[0] == "acc" and st[1] is backward for st in statuses
    ):
        ctx.unit_state(GL302State).fresh_steps.append((event, backward))
    if not all(st is not None and st[0] == "acc_stale" for st in statuses):
        return
    shared = ctx.unit_state(GL302State).shared
    if all(s in shared for s in storages):
        first = min((shared[s] for s in storages), key=lambda stmt: (stmt.lineno, stmt.col_offset))
        _report_shared(event, ctx, first)
        return
    earlier_step = statuses[0][1] if statuses[0] is not None else None
    receiver = _optimizer_text(ctx, event.stmt)
    optimizer = receiver or "optimizer"  # the user's name for it (`opt`, `self.optimizer`)
    if event.in_backward:
        _report_in_hook(event, ctx, receiver)
        return
    if earlier_step is not None:
        message = NEVER_RESET(step=ctx.text(event.call), earlier=ctx.text(earlier_step), line=ctx.line(earlier_step),
                              optimizer=optimizer)
    else:
        message = NEVER_RESET_NO_STEP(step=ctx.text(event.call), optimizer=optimizer)
    loop = ctx.current_loop()
    fixes: list[FixRecipe] = []
    body = getattr(loop, "body", None)
    closure = _closure_of(event.call, loop)
    if closure is not None and receiver:
        # The step evaluates the closure (LBFGS several times per step): the gradients must be
        # reset inside it, before its backward, as torch's documentation writes it.
        fixes.append(InsertBefore(title=TOP_OF_CLOSURE_TITLE(optimizer=receiver, closure=closure.name),
                                  applicability=UNSAFE, anchor=ctx.span(closure.body[0]),
                                  code=f"{receiver}.zero_grad()"))
    elif loop is not None and isinstance(body, list) and body and receiver:
        fixes.append(InsertBefore(title=TOP_OF_LOOP_TITLE(optimizer=receiver),
                                  applicability=UNSAFE, anchor=ctx.span(body[0]), code=f"{receiver}.zero_grad()"))
    related = ([Related(ctx.span(earlier_step), EARLIER_STEP())]
               if earlier_step is not None else [])
    ctx.report(RULE, ctx.span(event.stmt), message, related=related, fixes=fixes)


def _report_in_hook(event: StepEvent, ctx: RuleContext, receiver: str | None) -> None:
    """The step is fused into the backward (a post-accumulate-grad hook): the gradients are reset
    right after it, in the hook, where the names it steps with are bound (not at a loop's top)."""
    message = NEVER_RESET_IN_HOOK(step=ctx.text(event.call), optimizer=receiver or "optimizer")
    fixes: list[FixRecipe] = []
    if receiver and event.stmt.lineno == event.stmt.end_lineno:
        fixes.append(InsertAfter(title=AFTER_STEP_TITLE(optimizer=receiver), applicability=UNSAFE,
                                 anchor=ctx.span(event.stmt), code=f"{receiver}.zero_grad()"))
    ctx.report(RULE, ctx.span(event.stmt), message, fixes=fixes)


def _report_shared(event: StepEvent, ctx: RuleContext, share: ast.stmt) -> None:
    """The step's parameters hold another leaf's gradient tensor (``global_param._grad =
    local_param.grad``), which nothing resets: no fix is offered, since this optimizer's
    ``zero_grad()`` is not the reset that is missing."""
    message = SHARED(step=ctx.text(event.call), share=ctx.text(share), line=ctx.line(share))
    ctx.report(RULE, ctx.span(event.stmt), message, related=[Related(ctx.span(share), SHARED_HERE())])


def _closure_of(call: ast.AST, loop: ast.AST | None) -> ast.FunctionDef | None:
    """The function of the loop given to ``optimizer.step(closure)`` by name, if the loop defines it
    (the last definition before the step); ``None`` for a lambda or a function defined elsewhere."""
    if not isinstance(call, ast.Call) or loop is None:
        return None
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "closure"), None)
    if not isinstance(given, ast.Name):
        return None
    found = [node for node in ast.walk(loop) if isinstance(node, ast.FunctionDef) and node.name == given.id
             and node.lineno < call.lineno]
    return max(found, key=lambda node: node.lineno) if found else None


def _optimizer_text(ctx: RuleContext, stmt: ast.stmt) -> str:
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step":
            return ctx.text(node.func.value)
    return ""


@RULE.on(UnitEndEvent)
def on_unit_end(event: UnitEndEvent, ctx: RuleContext) -> None:
    """A function nothing in the file calls, which steps on gradients only its backward filled and
    never resets any: every call after the first steps on the sum of all earlier gradients."""
    data = ctx.take_unit_state(GL302State)
    function = event.unit
    if data is None or data.zeroed is None or not data.fresh_steps:
        return
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or ctx.was_inlined(function):
        return
    if _resets_elsewhere(ctx, function):
        return
    for step, backward in data.fresh_steps:
        if step.storages is None or step.storages & data.zeroed:
            continue  # reset somewhere in the function (before the backward, or after the step)
        optimizer = _optimizer_text(ctx, step.stmt) or "optimizer"
        message = CALLED_AGAIN(step=ctx.text(step.call), backward=ctx.text(backward), line=ctx.line(backward),
                               function=function.name, optimizer=optimizer)
        fixes: list[FixRecipe] = [InsertBefore(title=BEFORE_BACKWARD_TITLE(optimizer=optimizer),
                                               anchor=ctx.span(backward), code=f"{optimizer}.zero_grad()",
                                               applicability=UNSAFE)]
        ctx.report(RULE, ctx.span(step.stmt), message,
                   related=[Related(ctx.span(backward), ADDS_TO())], fixes=fixes)


def _resets_elsewhere(ctx: RuleContext, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Does other code of the function's class (for a method) or of its file reset gradients
    (`zero_grad`, `.grad = ...`)? The engine did not run it in this unit, but a caller may run it
    between two calls of this one.

    What the answer read is noted for the unit cache: a reset found, the code that holds it (it
    stays true while that code does); none found, every statement of the class (any may gain one)
    or the whole file. Each statement's resets are found once per version of its code
    (:func:`_resets_in`): asked for every method of a large class, a walk of the whole class per
    method cost more than the analysis."""
    owner = ctx.parent(function)
    if isinstance(owner, ast.ClassDef):
        # The statements nearest the method first: the reset found is the code the answer depends
        # on, and a method's neighbours make different methods depend on different code (an edit
        # in the class's first reset would otherwise run every method of the class again).
        place = next((index for index, stmt in enumerate(owner.body) if stmt is function), 0)
        nearest = sorted(range(len(owner.body)), key=lambda index: (abs(index - place), index))
        scope: list[ast.AST] = [*(owner.body[index] for index in nearest), *owner.decorator_list, *owner.bases,
                                *owner.keywords]
    else:
        scope = list(ctx.read_whole_file().body)
    for node in scope:
        for reset, enclosing in _resets_in(ctx, node):
            if enclosing is not function:
                if isinstance(owner, ast.ClassDef):
                    ctx.touch(reset)
                return True
    if isinstance(owner, ast.ClassDef):
        ctx.touch(owner)
        for stmt in owner.body:
            ctx.touch(stmt)
    return False


#: The attribute of a node that keeps its resets (:func:`_resets_in`).
_RESETS = "_graphlife_gl302_resets"


def _resets_in(ctx: RuleContext, root: ast.AST) -> list[tuple[ast.AST, ast.AST | None]]:
    """The gradient resets inside ``root``, each with the innermost function inside ``root`` that
    holds it (``None``: none does). Kept on the node: the same code gives the same answer."""
    found: list[tuple[ast.AST, ast.AST | None]] | None = getattr(root, _RESETS, None)
    if found is not None:
        return found
    found = []
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    stack: list[tuple[ast.AST, ast.AST | None]] = [(root, None)]
    while stack:
        node, enclosing = stack.pop()
        if (isinstance(node, ast.Attribute) and node.attr == "zero_grad") or _assigns_grad(ctx, node):
            found.append((node, enclosing))
        inner = node if isinstance(node, functions) else enclosing
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    setattr(root, _RESETS, found)  # a cache hung on the node
    return found


def _assigns_grad(ctx: RuleContext, node: ast.AST) -> bool:
    """`p.grad = None` / `p.grad.zero_()`: a reset of a `.grad`, not a read."""
    if isinstance(node, ast.Attribute) and node.attr == "grad":
        if isinstance(node.ctx, ast.Store):
            return True
        parent = ctx.parent(node)
        return isinstance(parent, ast.Attribute) and parent.attr in ("zero_", "fill_", "detach_", "requires_grad_")
    return False
