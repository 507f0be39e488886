"""Hooks torch runs during a backward: what each is registered on, and how paths join.

Why a fact of the state: ``t.register_hook(fn)`` attaches ``fn`` to one tensor (to a
leaf for good, to a non-leaf's graph node for that graph only), and a full backward
hook of a module attaches to each call of the module made while it is registered
(torch reads the module's hooks at the call). Which of them a ``loss.backward()``
runs depends on the graph it goes through, so the engine keeps, per path, the hooks
that are registered and where (:class:`GradHook`), and the backward runs those its
graph reaches (:mod:`graphlife.analysis.engine.backward_hooks`).

A hook registered on some paths only (or removed on some) may run or not: a join
keeps it, marked uncertain, and the backward joins the run with the state where it
did not run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from graphlife.analysis.values import FunctionRef, PartialCall, TensorVal, Tri, Value

#: What a hook is registered on, as torch calls it.
TENSOR = "tensor"  # ``t.register_hook(fn)``: ``fn(grad)``
MODULE = "module"  # ``register_full_backward_hook``: ``fn(module, grad_input, grad_output)``
MODULE_PRE = "module_pre"  # ``register_full_backward_pre_hook``: ``fn(module, grad_output)``
#: ``leaf.register_post_accumulate_grad_hook(fn)``: ``fn(leaf)``, once the backward has added
#: its gradient into ``leaf.grad`` (an optimizer step in the backward is its use).
POST_ACCUMULATE = "post_accumulate"
#: The deprecated ``module.register_backward_hook(fn)``: ``fn(module, grad_input, grad_output)``
#: with the gradients of the module's last op only (torch warns); always a hook that may run.
MODULE_LEGACY = "module_legacy"


@dataclass(frozen=True)
class GradHook:
    """One function torch runs during the backwards that reach what it is registered on."""

    hook: FunctionRef | PartialCall  # a function of the project, or a ``functools.partial`` of one
    kind: str  # TENSOR | MODULE | MODULE_PRE | POST_ACCUMULATE | MODULE_LEGACY
    #: The graph nodes whose gradient it sees: a non-leaf tensor's ``grad_fn``, or the
    #: ``grad_fn`` of the outputs of the hooked module call.
    nodes: frozenset[int] = frozenset()
    #: The leaf storages it is registered on (a tensor hook on a leaf: every backward reaching it).
    storages: frozenset[int] = frozenset()
    #: What its gradients are shaped like: the tensor (a tensor hook), or the outputs of the
    #: hooked call (``grad_output``).
    grads_of: tuple[Value, ...] = ()
    #: A module hook: the positional arguments of the hooked call (``grad_input`` has one
    #: item per argument) and the module.
    inputs: tuple[Value, ...] = ()
    module: Value | None = None
    #: Registered on every path that reaches here (and on exactly these nodes).
    certain: bool = True
    #: Where it was registered (hooks of one tensor run in the order they were registered).
    site: ast.AST | None = field(default=None, compare=False, hash=False)
    order: int = 0

    @property
    def leaf_hook(self) -> bool:
        return self.kind == TENSOR and bool(self.storages)

    def tensor(self) -> TensorVal | None:
        first = self.grads_of[0] if self.grads_of else None
        return first if isinstance(first, TensorVal) else None


def followable(hook: Value) -> FunctionRef | PartialCall | None:
    """``hook`` when the engine can call it itself: a function of the project, or a
    ``functools.partial`` of one (``partial(save_gradient, name)`` in a ``named_modules()`` loop)."""
    inner = hook
    for _ in range(3):
        if not isinstance(inner, PartialCall):
            break
        inner = inner.func
    if isinstance(inner, FunctionRef) and isinstance(hook, (FunctionRef, PartialCall)):
        return hook
    return None


def join_hooks(a: frozenset[GradHook], b: frozenset[GradHook]) -> frozenset[GradHook]:
    """The hooks of two paths: those registered on both stay as they are; those of one path
    only may run (uncertain)."""
    if a is b or a == b:
        return a
    both = a & b
    maybe = {replace(hook, certain=False) for hook in a ^ b}
    kept = {hook for hook in both if not (hook.certain and replace(hook, certain=False) in maybe)}
    return frozenset(kept | maybe)


def without(hooks: frozenset[GradHook], hook: GradHook) -> frozenset[GradHook]:
    """``handle.remove()``: the hook, certain or not, no longer runs."""
    gone = replace(hook, certain=False)
    return frozenset(h for h in hooks if replace(h, certain=False) != gone)


@dataclass(frozen=True)
class BackwardReach:
    """What a backward goes through: the graph nodes it reaches (on every path, on some), the
    leaves they feed, whether it runs all of it, and whether the gradients get a graph."""

    must: frozenset[int]
    may: frozenset[int]
    leaves_must: frozenset[int]
    leaves_may: frozenset[int]
    whole: bool  # ``backward()`` without ``inputs=``, on a certain root: every reached hook runs
    create_graph: Tri
    retain_graph: Tri
    roots: frozenset[int]  # the root's graph nodes (a gradient with a graph hangs off them)
    #: The graph may hold parts the engine does not see (an unknown root or input): any hook
    #: may be reached through them.
    open: bool = False
