"""A tensor that carries a graph is stored where it outlives the loop iteration.

## What it does
Reports a graph-carrying tensor stored where it piles up across loop
iterations: appended to a list made before the loop (`losses.append(loss)`,
a module-level log), stored under a new key each time, or added into a running
total (`total += loss`). Values made with `.item()`, `float()`, `.detach()`, or
without a graph are fine, and so is a container emptied again (`lst.clear()`,
`del lst[:]`) after each step. Overwriting one slot (`self.last = h`,
`history["loss"] = out`) keeps one iteration's graph, not one per iteration
(torch measures it flat), so it is not reported. Nor is a store whose graph a
backward later in the same step consumes (a time loop collecting states for a
truncated-BPTT backward, `loss += ...` over decoder steps with the backward after
that loop), or a container a function creates and keeps (U-Net skip connections,
one entry per layer): those graphs are part of one step's computation.

## Why is this bad?
The stored tensor keeps its whole graph alive. When no backward consumes that
graph (an evaluation loop collecting outputs, an activation kept for
monitoring), every saved activation of every iteration stays in memory until
the process runs out (warning). When the iteration's backward does consume it,
the activations are freed but the graph nodes - and the chain of `+=`
additions - still pile up each step (information).

## What torch says
Nothing: memory grows until `CUDA out of memory` / the host kills the process.

## Example
```python
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss)
```

## Use instead
```python
    losses.append(loss.item())      # a Python number for logging
    # or losses.append(loss.detach()) to keep a tensor
```

## Fix safety
Safe: storing `value.detach()` in a container keeps the same numbers without the graph.
Unsafe: detaching a running value (`total = total + loss`, an average carried from step to
step) -- a later loss may be computed from it and train through it; and storing
`value.item()` -- the container then holds Python numbers, which code that stacks or moves
the stored values does not expect.

## Fixture line
The statement that stores the value.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import cast

from graphlife.analysis.doc_languages import Translation
from graphlife.analysis.events import (
    BackwardEvent,
    LoopEndEvent,
    StoreEvent,
    UnitEndEvent,
)
from graphlife.analysis.rule_api import Rule, RuleContext, RuleDoc
from graphlife.analysis.state import GraphStore, State
from graphlife.analysis.values import HeapRef, TensorVal, TupleVal, Value
from graphlife.findings import FixRecipe, Message, MessageTemplate, Related, Severity
from graphlife.recipes import SAFE, UNSAFE, UseDetach, UseItem

ZH_CN = Translation(
    """带着计算图的张量被存到了比本轮迭代活得更久的地方。

## 它检查什么
报告带计算图的张量被存到会在循环迭代之间越积越多的地方：追加到循环之前创建的列表里（`losses.append(loss)`、模块级的日志），每次存在一个新键下，或者加进一个累计值（`total += loss`）。用 `.item()`、`float()`、`.detach()` 得到的值，或者本来就没有计算图的值，都没有问题；每一步之后重新清空的容器（`lst.clear()`、`del lst[:]`）也没问题。反复覆盖同一个位置（`self.last = h`、`history["loss"] = out`）只保留一轮迭代的计算图，而不是每轮一张（在 torch 上实测，内存占用并不增长），所以不报告。同一步里稍后有反向传播会用掉其计算图的存储也不报告（按时间步收集状态、供截断 BPTT 反向传播的循环；在解码步上做 `loss += ...`、循环结束后再反向传播），函数自己创建并持有的容器也不报告（U-Net 的跳跃连接，每层一项）：这些计算图都属于同一步的计算。

## 为什么这是问题？
存起来的张量会让它的整张计算图一直活着。如果没有任何反向传播用掉这张计算图（评估循环收集输出、为了监控保留激活值），每一轮迭代保存的每个激活值都会留在内存里，直到进程内存耗尽（警告）。如果本轮的反向传播确实用掉了它，激活值会被释放，但计算图节点——以及一连串 `+=` 加法——仍然每一步都在堆积（信息）。

## torch 的报错
不报错：内存持续增长，直到 `CUDA out of memory`，或者进程被系统杀掉。

## 示例
```python
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss)
```

## 改为
```python
    losses.append(loss.item())      # 记日志用 Python 数字就够了
    # 或者用 losses.append(loss.detach()) 保留一个张量
```

## 修复的安全性
安全：在容器里存 `value.detach()`，数值相同，只是不带计算图。不安全：分离一个累计值（`total = total + loss`，或者一步步传下去的平均值）——后面的 loss 可能是由它算出来的，并通过它训练；以及存 `value.item()`——容器里变成了 Python 数字，而对存储的值做 stack 或搬到其他设备的代码并不预期这种情况。
""",  # noqa: E501 - one line per Chinese paragraph; what torch says is quoted verbatim
    translates="58bc370a75c0",
)

RULE = Rule(
    code="GL201",
    name="graph-kept-across-iterations",
    severity=Severity.WARNING,
    doc=RuleDoc(__doc__, zh_cn=ZH_CN),
    torch_message="",
)

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
#: Container methods that put a value into their receiver (``outs.append(v)``).
_MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "__setitem__"}
_STORE_METHODS = {"append", "add", "insert", "extend", "setdefault"}

KEEPS_SAVED = MessageTemplate(
    "GL201.keeps-saved",
    "`{target}` keeps the graph of `{value}` alive after the iteration, and no backward frees it: the activations "
    "saved at line {saved} (`{saved_by}`) pile up every iteration. Store `.item()` (a number) or `.detach()` instead.",
    zh_cn="`{target}` 在本次迭代结束后仍让 `{value}` 的计算图存活，而且没有反向传播去释放它：{saved}（`{saved_by}`）"
    "保存的激活值每次迭代都会累积下来。请改为保存 `.item()`（一个 Python 数）或 `.detach()`。",
)
KEEPS_NODES = MessageTemplate(
    "GL201.keeps-nodes",
    "`{target}` keeps the graph nodes of `{value}` alive after the iteration; its backward freed the saved "
    "activations, but the nodes still pile up each step. Store `.item()` or `.detach()` instead.",
    zh_cn="`{target}` 在本次迭代结束后仍让 `{value}` 的计算图节点存活；它的反向传播已经释放了保存的激活值，"
    "但这些节点仍会每一步累积。请改为保存 `.item()` 或 `.detach()`。",
)

#: The code a statement belongs to: a function, a class body or the module.
Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module
#: One run of a loop, at its end: (sequence number, backwards seen, heap ids of the modules called).
LoopEnd = tuple[int, int, frozenset[int]]

THE_VALUE = MessageTemplate("phrase.the-value", "the value", zh_cn="该值")
KEPT_ALIVE = MessageTemplate("GL201.kept-alive", "saved activations kept alive from here",
                             zh_cn="从这里保存的激活值一直存活")
STORE_DETACH = MessageTemplate("fix.store-detach", "Store `{expr}.detach()`", zh_cn="改为保存 `{expr}.detach()`")
STORE_ITEM = MessageTemplate("fix.store-item", "Store `{expr}.item()` (a Python number)",
                             zh_cn="改为保存 `{expr}.item()`（一个 Python 数）")



@dataclass
class _Store:
    """One store, with what the engine knew when it happened."""

    event: StoreEvent
    stmt: ast.stmt  # where to report it
    seq: int  # its place among the events this rule records
    loops: list[ast.AST]  # the running loops, outermost first (across inlined calls)
    iteration: tuple[int, ...]  # their iteration indices
    first: int  # index in ``loops`` of the outermost loop the place outlives
    frames: list[ast.stmt]  # the call statements of the inlined calls, outermost first
    scope: Scope | None  # the function (or module) whose statement stores
    tracked: str | None  # the local name the place is reached by (`outs`, `loss`), when there is one
    local: bool  # a container made by this function, or a local accumulator variable
    oid: int | None  # the container's heap object
    walks: list[str | None]  # per loop it outlives, what the loop walks ("modules", "count", "tensor", or None)
    receiver: int | None  # the module whose method stores (its heap object), if it is one


@dataclass
class GL201State:
    """What the rule gathers while a unit runs; the stores are judged when it ends."""

    seq: int = 0  # the sequence number of the last store, loop end or backward
    pending: list[_Store] = field(default_factory=list)
    #: (id of a loop, iteration of the loops around it) -> each run's end.
    loops: dict[tuple[int, tuple[int, ...]], list[LoopEnd]] = field(default_factory=dict)
    #: Each backward: (sequence number, iteration, the statement running at each call depth).
    backwards: list[tuple[int, tuple[int, ...], list[ast.stmt]]] = field(default_factory=list)
    #: The statements of each scope read, in source order (by the scope's id).
    scopes: dict[int, list[ast.stmt]] = field(default_factory=dict)
    #: Stores into a container, by statement: the loop levels (index in the running loops) with a
    #: later run seen at the store, and those across which the container still held a graph built
    #: in an earlier run just before the store (it grows there; elsewhere it was emptied).
    seen_levels: dict[int, set[int]] = field(default_factory=dict)
    kept_levels: dict[int, set[int]] = field(default_factory=dict)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


@RULE.on(StoreEvent)
def on_store(event: StoreEvent, ctx: RuleContext) -> None:
    if event.kind in ("attribute", "setitem") and _overwrites(event):
        return  # an overwritten slot keeps one graph, not one per iteration (torch measures it flat)
    data = ctx.unit_state(GL201State)
    loops = list(ctx.running_loops())
    if not loops:
        return
    iteration = ctx.iteration()
    scope = _scope_of(ctx, event.stmt)
    innermost = len(loops) - 1
    first, tracked, local, oid = innermost, None, False, None
    if event.kind == "accumulate":
        name = event.target
        # The loops the variable outlives: it was bound before each of them started, in this function.
        while first > 0:
            before = ctx.state_before_loop(first - 1)
            if (
                before is None or _scope_of(ctx, loops[first - 1]) is not scope or name not in before.env
                or _bound_before(ctx, data, scope, loops[first - 1], loops[first], name)
            ):
                break
            first -= 1
        if _scope_of(ctx, loops[innermost]) is scope:
            tracked = name
        local = isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and name not in _declared_global(scope)
    else:
        receiver = _receiver(ctx, event)
        ref = _resolve(ctx, receiver, event.state) if receiver is not None else None
        if isinstance(ref, HeapRef) and ref.oid in event.state.heap:
            obj = event.state.heap[ref.oid]
            _note_what_it_held(ctx, data, event, obj.elem, iteration)
            born = tuple(obj.extra.get("born", ()))
            # Made during the iterations that are still running: it outlives only the loops started after it.
            first = min(len(born), innermost) if born == iteration[: len(born)] else 0
            oid = ref.oid
            local = obj.site is not None and _scope_of(ctx, obj.site) is scope
            if local and isinstance(receiver, ast.Name):
                tracked = receiver.id
    if tracked is not None and _scope_of(ctx, loops[first]) is not scope:
        tracked = None  # the place outlives a loop of a caller: its later uses are not in this function
    walks = [_iter_kind(ctx, loop.iter, event.state) if isinstance(loop, (ast.For, ast.AsyncFor)) else None
             for loop in loops[first:]]
    data.pending.append(_Store(
        event=event, stmt=ctx.blame(event.stmt, None), seq=data.next_seq(), loops=loops, iteration=iteration,
        first=first, frames=list(ctx.call_sites()), scope=scope, tracked=tracked, local=local, oid=oid,
        walks=walks, receiver=_module_receiver(scope, event.state),
    ))


@RULE.on(LoopEndEvent)
def on_loop_end(event: LoopEndEvent, ctx: RuleContext) -> None:
    data = ctx.unit_state(GL201State)
    key = (id(event.loop), ctx.iteration())
    called = frozenset(ref.oid for ref, _ in event.module_calls if isinstance(ref, HeapRef))
    data.loops.setdefault(key, []).append((data.next_seq(), event.backwards, called))


@RULE.on(BackwardEvent)
def on_backward(event: BackwardEvent, ctx: RuleContext) -> None:
    data = ctx.unit_state(GL201State)
    chain = [*ctx.call_sites(), event.stmt]  # the statement running at each call depth
    data.backwards.append((data.next_seq(), ctx.iteration(), chain))


# When a store is not reported (besides the overwritten slots above). A place piles graphs up
# only across the loops it outlives: those started after it was made (``_Store.first``). It is a
# leak when one of them runs training or evaluation steps and no backward consumes the graphs.
# Not reported:
# - the loops it outlives run no backward, and a backward after them consumes what it keeps:
#   on the graph (every stored node freed: truncated BPTT), or, where the engine lost the edges
#   (`loss = 0; loss += ...` joins a number with a tensor; `torch.cat(list, dim)`), by data flow:
#   a statement after the loops, in the same iteration of the loops around them, that reads the
#   place (or a name assigned from it, following `return` into the inlined callers) runs that
#   backward (``_consumed_by_later_backward``);
# - a container made by the storing function and kept there, filled by loops without backward
#   that walk the model's layers (its submodules) or, in a method of a module that does not call
#   itself in the loop, time steps or a tensor's rows: one forward's intermediate results, gone
#   with the call (``_structural``);
# - in a function analyzed on its own that runs no backward (a `forward`), a container made by it
#   and kept there: its unknown caller decides what becomes of the graphs.
@RULE.on(UnitEndEvent)
def on_unit_end(event: UnitEndEvent, ctx: RuleContext) -> None:
    data = ctx.take_unit_state(GL201State)
    if data is None:
        return
    final = event.state
    graph = ctx.graph
    alone = isinstance(event.unit, (ast.FunctionDef, ast.AsyncFunctionDef))
    escapes: dict[tuple[int, int], bool] = {}  # (container, scope) -> reachable from outside
    for store in data.pending:
        value = store.event.value
        quiet = _outlived_loops_quiet(data, store)
        consumed_later = all(n in final.freed or n in final.may_freed for n in value.grad_fn)
        if quiet and consumed_later:
            continue  # a time loop collecting states for the backward after it (BPTT): not a leak
        if alone and not data.backwards and store.local and not _escapes(ctx, final, store, escapes):
            continue  # a forward computation: the function's unknown caller runs the backward, if any
        if quiet and store.local and _structural(data, store) and not _escapes(ctx, final, store, escapes):
            continue  # one forward's loop over layers or time steps: the graphs die with the call
        if quiet and store.tracked is not None and _consumed_by_later_backward(ctx, data, store):
            continue  # collected (or summed) for the backward that follows in the same step
        if _emptied_between_steps(data, store):
            continue  # emptied between the steps that run a backward (`items.clear()`, `del items[:]`)
        _report(ctx, store, final, graph)


def _note_what_it_held(ctx: RuleContext, data: GL201State, event: StoreEvent, held: Value | None,
                       iteration: tuple[int, ...]) -> None:
    """Just before this store adds a graph, which earlier runs of the loops around does the container
    still hold graphs of? Decided on the values, not on how the code empties it. A node made in an
    earlier run of the loop at level ``d`` (its iteration first differs from this one there) was
    kept across that loop."""
    key = id(event.stmt)
    seen = data.seen_levels.setdefault(key, set())
    seen.update(level for level, index in enumerate(iteration) if index > 0)
    kept = data.kept_levels.setdefault(key, set())
    if held is not None and not isinstance(held, (TensorVal, TupleVal, HeapRef)):
        kept.update(range(len(iteration)))  # holds what the engine cannot see into: it may grow anywhere
        return
    nodes = ctx.graph.nodes
    for tensor in _tensors_held(held, event.state):
        for nid in tensor.grad_fn:
            if 0 <= nid < len(nodes):
                made = nodes[nid].iteration
                level = next((i for i, (a, b) in enumerate(zip(made, iteration)) if a != b),
                             min(len(made), len(iteration)))
                if level < len(iteration):
                    kept.add(level)


def _emptied_between_steps(data: GL201State, store: _Store) -> bool:
    """Across every loop the place outlives that runs a backward (a training or evaluation step),
    a later run was seen and the container held nothing of the earlier runs: it keeps one step's
    graphs at most (collected for that step's backward, then emptied)."""
    key = id(store.event.stmt)
    seen, kept = data.seen_levels.get(key, set()), data.kept_levels.get(key, set())
    stepping = [index for index in range(store.first, len(store.loops))
                if (end := _loop_end(data, store, index)) is None or end[1] > 0]
    return bool(stepping) and all(index in seen and index not in kept for index in stepping)


def _tensors_held(value: Value | None, state: State, depth: int = 0) -> list[TensorVal]:
    """The tensors a value holds: itself, the items of a tuple, what a container holds (bounded)."""
    if isinstance(value, TensorVal):
        return [value]
    if depth >= 4:
        return []
    if isinstance(value, TupleVal):
        return [t for item in value.items for t in _tensors_held(item, state, depth + 1)]
    if isinstance(value, HeapRef) and value.oid in state.heap:
        obj = state.heap[value.oid]
        if obj.kind in ("module", "optimizer"):
            return []
        return [t for item in [obj.elem, *obj.attrs.values()] for t in _tensors_held(item, state, depth + 1)]
    return []


def _structural(data: GL201State, store: _Store) -> bool:
    """Every loop the place outlives is part of one forward computation, whose length the model
    fixes: a loop over the layers of a model (its submodules), or - in a method of a module that
    does not call the module itself in the loop - over a number of steps or the rows of a tensor
    (time steps, heads, gates). Not a loop that runs training or evaluation steps over batches."""
    for index, walk in enumerate(store.walks, start=store.first):
        if walk == "modules":
            continue
        if walk not in ("count", "tensor") or store.receiver is None:
            return False
        end = _loop_end(data, store, index)
        if end is None or store.receiver in end[2]:
            return False  # `for i in range(...): out = self(x[i])`: batches through the whole model
    return True


def _iter_kind(ctx: RuleContext, expr: ast.expr, state: State, depth: int = 0) -> str | None:
    """What a loop walks: "modules", "count" (`range(n)`), "tensor" (slices of one tensor), or None."""
    if depth > 3:
        return None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and ctx.lookup_name(expr.func.id, state) is None:
        name = expr.func.id  # a builtin
        if name == "range":
            return "count"
        if name in ("enumerate", "zip", "reversed") and expr.args:
            kinds = [_iter_kind(ctx, arg, state, depth + 1) for arg in expr.args]
            if any(kind is None for kind in kinds):
                return None
            return "modules" if "modules" in kinds else kinds[0]
        return None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        if expr.func.attr == "unbind" and isinstance(_resolve(ctx, expr.func.value, state), TensorVal):
            return "tensor"
        return None
    value = _resolve(ctx, expr, state)
    if isinstance(value, TensorVal):
        return "tensor"
    if isinstance(value, HeapRef) and value.oid in state.heap:
        obj = state.heap[value.oid]
        if obj.kind == "module":
            return "modules"
        if obj.kind == "list" and isinstance(obj.elem, HeapRef) and state.heap.get(obj.elem.oid) is not None:
            return "modules" if state.heap[obj.elem.oid].kind == "module" else None
    return None


def _module_receiver(scope: Scope | None, state: State) -> int | None:
    """The module ``scope`` runs as a method of (its first parameter holds an `nn.Module`), if any."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = scope.args.posonlyargs + scope.args.args
    value = state.env.get(params[0].arg) if params else None
    if isinstance(value, HeapRef) and value.oid in state.heap and state.heap[value.oid].kind == "module":
        return value.oid
    return None


def _outlived_loops_quiet(data: GL201State, store: _Store) -> bool:
    """No backward ran in any loop the place outlives (the run of each that followed the store)."""
    ends = [_loop_end(data, store, index) for index in range(store.first, len(store.loops))]
    return all(end is not None and end[1] == 0 for end in ends)


def _loop_end(data: GL201State, store: _Store, index: int) -> LoopEnd | None:
    """(sequence number, backwards seen, modules called) at the end of the run of
    ``store.loops[index]`` the store was in."""
    key = (id(store.loops[index]), store.iteration[:index])
    for record in data.loops.get(key, ()):
        if record[0] > store.seq:
            return record
    return None


def _consumed_by_later_backward(ctx: RuleContext, data: GL201State, store: _Store) -> bool:
    """After the loops the place outlives, in the same iteration of the loops around them, a backward
    runs on a value computed from it: the statements that read the place (or a name assigned from it,
    through `return` into the callers of inlined functions) include the backward's statement or a
    call that runs it. This is what the truncated-BPTT exception checks on the graph, for the graphs
    the engine cannot follow (a number `+=` a tensor, `torch.cat(list, dim)`)."""
    end = _loop_end(data, store, store.first)
    if end is None or store.tracked is None:
        return False
    later = [(iteration, chain) for seq, iteration, chain in data.backwards if seq > end[0]]
    if not later:
        return False
    # The statements that use the value, per call depth: the store's function, then its callers.
    depth = len(store.frames)
    consumers: set[int] = set()
    returns = _scan(ctx, data, store.scope, store.loops[store.first], {store.tracked}, consumers, include_start=False)
    levels: list[tuple[int, set[int], ast.stmt | None, Scope | None]] = [(depth, consumers, None, None)]
    callee = store.scope
    while returns and depth > 0:
        depth -= 1
        call_stmt = store.frames[depth]
        scope = _scope_of(ctx, call_stmt)
        consumers = set()
        returns = _scan(ctx, data, scope, call_stmt, set(), consumers, include_start=True)
        levels.append((depth, consumers, call_stmt, callee))
        callee = scope
    for iteration, chain in later:
        for level, statements, level_call, called in levels:
            if len(chain) <= level or id(chain[level]) not in statements or chain[:level] != store.frames[:level]:
                continue
            if chain[level] is level_call and len(chain) > level + 1 and _scope_of(ctx, chain[level + 1]) is called:
                continue  # a backward inside the call that made the value, before it returned it
            # The same iteration of every loop around both the store and this backward: the same step.
            shared = 0
            while shared < store.first and any(
                _encloses(ctx, store.loops[shared], stmt) for stmt in chain[: level + 1]
            ):
                shared += 1
            if iteration[:shared] == store.iteration[:shared]:
                return True
    return False


def _encloses(ctx: RuleContext, loop: ast.AST, stmt: ast.AST) -> bool:
    """Is ``stmt`` inside ``loop`` (in the same function)?"""
    for ancestor in ctx.ancestors(stmt):
        if isinstance(ancestor, (*_SCOPES, ast.Lambda)):
            return False
        if ancestor is loop:
            return True
    return False


def _position(node: ast.AST) -> tuple[int, int]:
    """Where a statement or expression starts: (line, byte column)."""
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _end_line(node: ast.AST) -> int:
    """The line where a statement or expression ends."""
    return cast(int, getattr(node, "end_lineno", None) or getattr(node, "lineno", 0))


def _scan(ctx: RuleContext, data: GL201State, scope: Scope | None, start: ast.AST, tracked: set[str],
          consumers: set[int], *, include_start: bool) -> bool:
    """Mark the statements of ``scope`` after ``start`` that read a tracked name; names they assign
    (or containers they put the value in) are tracked from there on. True when one returns it."""
    returns = False
    if include_start:
        consumers.add(id(start))
        tracked |= _assigned(start)
        returns = isinstance(start, ast.Return)
    after = (_end_line(start), getattr(start, "end_col_offset", None) or 0)
    for stmt in _statements(ctx, data, scope):
        if (stmt.lineno, stmt.col_offset) < after:
            continue
        if _reads(stmt) & tracked:
            consumers.add(id(stmt))
            tracked |= _assigned(stmt)
            returns = returns or isinstance(stmt, ast.Return)
        else:
            tracked -= _assigned(stmt, rebinding=True)
    return returns


def _bound_before(
    ctx: RuleContext, data: GL201State, scope: Scope | None, outer: ast.AST, inner: ast.AST, name: str
) -> bool:
    """Does ``outer``'s body bind ``name`` anew (`loss = 0`) before ``inner`` starts? Then each
    iteration of ``outer`` starts a new variable: it does not outlive that iteration."""
    start, end = _position(outer), _position(inner)
    return any(
        start < (stmt.lineno, stmt.col_offset) < end and _end_line(stmt) <= _end_line(outer)
        and name in _assigned(stmt, rebinding=True) and not isinstance(stmt, (ast.For, ast.AsyncFor))
        for stmt in _statements(ctx, data, scope)
    )


def _statements(ctx: RuleContext, data: GL201State, scope: Scope | None) -> list[ast.stmt]:
    """Every statement of a function or module body in source order, nested functions and classes left out."""
    if scope is None:
        return []
    cached = data.scopes.get(id(scope))
    if cached is not None:
        return cached
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        ctx.touch(scope)
    out: list[ast.stmt] = []
    stack: list[ast.stmt] = list(scope.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, _NESTED):
            continue
        out.append(stmt)
        for field_name in ("body", "orelse", "finalbody"):
            stack.extend(s for s in getattr(stmt, field_name, ()) if isinstance(s, ast.stmt))
        for part in list(getattr(stmt, "handlers", ())) + list(getattr(stmt, "cases", ())):
            stack.extend(part.body)
    out.sort(key=lambda s: (s.lineno, s.col_offset))
    data.scopes[id(scope)] = out
    return out


def _own_exprs(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions a statement itself evaluates (a compound statement's header only)."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    if isinstance(stmt, (ast.Try, *_NESTED)) or type(stmt).__name__ == "TryStar":
        return []
    return [stmt]


def _reads(stmt: ast.stmt) -> set[str]:
    names = {
        node.id for expr in _own_exprs(stmt) for node in ast.walk(expr)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        names.add(stmt.target.id)  # `total /= n` reads `total`
    return names


def _assigned(stmt: ast.AST, rebinding: bool = False) -> set[str]:
    """Names a statement binds; unless ``rebinding``, also the containers it puts a value in
    (`outs.append(v)`, `d[k] = v`). With ``rebinding``: only names it binds to a new value."""
    names: set[str] = set()
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif (
        (isinstance(stmt, ast.AnnAssign) and stmt.value is not None)
        or (isinstance(stmt, ast.AugAssign) and not rebinding)
        or isinstance(stmt, (ast.For, ast.AsyncFor))
    ):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    for target in targets:
        names |= _target_names(target, rebinding)
    if not rebinding:
        for expr in _own_exprs(stmt) if isinstance(stmt, ast.stmt) else []:
            for node in ast.walk(expr):
                if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                    names.add(node.target.id)
                elif (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in _MUTATORS and isinstance(node.func.value, ast.Name)
                ):
                    names.add(node.func.value.id)
    return names


def _target_names(target: ast.AST, rebinding: bool) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(elt, rebinding) for elt in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return _target_names(target.value, rebinding)
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and not rebinding:
        return {target.value.id}  # `d[k] = v` puts v in d
    return set()


def _scope_of(ctx: RuleContext, node: ast.AST) -> Scope | None:
    """The function, class or module whose code ``node`` is (None for code outside the tree)."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, ast.Lambda):
            return _scope_of(ctx, ancestor)
        if isinstance(ancestor, _SCOPES):
            return ancestor
    return None


def _declared_global(scope: ast.AST) -> set[str]:
    """Names a function declares `global` or `nonlocal` (its own body, nested functions left out)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(getattr(scope, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif not isinstance(node, _NESTED):
            stack.extend(
                child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt) or hasattr(child, "body")
            )
    return names


def _receiver(ctx: RuleContext, event: StoreEvent) -> ast.expr | None:
    """The expression of the container a store puts its value in (`outs` of `outs.append(v)`)."""
    for node in ast.walk(event.stmt):
        if event.kind == "append" and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _STORE_METHODS and ctx.text(node.func.value) == event.target:
                return node.func.value
        elif (event.kind == "setitem" and isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
              and ctx.text(node) == event.target):
            return node.value
    return None


def _resolve(ctx: RuleContext, expr: ast.expr, state: State) -> Value | None:
    """The heap object a simple expression names (`outs`, `self.outs`, `history["loss"]`), without evaluating it."""
    if isinstance(expr, ast.Name):
        return ctx.lookup_name(expr.id, state)
    if isinstance(expr, (ast.Attribute, ast.Subscript)):
        base = _resolve(ctx, expr.value, state)
        obj = state.heap.get(base.oid) if isinstance(base, HeapRef) else None
        if obj is None:
            return None
        if isinstance(expr, ast.Attribute):
            return obj.attrs.get(expr.attr)
        if isinstance(expr.slice, ast.Constant):
            return obj.attrs.get(f"[{expr.slice.value!r}]")
    return None


def _escapes(ctx: RuleContext, final: State, store: _Store, cache: dict[tuple[int, int], bool]) -> bool:
    """Can the container be reached from an object this function did not make (`self`, a global)?"""
    if store.oid is None:
        return False  # an accumulator: a local variable (`global` ones are not local)
    key = (store.oid, id(store.scope))
    if key in cache:
        return cache[key]
    stack: list[Value] = []
    for oid, obj in final.heap.items():
        if oid == store.oid or (obj.site is not None and _scope_of(ctx, obj.site) is store.scope):
            continue
        stack.extend(obj.referents())
    for name in _declared_global(store.scope) if store.scope is not None else ():
        if name in final.env:
            stack.append(final.env[name])
    seen: set[int] = set()
    found = False
    while stack and not found:
        value = stack.pop()
        if isinstance(value, HeapRef):
            if value.oid == store.oid:
                found = True
            elif value.oid not in seen and value.oid in final.heap:
                seen.add(value.oid)
                stack.extend(final.heap[value.oid].referents())
        elif isinstance(value, TupleVal):
            stack.extend(value.items)
    cache[key] = found
    return found


def _report(ctx: RuleContext, store: _Store, final: State, graph: GraphStore) -> None:
    event = store.event
    _, reach = graph.reach(event.value.grad_fn, False)
    keeps_saved = [
        n for n in reach if graph.nodes[n].saves_certain and n not in final.freed and n not in final.may_freed
    ]
    severity = Severity.WARNING if keeps_saved else Severity.INFORMATION
    value_text = event.value.desc or THE_VALUE()
    message: Message
    if severity is Severity.WARNING:
        node = graph.nodes[min(keeps_saved)]
        message = KEEPS_SAVED(target=event.target, value=value_text, saved=ctx.line(node.site), saved_by=node.line_desc)
        related = [Related(ctx.span(node.site), KEPT_ALIVE())]
    else:
        message = KEEPS_NODES(target=event.target, value=value_text)
        related = []
    fixes: list[FixRecipe] = []
    expr = _stored_expr(store.stmt)
    if expr is not None and isinstance(event.whole, TensorVal):
        # .detach() first: always a tensor of the same shape; .item() only suits scalars.
        # A running value (`ema = 0.9 * ema + 0.1 * f(x)`) may feed a later loss: detaching it may
        # change what trains.
        applicability = UNSAFE if event.kind == "accumulate" else SAFE
        fixes.append(UseDetach(title=STORE_DETACH(expr=ctx.text(expr)), expr=ctx.span(expr),
                               applicability=applicability))
        if event.whole.scalar and not event.whole.nullable:
            # One element for certain (a loss, a mean): a Python number, as RULES.md asks for logging.
            fixes.append(UseItem(title=STORE_ITEM(expr=ctx.text(expr)), expr=ctx.span(expr)))
    ctx.report(RULE, ctx.span(store.stmt), message, severity=severity, related=related, fixes=fixes)


def _stored_expr(stmt: ast.stmt) -> ast.expr | None:
    """The expression stored by the statement (argument of append, value of an assignment)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and stmt.value.args:
        return stmt.value.args[-1]
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
        return stmt.value
    return None


def _overwrites(event: StoreEvent) -> bool:
    """`self.last = h` / `history["loss"] = out`: the same slot each time (a constant key or an attribute)."""
    if event.same_slot:
        return True
    stmt = event.stmt
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    for target in targets:
        if isinstance(target, ast.Attribute):
            return True
        if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
            return True
    return False
