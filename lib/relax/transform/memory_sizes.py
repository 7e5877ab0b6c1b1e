"""Byte sizes of tensors for the memory passes: static, symbolic, and the upper
bound a function's `tir_var_upper_bound` attribute gives to a symbolic size.

    tensor_bytes((n, 32), "float32")                   -> n * 128   (a PrimExpr)
    upper_bound_bytes((n, 32), "float32", {"n": 1024}) -> 131072
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..ir import dtype as dt
from ..ir import tir
from ..op.shape import int64, static_value


def tensor_bytes(shape: Sequence[tir.PrimExpr], dtype: str) -> tir.PrimExpr:
    """Bytes of a compact tensor: a static IntImm when every dimension is static."""
    static = 1
    symbolic: tir.PrimExpr | None = None
    for dim in shape:
        value = static_value(dim)
        if value is not None:
            static *= value
        else:
            symbolic = dim if symbolic is None else symbolic * dim
    static *= dt.itemsize(dtype)
    if symbolic is None:
        return int64(static)
    return symbolic * int64(static) if static != 1 else symbolic


def _upper(expr: tir.PrimExpr, bounds: Mapping[str, int]) -> int | None:
    """An upper bound of a non-negative size expression, or None when unknown.

    Sizes are built from non-negative dimensions by +, *, max, min and division by
    a positive constant, all monotonic, so bounding each variable bounds the whole.
    """
    if isinstance(expr, tir.IntImm):
        return expr.value
    if isinstance(expr, tir.Var):
        return bounds.get(expr.name)
    if isinstance(expr, (tir.Add, tir.Mul, tir.Max, tir.Min)):
        a, b = _upper(expr.a, bounds), _upper(expr.b, bounds)
        if a is None or b is None:
            return None
        return {tir.Add: a + b, tir.Mul: a * b, tir.Max: max(a, b), tir.Min: min(a, b)}[type(expr)]
    if isinstance(expr, (tir.FloorDiv, tir.Div)):
        divisor = static_value(expr.b)
        a = _upper(expr.a, bounds)
        if a is None or divisor is None or divisor <= 0:
            return None
        return -(-a // divisor)  # rounding up keeps it a bound for truncating division too
    return None


def upper_bound_bytes(shape: Sequence[tir.PrimExpr], dtype: str, bounds: Mapping[str, int]) -> int | None:
    """Bytes of the tensor at the largest sizes the bounds allow, or None."""
    total = dt.itemsize(dtype)
    for dim in shape:
        value = _upper(dim, bounds)
        if value is None or value < 0:
            return None
        total *= value
    return total


def function_upper_bounds(attrs: Mapping) -> dict[str, int]:
    """The `tir_var_upper_bound` attribute of a function as {variable name: bound}."""
    bounds = attrs.get("tir_var_upper_bound") if attrs else None
    if not bounds:
        return {}
    result = {}
    for name, value in bounds.items():
        value = getattr(value, "value", value)
        if isinstance(value, int) and not isinstance(value, bool):
            result[str(name)] = value
    return result
