"""Python literals in TVMScript: attribute values and the data of `R.const`.

Attribute values (`R.func_attr({...})`, keyword arguments of operator calls) keep
their Python meaning: ints, floats, strings, bools and None stay themselves, lists
and tuples become tuples, dicts become FrozenDicts. Constant data additionally
accepts the spellings of non-finite floats: `"inf"` (TVM 0.27 prints
`R.const("inf", "float32")`), `inf`, `-inf`, `nan`, `float("inf")`, `math.inf`.

Both readers only ever look at the syntax tree; nothing is evaluated.
"""

from __future__ import annotations

import ast
import math

from ..ir import FrozenDict
from .context import ParseContext
from .literal_limits import LiteralError, check_float_text, require_fits


class NotALiteral(Exception):
    """The node is not a plain Python literal; the caller may read it another way.
    With a message, it is one that cannot be read (a float literal beyond float64)."""

    def __init__(self, node: ast.AST, message: str | None = None):
        super().__init__(message or type(node).__name__)
        self.node = node
        self.message = message


_NON_FINITE_NAMES = {"inf": math.inf, "nan": math.nan, "infinity": math.inf}


def number_or_list(node: ast.expr):
    """The data of `R.const(...)`: a number, a bool, or nested lists of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
        try:
            check_float_text(node.value)
        except LiteralError as error:
            raise NotALiteral(node, str(error)) from None
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = number_or_list(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
        raise NotALiteral(node)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [number_or_list(element) for element in node.elts]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        # TVM 0.27 prints non-finite scalars as R.const("inf", "float32").
        value = _non_finite_text(node.value)
        if value is not None:
            return value
    non_finite = _non_finite(node)
    if non_finite is not None:
        return non_finite
    raise NotALiteral(node)


def _non_finite_text(text: str) -> float | None:
    text = text.strip().lower()
    sign = -1.0 if text.startswith("-") else 1.0
    value = _NON_FINITE_NAMES.get(text.lstrip("+-"))
    return None if value is None else sign * value


def _non_finite(node: ast.expr) -> float | None:
    """`inf`, `nan`, `math.inf`, `np.nan`, `float("inf")`, `float("-inf")` and the like."""
    if isinstance(node, ast.Name):
        return _NON_FINITE_NAMES.get(node.id.lower())
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in ("math", "np", "numpy"):
            return _NON_FINITE_NAMES.get(node.attr.lower())
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return _non_finite_text(node.args[0].value)
    return None


def attr_value(node: ast.expr, ctx: ParseContext, other=None):
    """The attribute value that `node` spells. A node that is no Python literal is
    handed to `other(node)` (the Relax parser reads IR values there); without it,
    such a node is an error."""
    if isinstance(node, ast.Constant):
        try:
            check_float_text(node.value)
        except LiteralError as error:
            raise ctx.fail(str(error), node) from None
        if node.value is None or isinstance(node.value, (bool, int, float, str)):
            return _int_attr_checked(node.value, node, ctx)
        raise ctx.fail(f"unsupported literal {node.value!r}", node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _int_attr_checked(-value, node, ctx)
    if isinstance(node, (ast.List, ast.Tuple)):
        return tuple(attr_value(element, ctx, other) for element in node.elts)
    if isinstance(node, ast.Dict):
        return attr_dict(node, ctx, other)
    if other is not None:
        return other(node)
    non_finite = _non_finite(node)
    if non_finite is not None:
        return non_finite
    raise ctx.fail("expected a literal value (a number, string, bool, None, list or dict)", node)


def _int_attr_checked(value, node: ast.expr, ctx: ParseContext):
    # Integer attributes are int64 (TVM's IntImm): a wider one would wrap in the kernels.
    if isinstance(value, int) and not isinstance(value, bool):
        require_fits(ctx, node, value, "int64")
    return value


def attr_dict(node: ast.Dict, ctx: ParseContext, other=None) -> FrozenDict:
    items = {}
    for key_node, value_node in zip(node.keys, node.values):
        if key_node is None:
            raise ctx.fail("'**' is not allowed in an attribute dictionary", value_node)
        if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
            raise ctx.fail("attribute names must be strings", key_node)
        items[key_node.value] = attr_value(value_node, ctx, other)
    return FrozenDict(items)
