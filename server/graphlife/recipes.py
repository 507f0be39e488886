"""The fixes a rule can attach to a finding: one typed value per kind of transformation.

Why typed values and not a kind name with a dictionary: a rule that builds a recipe
gets its fields checked (mypy, and the constructor), the code that turns a recipe into
edits (:mod:`graphlife.fixes`) reads named attributes, and docs/FIX_RECIPES.md is
generated from these classes, so the list of recipes cannot drift from the code.

Every span is of the *analyzed* source (1-based lines, 1-based character columns, end
exclusive). Each class's docstring says what edit it makes; its ``DEFAULT`` says whether
that edit is safe (keeps what the code computes) unless the rule that attaches it says
otherwise for the shape it saw (``applicability=``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from graphlife.findings import Applicability, FixRecipe, Span

SAFE = Applicability.SAFE
UNSAFE = Applicability.UNSAFE


@dataclass(frozen=True)
class CarriedName:
    """One name a loop hands from one iteration to the next (``hidden``, ``self.h``)."""

    name: str
    #: A tuple of tensors (an LSTM's ``(h, c)``): detached item by item.
    is_tuple: bool = False
    #: Before the loop it may be ``None`` (``hidden = None``): the detach needs a guard.
    maybe_none: bool = False


@dataclass(frozen=True, kw_only=True)
class DetachCarriedState(FixRecipe):
    """Detach every carried name whose value reaches the old graph, once each, as the first
    statements of the loop body (after the detaches already there): ``h = h.detach()``; a
    tuple: ``state = tuple(t.detach() for t in state)``; a name that may be ``None`` before
    the loop is guarded by ``if h is not None:``. A name already detached there is skipped."""

    kind: ClassVar[str] = "detach_carried_state"
    loop: Span
    targets: tuple[CarriedName, ...]


@dataclass(frozen=True, kw_only=True)
class DetachExpression(FixRecipe):
    """``fake`` -> ``fake.detach()`` where it is the argument of a module call (the GAN
    discriminator's ``D(fake.detach())``); never as the argument of a torch functional."""

    kind: ClassVar[str] = "detach_expression"
    expr: Span


@dataclass(frozen=True, kw_only=True)
class RebuildSharedGraph(FixRecipe):
    """A freed subgraph two losses share (``d_fake = D(fake)`` reused by the generator loss
    after ``d_loss.backward()``): the earlier consumer gets ``D(fake.detach())`` and every
    later read of ``d_fake`` becomes a fresh ``D(fake)``, built with the updated weights."""

    kind: ClassVar[str] = "rebuild_shared_graph"
    #: The input to detach (``fake`` in ``D(fake)``).
    detach: Span
    #: The reads of the shared output after the earlier backward.
    reads: tuple[Span, ...]
    #: The call that makes the shared output, as written (``D(fake)``).
    call: str


@dataclass(frozen=True, kw_only=True)
class MergeBackwards(FixRecipe):
    """Two adjacent ``a.backward()`` / ``b.backward()`` -> one ``(a + b).backward()``: the
    same gradients, one pass through the shared part."""

    kind: ClassVar[str] = "merge_backwards"
    first: Span
    second: Span
    first_root: str
    second_root: str


@dataclass(frozen=True, kw_only=True)
class RetainGraph(FixRecipe):
    """Add ``retain_graph=True`` to the earlier backward (or ``autograd.grad``) call. Unsafe:
    every tensor the graph saved stays alive until the last backward through it."""

    kind: ClassVar[str] = "retain_graph"
    DEFAULT: ClassVar[Applicability] = UNSAFE
    applicability: Applicability = UNSAFE
    call: Span


@dataclass(frozen=True, kw_only=True)
class OutOfPlace(FixRecipe):
    """The in-place change in its out-of-place form: ``x += y`` -> ``x = x + y``,
    ``x.add_(y)`` -> ``x = x.add(y)``, ``torch.relu_(x)`` -> ``x = torch.relu(x)``,
    ``x[i] = v`` -> ``x = x.clone()`` first; with ``construction``, drop ``inplace=True``
    (or a module's positional ``True``) there."""

    kind: ClassVar[str] = "out_of_place"
    stmt: Span | None = None
    construction: Span | None = None


@dataclass(frozen=True, kw_only=True)
class WrapNoGrad(FixRecipe):
    """Put the statement(s) from ``stmt`` to ``end_stmt`` inside ``with torch.no_grad():``."""

    kind: ClassVar[str] = "wrap_no_grad"
    stmt: Span
    end_stmt: Span | None = None


@dataclass(frozen=True, kw_only=True)
class UnwrapWith(FixRecipe):
    """The body of a ``with torch.no_grad():`` block, dedented in its place (one context
    manager; a comment on the ``with`` line kept on a line of its own; refused when a
    multi-line string would change)."""

    kind: ClassVar[str] = "unwrap_with"
    block: Span
    #: The rule checked that the ``as`` target is never read.
    unused_as: bool = False


@dataclass(frozen=True, kw_only=True)
class DropDecorator(FixRecipe):
    """Delete one decorator line (``@torch.no_grad()``); its comment stays on a line of its own."""

    kind: ClassVar[str] = "drop_decorator"
    decorator: Span


@dataclass(frozen=True, kw_only=True)
class MoveNoGradToCallers(FixRecipe):
    """A helper shared by training and evaluation: delete its ``@torch.no_grad()`` line and
    put each evaluation caller's statement inside ``with torch.no_grad():``."""

    kind: ClassVar[str] = "move_no_grad_to_callers"
    decorator: Span
    #: The statements that call the helper for evaluation (outside any backward's graph).
    callers: tuple[Span, ...]


@dataclass(frozen=True, kw_only=True)
class StackInsteadOfItems(FixRecipe):
    """``torch.tensor([f(s).item() for s in xs])`` -> ``torch.stack([f(s).reshape(()) for s in xs])``:
    the numbers keep their graph."""

    kind: ClassVar[str] = "stack_instead_of_items"
    #: The ``torch.tensor(...)`` call.
    call: Span


@dataclass(frozen=True, kw_only=True)
class LeafAfterConversion(FixRecipe):
    """``torch.randn(3, requires_grad=True) * 0.01`` -> ``(torch.randn(3) * 0.01).requires_grad_()``
    (only when one call inside says ``requires_grad=True``)."""

    kind: ClassVar[str] = "leaf_after_conversion"
    expr: Span
    assign: Span | None = None


@dataclass(frozen=True, kw_only=True)
class DetachRequiresGrad(FixRecipe):
    """``y.requires_grad = True`` on a non-leaf -> ``y = y.detach().requires_grad_()``
    (``False``: ``y = y.detach()``). Unsafe: what produced ``y`` no longer trains through it."""

    kind: ClassVar[str] = "detach_requires_grad"
    DEFAULT: ClassVar[Applicability] = UNSAFE
    applicability: Applicability = UNSAFE
    stmt: Span
    target: str
    flag: bool


@dataclass(frozen=True, kw_only=True)
class InferenceModeToNoGrad(FixRecipe):
    """``with torch.inference_mode():`` -> ``with torch.no_grad():`` (its tensors stay normal ones)."""

    kind: ClassVar[str] = "inference_mode_to_no_grad"
    item: Span


@dataclass(frozen=True, kw_only=True)
class CloneTensor(FixRecipe):
    """An inference tensor used under autograd -> ``expr.clone()`` (a normal tensor)."""

    kind: ClassVar[str] = "clone_tensor"
    expr: Span


@dataclass(frozen=True, kw_only=True)
class UseDetach(FixRecipe):
    """A stored value -> ``value.detach()``: the container keeps the numbers, not the graph."""

    kind: ClassVar[str] = "use_detach"
    expr: Span


@dataclass(frozen=True, kw_only=True)
class UseItem(FixRecipe):
    """A stored one-element tensor -> ``value.item()``. Unsafe: the container then holds
    Python numbers, which code that stacks or moves the values does not expect."""

    kind: ClassVar[str] = "use_item"
    DEFAULT: ClassVar[Applicability] = UNSAFE
    applicability: Applicability = UNSAFE
    expr: Span


@dataclass(frozen=True, kw_only=True)
class AddKeyword(FixRecipe):
    """Add ``keyword=value`` to a call (``use_reentrant=False``)."""

    kind: ClassVar[str] = "add_keyword"
    call: Span
    keyword: str
    value: str


@dataclass(frozen=True, kw_only=True)
class DropKeyword(FixRecipe):
    """Remove one keyword argument from a call (an unneeded ``retain_graph=True``)."""

    kind: ClassVar[str] = "drop_keyword"
    call: Span
    keyword: str


@dataclass(frozen=True, kw_only=True)
class InsertBefore(FixRecipe):
    """Insert one line of code before a statement, at its indentation."""

    kind: ClassVar[str] = "insert_before"
    anchor: Span
    code: str


@dataclass(frozen=True, kw_only=True)
class InsertAfter(FixRecipe):
    """Insert one line of code after a one-line statement, at its indentation."""

    kind: ClassVar[str] = "insert_after"
    anchor: Span
    code: str


@dataclass(frozen=True, kw_only=True)
class MoveStatementBefore(FixRecipe):
    """Move a one-line statement to just before another statement of the same block."""

    kind: ClassVar[str] = "move_statement_before"
    stmt: Span
    anchor: Span


@dataclass(frozen=True, kw_only=True)
class MoveStatementAfter(FixRecipe):
    """Move a one-line statement down to just after another statement of the same block."""

    kind: ClassVar[str] = "move_statement_after"
    stmt: Span
    anchor: Span


@dataclass(frozen=True, kw_only=True)
class ReplaceText(FixRecipe):
    """Replace one span by a text the rule wrote (``@staticmethod`` insertions, ``.apply``)."""

    kind: ClassVar[str] = "replace_text"
    span: Span
    text: str


@dataclass(frozen=True, kw_only=True)
class AutogradGrad(FixRecipe):
    """``loss.backward(create_graph=True)`` -> ``(x_grad,) = torch.autograd.grad(loss, x,
    create_graph=True)`` and each ``x.grad`` read -> ``x_grad`` (a list of leaves walked by a
    comprehension: ``grads = torch.autograd.grad(loss, params, ...)``, walked instead); with
    ``merge``, the next ``other.backward()`` -> ``(loss + other).backward()``."""

    kind: ClassVar[str] = "autograd_grad"
    backward: Span
    root: Span
    #: The names whose gradients are taken (or the one list a comprehension walks).
    inputs: tuple[str, ...]
    #: ``inputs`` is that one list.
    sequence: bool
    #: The ``x.grad`` / ``p.grad`` reads to replace.
    reads: tuple[Span, ...]
    merge: Span | None = None


#: Every recipe class, in the order docs/FIX_RECIPES.md lists them.
ALL_RECIPES: tuple[type[FixRecipe], ...] = (
    DetachCarriedState, DetachExpression, RebuildSharedGraph, MergeBackwards, RetainGraph, OutOfPlace,
    WrapNoGrad, UnwrapWith, DropDecorator, MoveNoGradToCallers, StackInsteadOfItems, LeafAfterConversion,
    DetachRequiresGrad, InferenceModeToNoGrad, CloneTensor, UseDetach, UseItem, AddKeyword, DropKeyword,
    InsertBefore, InsertAfter, MoveStatementBefore, MoveStatementAfter, ReplaceText, AutogradGrad,
)


def default_applicability(recipe: type[FixRecipe]) -> Applicability:
    """What a recipe of this class is unless its rule says otherwise for the shape it saw."""
    value = getattr(recipe, "DEFAULT", SAFE)
    return value if isinstance(value, Applicability) else SAFE
