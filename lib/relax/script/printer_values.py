"""Helpers the printer modules share: indentation, PrimExpr comparison and folding,
and attribute values (`R.func_attr`, `T.func_attr`, loop and block annotations).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..ir import tir
from . import printer_doc as doc

INDENT = "    "


def indent(lines: list[str]) -> list[str]:
    return [INDENT + line if line else line for line in lines]


def same_expr(a, b) -> bool:
    """Structural equality of two PrimExprs with variables compared by identity."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (tir.IntImm, tir.FloatImm)):
        return a.dtype == b.dtype and a.value == b.value
    if isinstance(a, tir.BinaryOp):
        return same_expr(a.a, b.a) and same_expr(a.b, b.b)
    return False


def is_true(expr) -> bool:
    return expr is None or (isinstance(expr, tir.IntImm) and expr.value == 1)


def add_folded(a, b):
    if isinstance(a, tir.IntImm) and isinstance(b, tir.IntImm):
        return tir.IntImm(a.dtype, a.value + b.value)
    if isinstance(a, tir.IntImm) and a.value == 0:
        return b
    return tir.Add(a, b)


def attr_text(ctx, exprs, attrs) -> str:
    return attr_value(ctx, exprs, attrs)


def attr_value(ctx, exprs, value) -> str:
    """An attribute value as TVM prints it: dicts with sorted keys, sequences as lists."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return doc.bool_text(value)
    if isinstance(value, int):
        return doc.int_text(value)
    if isinstance(value, float):
        return doc.float_text(value)
    if isinstance(value, str):
        return doc.string_text(value)
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "{" + ", ".join(f"{attr_value(ctx, exprs, k)}: {attr_value(ctx, exprs, v)}" for k, v in items) + "}"
    if isinstance(value, (tuple, list)):
        return doc.list_text([attr_value(ctx, exprs, v) for v in value])
    if isinstance(value, tir.PrimExpr):
        return exprs.expr(value)
    if type(value).__name__ == "TargetAttr":
        return f"{ctx.tir('target')}({attr_value(ctx, exprs, value.config)})"
    raise TypeError(f"cannot print attribute value {value!r}")
