"""Small libcst building blocks the recipes share: parenthesizing, keyword surgery.

Why separate: "add ``retain_graph=True``", "drop ``inplace=True``" and "append
``.detach()``" are each used by several recipes, and each has one subtle part
(commas of the neighbouring argument, operator precedence) that must be right once.
"""

from __future__ import annotations

import libcst as cst

#: Expressions that can take ``.attr`` / ``(...)`` / ``op`` without parentheses.
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Tuple, cst.Dict, cst.Set)

#: Python's binary operator precedence (higher binds tighter).
_BINARY_PRECEDENCE: dict[type, int] = {
    cst.BitOr: 1, cst.BitXor: 2, cst.BitAnd: 3, cst.LeftShift: 4, cst.RightShift: 4,
    cst.Add: 5, cst.Subtract: 5,
    cst.Multiply: 6, cst.Divide: 6, cst.FloorDivide: 6, cst.Modulo: 6, cst.MatrixMultiply: 6,
    cst.Power: 8,
}
_UNARY_PRECEDENCE = 7


def is_atom(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, _ATOMS) or bool(getattr(expr, "lpar", ()))


def parenthesized(text: str, expr: cst.BaseExpression) -> str:
    """``text`` (the code of ``expr``) ready for ``.method()`` appended."""
    return text if is_atom(expr) else f"({text})"


def precedence(expr: cst.BaseExpression) -> int:
    if is_atom(expr) or isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return 100
    if isinstance(expr, cst.BinaryOperation):
        return _BINARY_PRECEDENCE.get(type(expr.operator), 0)
    if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
        return _UNARY_PRECEDENCE
    return 0


def operand_text(text: str, expr: cst.BaseExpression, operator: type, right: bool) -> str:
    """``expr`` as an operand of ``operator``; parenthesized unless precedence makes it safe."""
    mine = precedence(expr)
    theirs = _BINARY_PRECEDENCE.get(operator, 100)
    if mine > theirs or (mine == theirs and not right and operator is not cst.Power):
        return text
    if mine == 100:
        return text
    return f"({text})"


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def without_arg(call: cst.Call, victim: cst.Arg) -> cst.Call:
    """``call`` minus one argument; when it was the last, its predecessor takes its comma."""
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is victim)
    del args[index]
    if args and index == len(args):
        args[-1] = args[-1].with_changes(comma=victim.comma)
    return call.with_changes(args=args)


def with_keyword(call: cst.Call, name: str, value: str) -> cst.Call | None:
    """``call`` with ``name=value`` appended; ``None`` when it already has it or takes ``**kw``."""
    if keyword_arg(call, name) is not None or any(a.star == "**" for a in call.args):
        return None
    new = cst.Arg(keyword=cst.Name(name), value=cst.parse_expression(value),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    args = list(call.args)
    if args:
        last = args[-1]
        if isinstance(last.comma, cst.Comma):
            # multi-line call with a trailing comma: keep the layout, add ours after it
            new = new.with_changes(comma=last.comma)
            ws = last.comma.whitespace_after
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=ws))
        else:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(new)
    return call.with_changes(args=args)
