"""Attribute values of TIR functions, loops and blocks: `T.func_attr({...})`,
`annotations={...}`, `T.sblock_attr({...})`.

Values are plain Python data where the text is plain data (str, int, float,
bool, None, tuples for lists, FrozenDict for dicts), PrimExprs where the text is
an expression over variables, and a TargetAttr for `T.target({...})`, so the
printer writes back what it read.
"""

from __future__ import annotations

import ast

from ..ir import FrozenDict
from ..ir.node import Node, node
from .context import ParseContext, Scope
from .prim_expr import PrimExprParser


@node
class TargetAttr(Node):
    """`T.target({...})` in a function attribute: the target's configuration, as written."""

    config: FrozenDict


def parse_attr_value(value_node: ast.expr, ctx: ParseContext, scope: Scope):
    """The Python or IR value an attribute is written as."""
    if isinstance(value_node, ast.Constant):
        if isinstance(value_node.value, (str, int, float, bool)) or value_node.value is None:
            return value_node.value
    if isinstance(value_node, ast.UnaryOp) and isinstance(value_node.op, ast.USub):
        inner = value_node.operand
        if isinstance(inner, ast.Constant) and isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
            return -inner.value
    if isinstance(value_node, (ast.List, ast.Tuple)):
        return tuple(parse_attr_value(element, ctx, scope) for element in value_node.elts)
    if isinstance(value_node, ast.Dict):
        return parse_attr_dict(value_node, ctx, scope)
    if isinstance(value_node, ast.Call) and ctx.dialect_of(value_node.func) == ("tir", "target"):
        if len(value_node.args) != 1 or not isinstance(value_node.args[0], ast.Dict):
            raise ctx.fail("T.target takes one dictionary of target options", value_node)
        return TargetAttr(parse_attr_dict(value_node.args[0], ctx, scope), span=ctx.span(value_node))
    return PrimExprParser(ctx, scope).parse(value_node)


def parse_attr_dict(dict_node: ast.expr, ctx: ParseContext, scope: Scope) -> FrozenDict:
    """A `{"key": value, ...}` literal with string keys."""
    if not isinstance(dict_node, ast.Dict):
        raise ctx.fail("expected a dictionary of attributes: {\"key\": value}", dict_node)
    items = {}
    for key_node, value_node in zip(dict_node.keys, dict_node.values):
        if not isinstance(key_node, ast.Constant) or not isinstance(key_node.value, str):
            raise ctx.fail("attribute names must be strings", key_node if key_node is not None else dict_node)
        items[key_node.value] = parse_attr_value(value_node, ctx, scope)
    return FrozenDict(items)

