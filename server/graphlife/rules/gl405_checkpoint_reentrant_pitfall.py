"""`checkpoint` without `use_reentrant=`, reentrant with no input requiring grad, or `autograd.grad` through it.

## What it does
Flags calls of `torch.utils.checkpoint.checkpoint` and `checkpoint_sequential`
(however imported) that do not pass `use_reentrant` (information), and calls
that use the reentrant variant (explicitly or by default) when no input of the
checkpointed block can require grad: every input is a fresh tensor made without
`requires_grad=True`, a `.detach()`ed tensor, a non-tensor, or a local name bound
only to those; in a module's `forward(self, x)`, `x` counts when every call of
the module's instances in the file passes such a tensor (warning). And, as an
error, a `torch.autograd.grad(...)` or `backward(inputs=...)` whose inputs lie
behind a reentrant checkpoint that the outputs go through (a gradient penalty on
the input of a checkpointed critic, for example), decided on the graph the analysis
builds: the checkpoint may be in a function or module the outputs came through, and
`checkpoint_sequential` counts with two segments or more (with one, torch checkpoints
nothing).

## Why is this bad?
torch 2.13 still defaults to the reentrant variant, warns on every call without
`use_reentrant`, and announces that omitting it will raise. The reentrant
variant only records gradients when an input tensor requires grad: a block
checkpointed on the raw input batch gets no gradients at all for its own
parameters (silently, when a later layer still gives the loss a graph; with
`element 0 of tensors does not require grad` when nothing else does). Its backward
can only run from a plain `.backward()`: `torch.autograd.grad` and
`backward(inputs=...)` through it raise.

## What torch says
`UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. ...`
and, for the reentrant variant without inputs that require grad,
`UserWarning: None of the inputs have requires_grad=True. Gradients will be None`
and, for gradients asked through a reentrant checkpoint,
`RuntimeError: When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an ...`

## Example
```python
def forward(self, x):
    h = checkpoint(self.block, x)
    return self.head(h)
```

## Use instead
```python
def forward(self, x):
    h = checkpoint(self.block, x, use_reentrant=False)
    return self.head(h)
```

## Fix safety
Safe: `use_reentrant=False` recomputes the same forward and gives the gradients to the
parameters as well.

## Fixture line
The statement with the `checkpoint(...)` call carries `# expect: GL405`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import BackwardEvent
from graphlife.analysis.rule_api import ModuleContext, Rule, RuleContext, RuleDoc
from graphlife.analysis.semantics import CHECKPOINT_FUNCTIONS, CHECKPOINT_SEQUENTIAL, Names, Semantics
from graphlife.analysis.semantics.names import scope_nodes
from graphlife.analysis.state import State
from graphlife.analysis.values import HeapRef, TensorVal, TupleVal, Value
from graphlife.findings import FixRecipe, MessageTemplate, Related, Severity, Span
from graphlife.recipes import AddKeyword, ReplaceText
from graphlife.rules.base import is_non_tensor_literal
from graphlife.rules.source_edits import report_span, segment

ZH_CN = Translation(
    """`checkpoint` 没有传 `use_reentrant=`，或者可重入版本的输入都不需要梯度，或者通过它调用 `autograd.grad`。

## 它检查什么
标记没有传 `use_reentrant` 的 `torch.utils.checkpoint.checkpoint` 和 `checkpoint_sequential` 调用（不论以何种方式导入），报信息；以及使用可重入版本（显式指定或默认）、但被检查点包住的代码块没有任何输入可能需要梯度的调用，报警告：每个输入都是不带 `requires_grad=True` 新建的张量、`.detach()` 过的张量、非张量，或者只绑定到这些值的局部名字；在模块的 `forward(self, x)` 中，如果本文件中对该模块实例的每次调用都传入这样的张量，`x` 也算在内。还有一种报为错误：`torch.autograd.grad(...)` 或 `backward(inputs=...)` 的输入位于一个可重入检查点之后，而输出又经过这个检查点（例如对做了检查点的判别器（critic）的输入求梯度惩罚）；这根据分析构建的计算图来判断：检查点可以位于输出所经过的函数或模块中，`checkpoint_sequential` 在分成两段或更多段时才算（只有一段时，torch 不对任何部分做检查点）。

## 为什么这是问题？
torch 2.13 仍然默认使用可重入版本，每次调用时只要没有 `use_reentrant` 就发出警告，并声明以后省略它将会报错。可重入版本只有在某个输入张量需要梯度时才记录梯度：对原始输入 batch 做检查点的代码块，它自己的参数完全得不到梯度（如果后面的层仍让 loss 带有计算图，这一切悄无声息；如果没有别的层提供计算图，则报 `element 0 of tensors does not require grad`）。它的反向传播只能从普通的 `.backward()` 发起：经过它的 `torch.autograd.grad` 和 `backward(inputs=...)` 都会报错。

## torch 的报错
`UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. ...`
对于输入都不需要梯度的可重入版本，
`UserWarning: None of the inputs have requires_grad=True. Gradients will be None`
对于经过可重入检查点求梯度的情况，
`RuntimeError: When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an ...`

## 示例
```python
def forward(self, x):
    h = checkpoint(self.block, x)
    return self.head(h)
```

## 改为
```python
def forward(self, x):
    h = checkpoint(self.block, x, use_reentrant=False)
    return self.head(h)
```

## 修复的安全性
安全：`use_reentrant=False` 重新计算的是同一个前向传播，并且参数也能得到梯度。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="dba0d7da01f2",
)

RULE = Rule(
    code="GL405",
    name="checkpoint-reentrant-pitfall",
    severity=Severity.INFORMATION,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly",
)

NO_INPUT_GRAD = MessageTemplate(
    "GL405.no-input-grad",
    "`{name}` runs {variant} on inputs that cannot require grad ({inputs}): torch warns "
    "`None of the inputs have requires_grad=True. Gradients will be None`, and the parameters inside "
    "the checkpointed block get no gradients. Pass `use_reentrant=False`.",
    zh_cn="`{name}` 以{variant}运行，而它的输入都不可能需要梯度（{inputs}）：torch 会警告 "
    "`None of the inputs have requires_grad=True. Gradients will be None`，被梯度检查点包住的代码块里的参数"
    "也得不到梯度。请传入 `use_reentrant=False`。",
)
IMPLICIT = MessageTemplate(
    "GL405.implicit",
    "`{name}` without `use_reentrant=`: torch 2.13 warns that it `should be passed explicitly` "
    "(omitting it is announced to raise) and still runs the reentrant variant, which gives no "
    "gradients when no input requires grad. Pass `use_reentrant=False`.",
    zh_cn="`{name}` 没有指定 `use_reentrant=`：torch 2.13 会警告"
          "它 `should be passed explicitly`（并预告省略它将来会报错），"
    "而且仍然使用可重入版本；当没有输入需要梯度时，这个版本得不到梯度。请传入 `use_reentrant=False`。",
)
EXPLICIT_VARIANT = MessageTemplate("GL405.explicit-variant", "`use_reentrant=True`",
                                   zh_cn="显式指定的 `use_reentrant=True` 模式")
DEFAULT_VARIANT = MessageTemplate("GL405.default-variant", "the default reentrant variant", zh_cn="默认的可重入版本")
NONE = MessageTemplate("GL405.none", "none", zh_cn="无")
USE_TITLE = MessageTemplate("fix.use-non-reentrant", "Use `use_reentrant=False`", zh_cn="改用 `use_reentrant=False`")
PASS_TITLE = MessageTemplate("fix.pass-non-reentrant", "Pass `use_reentrant=False`", zh_cn="传入 `use_reentrant=False`")

_FACTORIES = frozenset(
    "randn rand zeros ones empty full arange linspace logspace tensor randint randperm randn_like rand_like "
    "zeros_like ones_like empty_like full_like as_tensor from_numpy eye".split()
)
_CHECKPOINTS = CHECKPOINT_FUNCTIONS | CHECKPOINT_SEQUENTIAL
#: Methods that keep "does not require grad" (or make it so: detach).
_KEEPS_NO_GRAD = frozenset(
    "to float double half bfloat16 cpu cuda contiguous view reshape clone unsqueeze squeeze permute transpose "
    "flatten expand repeat t long int bool".split()
)


class _NoGrad:
    """Which expressions of one scope certainly do not require grad."""

    def __init__(
        self,
        body: list[ast.stmt],
        names: Names,
        params: set[str],
        param_without_grad: Callable[[str], bool] | None = None,
    ) -> None:
        self.names = names
        self.bindings: dict[str, list[ast.expr]] = {}
        self.params = set(params)
        self.param_without_grad = param_without_grad
        self.unknown: set[str] = set()
        simple: set[int] = set()
        for node in scope_nodes(body):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.bindings.setdefault(node.targets[0].id, []).append(node.value)
                simple.add(id(node.targets[0]))
        for node in scope_nodes(body):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in simple:
                self.unknown.add(node.id)  # bound by a loop, unpacking, augmented assignment...
            elif isinstance(node, ast.Attribute) and node.attr in ("requires_grad_", "requires_grad"):
                base = node.value
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(base, ast.Name):
                    self.unknown.add(base.id)  # `x.requires_grad_()` / `x.requires_grad = True` somewhere
        self._active: set[str] = set()

    def certain(self, node: ast.expr) -> bool:
        if is_non_tensor_literal(node) or (isinstance(node, ast.Constant) and node.value is None):
            return True
        if isinstance(node, ast.Name):
            if node.id in self.unknown or node.id in self._active:
                return False
            if node.id in self.params:
                if self.param_without_grad is None or not self.param_without_grad(node.id):
                    return False
                if node.id not in self.bindings:
                    return True
            elif node.id not in self.bindings:
                return False
            self._active.add(node.id)
            try:
                return all(self.certain(v) for v in self.bindings[node.id])
            finally:
                self._active.discard(node.id)
        if isinstance(node, ast.Subscript):
            return self.certain(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "detach":
                return True
            if (isinstance(func, ast.Attribute) and func.attr in _KEEPS_NO_GRAD
                    and self.names.qualified_name(func) is None):
                return self.certain(func.value)
            resolved = self.names.qualified_name(func)
            if resolved and resolved.startswith("torch.") and resolved.count(".") == 1 and resolved[6:] in _FACTORIES:
                for keyword in node.keywords:
                    if keyword.arg is None:
                        return False
                    if keyword.arg == "requires_grad" and not (
                        isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                    ):
                        return False
                return True  # *_like does not copy requires_grad either
        return False


def _inputs(call: ast.Call, sequential: bool) -> list[ast.expr] | None:
    if sequential:
        if len(call.args) >= 3:
            return [call.args[2]]
        return [k.value for k in call.keywords if k.arg == "input"] or None
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return list(call.args[1:])


def _insert_keyword(ctx: ModuleContext, call: ast.Call) -> FixRecipe | None:
    """``, use_reentrant=False`` right after the last argument (before any trailing comma)."""
    arguments = [*call.args, *call.keywords]
    if not arguments:
        return None
    last = max((ctx.span(a) for a in arguments), key=lambda s: (s.end_line, s.end_column))
    at = Span(last.end_line, last.end_column, last.end_line, last.end_column)
    return ReplaceText(title=PASS_TITLE(), span=at, text=", use_reentrant=False")


#: Where a ``checkpoint`` call is: a function's body or the module's.
Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Module


def _params(scope: Scope) -> set[str]:
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
    return set()


def _no_grad_of(scope: Scope, semantics: Semantics, *, callers: bool) -> _NoGrad:
    """The scope's facts; for a method (``forward(self, x)``), ``x`` is decided by the calls of the
    class's instances in this file (one level: the callers' own parameters stay unknown)."""
    oracle = _method_param_oracle(scope, semantics) if callers else None
    return _NoGrad(scope.body, semantics.names, _params(scope), oracle)


def _method_param_oracle(scope: Scope, semantics: Semantics) -> Callable[[str], bool] | None:
    klass = semantics.parent(scope)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(klass, ast.ClassDef):
        return None
    if scope.name != "forward" or any(d for d in scope.decorator_list):
        return None  # only `instance(x)` reaches forward, through nn.Module.__call__
    positional = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]][1:]
    calls = _instance_calls(klass, semantics)
    if not calls:
        return None
    caller_facts: dict[int, _NoGrad] = {}

    def without_grad(name: str) -> bool:
        if name not in positional:
            return False
        index = positional.index(name)
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]) or index >= len(call.args):
                return False
            caller = semantics.enclosing_function(call) or semantics.tree
            facts = caller_facts.get(id(caller))
            if facts is None:
                facts = caller_facts[id(caller)] = _no_grad_of(caller, semantics, callers=False)
            if not facts.certain(call.args[index]):
                return False
        return True

    return without_grad


def _instance_calls(klass: ast.ClassDef, semantics: Semantics) -> list[ast.Call]:
    """Calls ``m(...)`` of every ``m = Klass(...)`` of the file, looked up in the binding's scope."""
    calls: list[ast.Call] = []
    for assign in semantics.constructions(klass):
        for target in assign.targets:
            if not isinstance(target, ast.Name):
                return []  # held as an attribute or in a container: other code may call it
            scope = semantics.enclosing_function(assign) or semantics.tree
            for node in ast.walk(scope):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == target.id:
                    calls.append(node)
                elif isinstance(node, ast.Name) and node.id == target.id and isinstance(node.ctx, ast.Load):
                    parent = semantics.parent(node)
                    called = isinstance(parent, ast.Call) and parent.func is node
                    if not called and not isinstance(parent, ast.Attribute):
                        return []  # passed on somewhere: other callers are possible
    return calls


def check_module(ctx: ModuleContext) -> None:
    semantics = ctx.semantics
    names = semantics.names
    if not any(
        name.startswith("torch.utils.checkpoint") or name in ("torch", "torch.utils") for name in names.imported()
    ):
        return
    scopes: dict[int, _NoGrad] = {}
    def names_a_checkpoint(call: ast.Call) -> bool:
        return names.qualified_name_in(call.func, _CHECKPOINTS) is not None

    for node in semantics.nodes_where(ast.Call, names_a_checkpoint):
        resolved = names.qualified_name_in(node.func, _CHECKPOINTS)
        sequential = resolved in CHECKPOINT_SEQUENTIAL
        if resolved not in CHECKPOINT_FUNCTIONS and not sequential:
            continue
        scope = semantics.enclosing_function(node) or semantics.tree
        no_grad = scopes.get(id(scope))
        if no_grad is None:
            no_grad = scopes[id(scope)] = _no_grad_of(scope, semantics, callers=True)
        keyword = next((k for k in node.keywords if k.arg == "use_reentrant"), None)
        has_kwargs = any(k.arg is None for k in node.keywords)
        if keyword is None and has_kwargs:
            continue
        explicit_true = keyword is not None and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        if keyword is not None and not explicit_true:
            continue
        inputs = _inputs(node, sequential)
        no_input_grad = inputs is not None and all(no_grad.certain(i) for i in inputs)
        if explicit_true and not no_input_grad:
            continue
        name = resolved.rsplit(".", 1)[-1] if resolved else "checkpoint"
        shown = ", ".join(f"`{segment(ctx, i)}`" for i in inputs or [])
        fixes: list[FixRecipe] = []
        if no_input_grad:
            variant = EXPLICIT_VARIANT() if explicit_true else DEFAULT_VARIANT()
            message = NO_INPUT_GRAD(name=name, variant=variant, inputs=shown or NONE())
            severity = Severity.WARNING
        else:
            message = IMPLICIT(name=name)
            severity = Severity.INFORMATION
        if explicit_true and keyword is not None:
            fixes.append(
                ReplaceText(title=USE_TITLE(), span=ctx.span(keyword.value), text="False")
            )
        else:
            fixes.append(
                AddKeyword(title=PASS_TITLE(), call=ctx.span(node), keyword="use_reentrant",
                           value="False")
            )
            insert = _insert_keyword(ctx, node)
            if insert:
                fixes.append(insert)
        ctx.reporter.report(
            RULE, report_span(ctx, node, semantics.statement_of(node)), message, severity=severity, fixes=fixes
        )


RULE.check_module = check_module


THROUGH_REENTRANT = MessageTemplate(
    "GL405.grad_through_reentrant",
    "`{call}` asks for gradients through the reentrant checkpoint at line {checkpoint} (`{checkpoint_by}`): "
    "torch raises here. Pass `use_reentrant=False` to that checkpoint.",
    zh_cn="`{call}` 要求经过{checkpoint}（`{checkpoint_by}`）的可重入的梯度检查点求梯度：torch 会在这里报错。"
    "请给那个梯度检查点传入 `use_reentrant=False`。",
)
THE_CHECKPOINT = MessageTemplate("GL405.the-checkpoint", "the reentrant checkpoint", zh_cn="可重入的梯度检查点")
USE_IN_CHECKPOINT_TITLE = MessageTemplate(
    "fix.non-reentrant-in-checkpoint", "Use `use_reentrant=False` in the checkpoint",
                                          zh_cn="在这个梯度检查点中改用 `use_reentrant=False`")
PASS_TO_CHECKPOINT_TITLE = MessageTemplate("fix.pass-non-reentrant-to-checkpoint",
                                           "Pass `use_reentrant=False` to the checkpoint",
                                           zh_cn="给这个梯度检查点传入 `use_reentrant=False`")


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    """``torch.autograd.grad(...)`` or ``backward(inputs=...)`` whose inputs certainly lie behind a
    reentrant checkpoint the outputs certainly go through: torch refuses to run that checkpoint's
    backward there (``When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()
    or passing an `inputs` parameter to .backward()``)."""
    if event.inputs is None:
        return
    graph = ctx.graph
    asked = _asked_tensors(event.inputs, event.state)
    if not asked:
        return
    for nid in sorted(event.must):
        node = graph.nodes[nid]
        if node.checkpoint_inputs is None:
            continue
        behind, _ = graph.reach(node.parents, node.parents_certain)
        leaves = node.checkpoint_inputs.union(*(graph.nodes[n].leaves for n in behind)) if behind else \
            node.checkpoint_inputs
        if any(_behind(tensor, behind, leaves) for tensor in asked):
            call = "torch.autograd.grad(...)" if event.kind == "grad" else "backward(inputs=...)"
            message = THROUGH_REENTRANT(call=call, checkpoint=ctx.line(node.site), checkpoint_by=node.line_desc)
            ctx.report(RULE, ctx.span(event.stmt), message, severity=Severity.ERROR,
                       related=[Related(ctx.span(node.site), THE_CHECKPOINT())],
                       fixes=_non_reentrant_fix(ctx, node.site))
            return


def _non_reentrant_fix(ctx: RuleContext, site: ast.AST) -> list[FixRecipe]:
    """Make the checkpoint non-reentrant: its ``use_reentrant=True`` becomes ``False``, or the
    keyword is added after the last argument."""
    if not isinstance(site, ast.Call):
        return []
    for keyword in site.keywords:
        if keyword.arg == "use_reentrant":
            return [ReplaceText(title=USE_IN_CHECKPOINT_TITLE(), span=ctx.span(keyword.value),
                                text="False")]
    if any(keyword.arg is None for keyword in site.keywords):
        return []  # `**options` may already name it
    return [AddKeyword(title=PASS_TO_CHECKPOINT_TITLE(), call=ctx.span(site),
                       keyword="use_reentrant", value="False")]


def _asked_tensors(value: Value, state: State) -> list[TensorVal]:
    """The tensors gradients are asked for (a tensor, or a tuple or list of them); empty when
    any of them is not known for certain."""
    if isinstance(value, TensorVal):
        return [value] if value.certain else []
    items: list[Value] | None = None
    if isinstance(value, TupleVal):
        items = list(value.items)
    elif isinstance(value, HeapRef) and value.oid in state.heap:
        known = state.heap[value.oid].attrs.get("__items__")
        items = list(known.items) if isinstance(known, TupleVal) else None
    if items is None:
        return []
    out = [item for item in items if isinstance(item, TensorVal) and item.certain]
    return out if len(out) == len(items) else []


def _behind(tensor: TensorVal, behind: set[int], leaves: frozenset[int]) -> bool:
    """Is ``tensor`` certainly upstream of the checkpoint: one of its leaf inputs, or a result of a
    node the checkpoint's inputs certainly came from?"""
    if tensor.leaf is True and tensor.storage is not None and tensor.storage in leaves:
        return True
    return bool(tensor.grad_fn) and tensor.grad_fn <= behind
