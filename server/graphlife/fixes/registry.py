"""Recipe class -> the function that turns a recipe of that class into edits on a document.

Why a table: the rules attach typed recipes (:mod:`graphlife.recipes`); this is the one
place that says which code makes each one's edits. A recipe whose shape check fails
yields no fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from graphlife import recipes as r
from graphlife.findings import FixRecipe, Span
from graphlife.fixes import TextEdit, expressions, gradients, rebuild, statements
from graphlife.fixes.document import Document

Recipe = Callable[[Document, dict], "list[TextEdit] | None"]

RECIPES: dict[type[FixRecipe], Recipe] = {
    r.DetachCarriedState: statements.detach_carried_state,
    r.OutOfPlace: statements.out_of_place,
    r.WrapNoGrad: statements.wrap_no_grad,
    r.UnwrapWith: statements.unwrap_with,
    r.DropDecorator: statements.drop_decorator,
    r.MoveNoGradToCallers: rebuild.move_no_grad_to_callers,
    r.StackInsteadOfItems: rebuild.stack_instead_of_items,
    r.DetachExpression: expressions.detach_expression,
    r.RebuildSharedGraph: rebuild.rebuild_shared_graph,
    r.RetainGraph: expressions.retain_graph,
    r.MergeBackwards: statements.merge_backwards,
    r.DetachRequiresGrad: statements.detach_requires_grad,
    r.LeafAfterConversion: expressions.leaf_after_conversion,
    r.InferenceModeToNoGrad: expressions.inference_mode_to_no_grad,
    r.CloneTensor: expressions.clone_tensor,
    r.UseDetach: expressions.use_detach,
    r.UseItem: expressions.use_item,
    r.ReplaceText: expressions.replace_text,
    r.AddKeyword: expressions.add_keyword,
    r.DropKeyword: expressions.drop_keyword,
    r.InsertBefore: statements.insert_before,
    r.InsertAfter: statements.insert_after,
    r.MoveStatementBefore: statements.move_statement_before,
    r.MoveStatementAfter: statements.move_statement_after,
    r.AutogradGrad: gradients.autograd_grad,
}


def make_edits(doc: Document, recipe: FixRecipe, finding: Span) -> list[TextEdit] | None:
    """The edits of ``recipe`` on ``doc`` (``None``: not this recipe's shape, or an unknown class).

    The recipe functions read the recipe's fields by name, plus ``_finding`` (the span the
    finding points at: a recipe may refuse to edit the failing statement itself)."""
    make = RECIPES.get(type(recipe))
    if make is None:
        return None
    params = {f.name: getattr(recipe, f.name) for f in fields(recipe)}
    params["_finding"] = finding
    return make(doc, params)
