"""Helpers shared by rules (the rule API itself is :mod:`graphlife.analysis.rule_api`).

Rules do not walk the syntax tree themselves. The engine
(:mod:`graphlife.analysis.interpreter`) interprets a function or module body and
calls each rule's hooks with the event and a
:class:`~graphlife.analysis.rule_api.RuleContext` (see
:mod:`graphlife.analysis.events`). A rule decides from the state whether the
event is a bug and reports it through the context.

The module docstring of each rule is its documentation, in the sections ruff
uses: ``What it does``, ``Why is this bad?``, ``What torch says``, ``Example``,
``Use instead``. The hover, ``graphlife rules`` and the docs all show that text.
"""

from __future__ import annotations

import ast

from graphlife.analysis.rule_api import GradMode
from graphlife.findings import MessageTemplate, Severity

#: Added to the message of an error that needs gradients on, in a function analyzed alone.
ASSUMED_GRAD_NOTE = MessageTemplate(
    "note.assumed-grad",
    " (This function is analyzed without its callers: that holds if gradients are on when it runs, "
    "as they are unless a caller turns them off.)",
    zh_cn="（这个函数是脱离调用方单独分析的：只有在它运行时梯度记录处于开启状态才成立；除非调用方关闭了梯度，默认就是开启的。）",
)


def grad_mode_severity(mode: GradMode, severity: Severity) -> tuple[Severity, str]:
    """An error that torch raises only with gradients on (an in-place change of a leaf, an
    inference tensor saved, ...) is certain only where the mode is known; in a function
    analyzed without its callers it is a warning, with a note saying why."""
    if severity is Severity.ERROR and mode.assumed:
        return Severity.WARNING, ASSUMED_GRAD_NOTE()
    return severity, ""


#: Builtins whose result is never a tensor, tensor attributes and methods that give a number or a shape.
_NON_TENSOR_BUILTINS = frozenset({"float", "int", "bool", "len", "str", "tuple", "list", "dict", "round"})
_NON_TENSOR_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad"})
_NON_TENSOR_METHODS = frozenset(
    {"size", "dim", "numel", "item", "tolist", "stride", "element_size", "nelement", "ndimension", "data_ptr"}
)


def is_non_tensor_literal(node: ast.expr) -> bool:
    """An expression that is certainly not a tensor and not ``None``: numbers, strings, containers, shapes."""
    if isinstance(node, ast.Constant):
        return node.value is not None and node.value is not Ellipsis
    if isinstance(node, (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.JoinedStr, ast.ListComp, ast.DictComp,
                         ast.SetComp, ast.Lambda)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return isinstance(node.operand.value, (int, float, complex))
    if isinstance(node, ast.Attribute) and node.attr in _NON_TENSOR_ATTRIBUTES:
        return True
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in _NON_TENSOR_BUILTINS:
            return True
        if isinstance(func, ast.Attribute) and func.attr in _NON_TENSOR_METHODS:
            return True
    return False
