"""Grad mode from the syntax: which ``with`` items and decorators turn gradients off or on.

Why here: whether ``with no_grad():`` (after ``from torch import no_grad``),
``@torch.inference_mode()`` or ``torch.set_grad_enabled(flag)`` turns gradients off
is one question; the GL104 fix proof and the interpreter each answered it (the
interpreter by the text of a decorator). The table of grad-mode contexts, what a
literal flag makes of them, and the lexical mode around a node live here.

A *switch* is one context manager or decorator of a grad-mode kind. Its setting:

- ``OFF``: ``no_grad()``, ``inference_mode()`` / ``inference_mode(True)``,
  ``set_grad_enabled(False)``, and the bare decorators ``@no_grad`` / ``@inference_mode``;
- ``ON``: ``enable_grad()``, ``set_grad_enabled(True)``;
- ``KEPT``: ``inference_mode(False)`` (the mode stays what it was);
- ``UNKNOWN``: a flag that is not a literal, unexpected arguments, ``*args``.

``with torch.no_grad:`` (no call) is no context manager and no switch.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from graphlife.analysis.semantics.names import Names, Reader

#: The grad-mode context managers (and decorators) by qualified name -> their kind.
GRAD_CONTEXTS: dict[str, str] = {
    f"{namespace}.{kind}": kind
    for namespace in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    for kind in ("no_grad", "enable_grad", "inference_mode", "set_grad_enabled")
}


class GradSetting(Enum):
    """What entering a grad-mode context does to the mode."""

    OFF = "off"
    ON = "on"
    KEPT = "kept"  # leaves the mode as it was
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class GradSwitch:
    """One grad-mode context manager or decorator, and what it does."""

    kind: str  # "no_grad" | "enable_grad" | "inference_mode" | "set_grad_enabled"
    setting: GradSetting
    inference: bool  # also turns inference mode on
    expr: ast.expr  # the ``with`` item's context expression, or the decorator


def grad_context_kind(qualified: str | None) -> str | None:
    """The kind of grad-mode context ``qualified`` names, or ``None``."""
    return GRAD_CONTEXTS.get(qualified) if qualified is not None else None


def setting_for_flag(kind: str, flag: bool | None) -> GradSetting:
    """What a context of ``kind`` entered with the mode flag ``flag`` does (``set_grad_enabled(flag)``,
    ``inference_mode(flag)``; ``None``: a flag that is not known). The interpreter, which knows
    values where the syntax does not, asks this with the flag it evaluated."""
    if kind == "no_grad":
        return GradSetting.OFF
    if kind == "enable_grad":
        return GradSetting.ON
    if flag is None:
        return GradSetting.UNKNOWN
    if kind == "inference_mode":
        return GradSetting.OFF if flag else GradSetting.KEPT
    return GradSetting.ON if flag else GradSetting.OFF


def _literal(expr: ast.expr | None) -> bool | None:
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, bool) else None


def switch_of(kind: str, expr: ast.expr, *, decorator: bool) -> GradSwitch | None:
    """The switch ``expr`` (a call of a grad-mode context of ``kind``, or a decorator) is."""
    call = expr if isinstance(expr, ast.Call) else None
    if call is None and not decorator:
        return None  # `with torch.no_grad:` is not a context manager
    args = list(call.args) if call is not None else []
    keywords = {kw.arg: kw.value for kw in call.keywords} if call is not None else {}
    if None in keywords or any(isinstance(a, ast.Starred) for a in args):
        return GradSwitch(kind, GradSetting.UNKNOWN, False, expr)
    if kind == "no_grad":
        return GradSwitch(kind, GradSetting.OFF if not args and not keywords else GradSetting.UNKNOWN, False, expr)
    if kind == "enable_grad":
        return GradSwitch(kind, GradSetting.ON, False, expr)
    if kind == "inference_mode" and not args and not keywords:
        return GradSwitch(kind, GradSetting.OFF, True, expr)  # `inference_mode()`, `@inference_mode`
    if call is None:
        return GradSwitch(kind, GradSetting.UNKNOWN, False, expr)  # `@set_grad_enabled` without a flag
    if len(args) == 1 and not keywords:
        flag = _literal(args[0])
    elif not args and set(keywords) == {"mode"}:
        flag = _literal(keywords["mode"])
    else:
        return GradSwitch(kind, GradSetting.UNKNOWN, False, expr)
    setting = setting_for_flag(kind, flag)
    return GradSwitch(kind, setting, kind == "inference_mode" and setting is GradSetting.OFF, expr)


@dataclass(frozen=True)
class GradRegion:
    """A construct that sets the grad mode of the code it holds: a ``with`` statement or a
    decorated function, with its switches in the order they are entered."""

    construct: ast.With | ast.FunctionDef | ast.AsyncFunctionDef
    switches: tuple[GradSwitch, ...]

    @property
    def setting(self) -> GradSetting:
        """The mode inside: the switches entered one after the other (the last one wins;
        ``UNKNOWN`` when one is not known)."""
        result = GradSetting.KEPT
        for switch in self.switches:
            if switch.setting is GradSetting.UNKNOWN:
                return GradSetting.UNKNOWN
            if switch.setting is not GradSetting.KEPT:
                result = switch.setting
        return result


class Grad:
    """The grad-mode switches of one file, resolved through its names."""

    def __init__(self, names: Names, parents: dict[int, ast.AST]) -> None:
        self._names = names
        self._parents = parents

    def switch(self, expr: ast.expr, *, decorator: bool = False, read: Reader | None = None) -> GradSwitch | None:
        """The switch ``expr`` is (a ``with`` item's context expression, a decorator, or the
        call of a ``torch.set_grad_enabled(False)`` statement), or ``None``."""
        target = expr.func if isinstance(expr, ast.Call) else expr
        kind = grad_context_kind(self._names.qualified_name(target, read))
        return switch_of(kind, expr, decorator=decorator) if kind is not None else None

    def with_switches(self, stmt: ast.With, read: Reader | None = None) -> tuple[GradSwitch, ...]:
        """The grad-mode switches a ``with`` statement enters, in order (``async with`` has none:
        the grad-mode contexts are not asynchronous context managers)."""
        found = (self.switch(item.context_expr, read=read) for item in stmt.items)
        return tuple(switch for switch in found if switch is not None)

    def decorator_switches(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, read: Reader | None = None
    ) -> tuple[GradSwitch, ...]:
        """The grad-mode decorators of ``func``, in the order they are entered around a call
        (the outermost, first written, first)."""
        found = (self.switch(d, decorator=True, read=read) for d in func.decorator_list)
        return tuple(switch for switch in found if switch is not None)

    def regions_around(self, node: ast.AST, read: Reader | None = None) -> Iterator[GradRegion]:
        """The ``with`` statements (holding ``node`` in their body) and the function whose grad
        switches apply to ``node``, innermost first, up to the function ``node`` is in
        (decorators included); nothing beyond it: the caller decides the mode there."""
        child = node
        parent = self._parents.get(id(child))
        while parent is not None and not isinstance(parent, (ast.Module, ast.ClassDef, ast.Lambda)):
            if isinstance(parent, ast.With) and isinstance(child, ast.stmt):
                switches = self.with_switches(parent, read)
                if switches:
                    yield GradRegion(parent, switches)
            elif isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(child, ast.stmt):
                switches = self.decorator_switches(parent, read)
                if switches:
                    yield GradRegion(parent, switches)
                return
            child, parent = parent, self._parents.get(id(parent))

    def setting_at(self, node: ast.AST, read: Reader | None = None) -> GradSetting:
        """The grad mode at ``node`` as its function's code sets it (``KEPT``: the code around it
        in the function does not set it; it is the caller's, or the module's default)."""
        for region in self.regions_around(node, read):
            setting = region.setting
            if setting is not GradSetting.KEPT:
                return setting
        return GradSetting.KEPT
