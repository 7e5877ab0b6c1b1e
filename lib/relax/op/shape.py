"""Shape arithmetic shared by the operator families: broadcasting, formatting, checks,
folded sums and products of dims, row-major offsets, shape arguments."""

from __future__ import annotations

from typing import Sequence

from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import ShapeStructInfo, StructInfo, TensorStructInfo
from .canonical import same_size
from .infer import literal_of

INT64 = "int64"


def int64(value: int) -> tir.IntImm:
    return tir.IntImm(INT64, value)


def static_value(dim: tir.PrimExpr) -> int | None:
    return dim.value if isinstance(dim, tir.IntImm) else None


def same_dim(a: tir.PrimExpr, b: tir.PrimExpr) -> bool | None:
    """True or False when decidable, None when two symbolic sizes may or may not agree."""
    if a is b:
        return True
    va, vb = static_value(a), static_value(b)
    if va is not None and vb is not None:
        return va == vb
    if isinstance(a, tir.Var) and isinstance(b, tir.Var):
        return None
    # Equal after canonicalization (n * 2 and 2 * n, n + m and m + n), as TVM's analyzer proves.
    return True if same_size(a, b) else None


def format_dim(dim: tir.PrimExpr) -> str:
    value = static_value(dim)
    if value is not None:
        return str(value)
    if isinstance(dim, tir.Var):
        return dim.name
    try:
        return dim.script().strip()
    except Exception:  # noqa: BLE001 - a message must not fail to format
        return "?"


def format_shape(dims: Sequence[tir.PrimExpr]) -> str:
    parts = [format_dim(d) for d in dims]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


class BroadcastError(Exception):
    pass


def broadcast_shapes(a: Sequence[tir.PrimExpr], b: Sequence[tir.PrimExpr]) -> tuple[tir.PrimExpr, ...] | None:
    """numpy broadcasting of two shapes; None when symbolic sizes make it undecidable.

    Raises BroadcastError when static sizes differ and neither is 1.
    """
    result: list[tir.PrimExpr] = []
    for index in range(1, max(len(a), len(b)) + 1):
        da = a[-index] if index <= len(a) else None
        db = b[-index] if index <= len(b) else None
        if da is None or static_value(da) == 1 and db is not None:
            result.append(db)
        elif db is None or static_value(db) == 1:
            result.append(da)
        else:
            same = same_dim(da, db)
            if same is False:
                raise BroadcastError(f"cannot broadcast {format_shape(a)} with {format_shape(b)}")
            if same is None:
                return None
            result.append(da)
    return tuple(reversed(result))


def broadcast_index(in_shape: Sequence[tir.PrimExpr], out_index: Sequence[tir.PrimExpr]) -> tuple[tir.PrimExpr, ...]:
    """The index into an input of shape `in_shape` for an output element at `out_index`."""
    offset = len(out_index) - len(in_shape)
    index = []
    for axis, dim in enumerate(in_shape):
        index.append(int64(0) if static_value(dim) == 1 else out_index[offset + axis])
    return tuple(index)


def tensor_info(call, position: int) -> TensorStructInfo:
    """The struct info of a tensor argument, or an error naming the argument."""
    info: StructInfo = call.arg_info[position]
    if not isinstance(info, TensorStructInfo):
        raise call.error(f"argument {position + 1} must be a tensor, got {type(info).__name__}")
    return info


def make_tensor_info(dims, dtype: str) -> TensorStructInfo:
    if dims is None:
        return TensorStructInfo(None, dtype)
    return TensorStructInfo(rx.ShapeExpr(tuple(dims)), dtype)


def mul_dims(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    """a * b, folded when both are constants."""
    if static_value(a) is not None and static_value(b) is not None:
        return int64(a.value * b.value)
    return a * b


def add_dims(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    """a + b, folded when both are constants."""
    if static_value(a) is not None and static_value(b) is not None:
        return int64(a.value + b.value)
    return a + b


def product_dims(dims) -> tir.PrimExpr:
    """The number of elements of a shape, folded where the dims are constants."""
    total: tir.PrimExpr = int64(1)
    for d in dims:
        total = mul_dims(total, d)
    return total


def sum_dims(dims) -> tir.PrimExpr:
    """The sum of the dims, folded where they are constants."""
    total: tir.PrimExpr = int64(0)
    for d in dims:
        total = add_dims(total, d)
    return total


def axis_list(value):
    """An axis attribute (one axis or several) as a tuple."""
    return (value,) if isinstance(value, int) else tuple(value)


def shape_argument(call, position: int):
    """The dims given by a shape argument (R.shape([...]) or a tuple of ints), or None."""
    arg = call.args[position]
    if isinstance(arg, rx.ShapeExpr):
        return tuple(arg.values)
    if isinstance(arg, rx.Tuple):
        return tuple(int64(v) if isinstance(v, int) else v for v in literal_of(arg))
    info = call.arg_info[position]
    if isinstance(info, ShapeStructInfo) and info.values is not None:
        return tuple(info.values)
    return None


def flat_offset(index, dims) -> tir.PrimExpr:
    """The row-major offset of `index` in a tensor of shape `dims`."""
    if not index:
        return int64(0)
    offset: tir.PrimExpr = index[0]
    for i, d in zip(index[1:], dims[1:]):
        offset = offset * d + i
    return offset


def unflatten(offset: tir.PrimExpr, dims) -> tuple[tir.PrimExpr, ...]:
    """The index of the element at row-major `offset` in a tensor of shape `dims`."""
    index = []
    for d in reversed(dims):
        index.append(offset % d)  # TVM's indexmod and indexdiv: `x % 1` is 0, `x // 1` is x
        offset = offset // d
    return tuple(reversed(index))
