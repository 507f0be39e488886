"""Recipe kind -> function that turns the recipe's params into edits on a document.

Why a table: the rules name recipes by ``kind`` (docs/FIX_RECIPES.md); an unknown
kind, or a known one whose shape check fails, simply yields no fix.
"""

from __future__ import annotations

from collections.abc import Callable

from graphlife.fixes import expressions, gradients, statements
from graphlife.fixes.document import Document

Recipe = Callable[[Document, dict], "list | None"]

RECIPES: dict[str, Recipe] = {
    "detach_carried_state": statements.detach_carried_state,
    "out_of_place": statements.out_of_place,
    "wrap_no_grad": statements.wrap_no_grad,
    "unwrap_with": statements.unwrap_with,
    "drop_decorator": statements.drop_decorator,
    "detach_expression": expressions.detach_expression,
    "retain_graph": expressions.retain_graph,
    "merge_backwards": statements.merge_backwards,
    "detach_requires_grad": statements.detach_requires_grad,
    "leaf_after_conversion": expressions.leaf_after_conversion,
    "inference_mode_to_no_grad": expressions.inference_mode_to_no_grad,
    "clone_tensor": expressions.clone_tensor,
    "use_detach": expressions.use_detach,
    "use_item": expressions.use_item,
    "replace_text": expressions.replace_text,
    "add_keyword": expressions.add_keyword,
    "drop_keyword": expressions.drop_keyword,
    "insert_before": statements.insert_before,
    "insert_after": statements.insert_after,
    "move_statement_before": statements.move_statement_before,
    "move_statement_after": statements.move_statement_after,
    "ignore_comment": expressions.ignore_comment,
    "autograd_grad": gradients.autograd_grad,
}
