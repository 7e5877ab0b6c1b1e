"""Sliding-window arithmetic shared by convolutions and pools: attribute normal forms
(strides, padding, dilation as TVM spells them), layout letters, output sizes.

Attributes are accepted in every form TVM's Python API accepts (`strides=2`,
`padding=(1, 2)`) and read here in TVM's normal form: one value per spatial axis
for strides and dilation, (before..., after...) for padding.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from .shape import int64, static_value


# The spatial layout letters of 1-, 2- and 3-D windows: a layout is a permutation of
# "NC" + these (data) or "OI" / "IO" + these (kernels).
SPATIAL_LETTERS = {1: "W", 2: "HW", 3: "DHW"}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def int_tuple_check(lengths: tuple[int, ...], minimum: int = 0):
    """A check for an int or a list of ints whose length is one of `lengths`."""

    def check(value) -> str | None:
        values = (value,) if _is_int(value) else value
        if not isinstance(values, tuple) or not all(_is_int(v) for v in values):
            return "expected an int or a list of ints"
        if len(values) not in lengths:
            counts = " or ".join(str(n) for n in sorted(set(lengths)))  # (1, rank) is (1, 1) in 1-D
            return f"expected {counts} values, got {len(values)}"
        if any(v < minimum for v in values):
            return f"values must be at least {minimum}"
        return None

    return check


def spatial_values(value, rank: int) -> tuple[int, ...]:
    """strides/dilation/pool_size in normal form: one value per spatial axis."""
    values = (value,) if _is_int(value) else tuple(value)
    return values * rank if len(values) == 1 else values


def padding_values(value, rank: int) -> tuple[int, ...]:
    """padding in TVM's normal form (before..., after...): one value pads every side,
    `rank` values pad both sides of each axis, 2 * rank values are already normal."""
    values = (value,) if _is_int(value) else tuple(value)
    if len(values) == 1:
        return values * (2 * rank)
    if len(values) == rank:
        return values + values
    return values


def padding_check(rank: int):
    return int_tuple_check(tuple(sorted({1, rank, 2 * rank})))


def out_dtype_check(value) -> str | None:
    if value in (None, "", "void") or isinstance(value, str) and dt.is_valid(value):
        return None
    return "expected a data type"


def layout_check(letters: str):
    """A check for a layout that is a permutation of `letters` ("NCHW", "OIHW")."""

    def check(value) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or sorted(value) != sorted(letters):
            return f"expected a permutation of {letters!r}"
        return None

    return check


def dim(value) -> tir.PrimExpr:
    return value if isinstance(value, tir.PrimExpr) else int64(value)


def fold(expr: tir.PrimExpr) -> tir.PrimExpr:
    """A size expression folded to a constant, or simplified when symbolic."""
    from ..tir.arith import simplify_expr

    return simplify_expr(expr)


def window_out_size(size, pad_total: int, kernel, dilation: int, stride: int, ceil_mode: bool = False):
    """How many windows fit: floor (or ceil) of (size + pad - dilated kernel) / stride, plus 1."""
    dilated = fold(dim(dilation) * (dim(kernel) - int64(1)) + int64(1))
    span = dim(size) + int64(pad_total) - dilated
    if ceil_mode:
        span = span + int64(stride - 1)
    return fold(tir.FloorDiv(span, int64(stride)) + int64(1))


def positive(value) -> bool:
    """False only when a size is statically known to be below 1."""
    known = static_value(value)
    return known is None or known > 0


def axes_of(layout: str, letters: str) -> tuple[int, ...]:
    """Where each of `letters` sits in `layout`: axes_of("NHWC", "NCHW") == (0, 3, 1, 2)."""
    return tuple(layout.index(letter) for letter in letters)


def place(axes, canonical) -> tuple:
    """Dims or indices given in canonical order (N, C, spatial...) placed at the
    layout's axis positions, `axes` being axes_of(layout, canonical letters)."""
    placed = [None] * len(axes)
    for position, axis in enumerate(axes):
        placed[axis] = canonical[position]
    return tuple(placed)


def pick(values, axes) -> tuple:
    """The inverse of place: values of a layout in canonical order."""
    return tuple(values[axis] for axis in axes)


def in_bounds(indices, sizes) -> tir.PrimExpr:
    """0 <= index < size for every pair, as one condition."""
    condition = None
    for index, size in zip(indices, sizes):
        part = tir.And(tir.GE(index, int64(0)), tir.LT(index, size))
        condition = part if condition is None else tir.And(condition, part)
    return condition if condition is not None else tir.IntImm("bool", 1)


def if_then_else(condition, value, otherwise) -> tir.PrimExpr:
    """`value` where `condition` holds; the value is not evaluated elsewhere (it may
    load out of bounds there), unlike tir.Select."""
    return tir.Call(value.dtype, "tir.if_then_else", (condition, value, otherwise))
