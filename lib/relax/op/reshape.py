"""Reshaping operators: reshape, permute_dims, broadcast_to, expand_dims, squeeze, flatten,
layout_transform: each output element is one input element moved to a new index.

Struct-info inference and legalization only; manipulation.py registers them. reshape and the
operators that keep the element order (expand_dims, squeeze, flatten) go through the
row-major flat offset; permute_dims and layout_transform permute the indices.
"""

from __future__ import annotations

from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import ShapeStructInfo, TensorStructInfo
from . import te
from .reduction import normalize_axes
from .shape import (
    axis_list, broadcast_index, flat_offset, format_shape, int64, make_tensor_info, product_dims, same_dim,
    shape_argument, static_value, tensor_info, unflatten,
)


def _reshape_dims(call):
    x = tensor_info(call, 0)
    dims = shape_argument(call, 1)
    if dims is None:
        return None
    minus_one = [i for i, d in enumerate(dims) if static_value(d) == -1]
    if len(minus_one) > 1:
        raise call.error("at most one dimension may be -1")
    if x.shape_values is None:
        return None if minus_one else dims
    total = product_dims(x.shape_values)
    if minus_one:
        known = product_dims([d for i, d in enumerate(dims) if i != minus_one[0]])
        if static_value(known) == 0:
            # Any size times 0 is 0: the -1 has no single answer (and would divide by zero).
            raise call.error(f"cannot infer the -1 in {format_shape(dims)}: the other dimensions multiply to 0")
        inferred = int64(total.value // known.value) if static_value(total) is not None and static_value(known) is not None else tir.FloorDiv(total, known)
        dims = dims[: minus_one[0]] + (inferred,) + dims[minus_one[0] + 1:]
    new_total = product_dims(dims)
    if static_value(total) is not None and static_value(new_total) is not None and total.value != new_total.value:
        raise call.error(f"cannot reshape {format_shape(x.shape_values)} ({total.value} elements) "
                         f"to {format_shape(dims)} ({new_total.value} elements)")
    return dims


def reshape_infer(call) -> TensorStructInfo:
    x = tensor_info(call, 0)
    dims = _reshape_dims(call)
    if dims is None:
        shape_info = call.arg_info[1]
        ndim = shape_info.ndim if isinstance(shape_info, ShapeStructInfo) else -1
        return TensorStructInfo(call.args[1] if isinstance(call.args[1], rx.Var) else None, x.dtype, ndim)
    return make_tensor_info(dims, x.dtype)


def reshape_legalize(call, context):
    dims = _reshape_dims(call)
    if dims is None:
        return None
    return context.call_te(
        lambda x: te.compute(dims, lambda *i: x[unflatten(flat_offset(i, dims), x.shape)], "T_reshape"),
        call.args[:1], call.arg_info[:1], "reshape",
    )


def _permutation(call, ndim):
    axes = call.attrs["axes"]
    if axes is None:
        return tuple(reversed(range(ndim)))
    normalized = tuple(a % ndim if -ndim <= a < ndim else None for a in axes)
    if len(axes) != ndim or None in normalized or sorted(normalized) != list(range(ndim)):
        raise call.error(f"axes {list(axes)} are not a permutation of {ndim} dimensions")
    return normalized


def permute_infer(call):
    x = tensor_info(call, 0)
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, x.ndim)
    order = _permutation(call, x.ndim)
    return make_tensor_info(tuple(x.shape_values[a] for a in order), x.dtype)


def permute_legalize(call, context):
    x = tensor_info(call, 0)
    if x.shape_values is None:
        return None
    order = _permutation(call, x.ndim)

    def fcompute(a):
        inverse = [order.index(axis) for axis in range(a.ndim)]
        dims = tuple(a.shape[axis] for axis in order)
        return te.compute(dims, lambda *i: a[tuple(i[inverse[axis]] for axis in range(a.ndim))], "T_transpose")

    return context.call_te(fcompute, call.args, call.arg_info, "transpose")


def broadcast_to_infer(call):
    x = tensor_info(call, 0)
    dims = shape_argument(call, 1)
    if dims is None:
        return TensorStructInfo(None, x.dtype, -1)
    if x.shape_values is not None:
        if len(x.shape_values) > len(dims):
            raise call.error(f"cannot broadcast {format_shape(x.shape_values)} to {format_shape(dims)}")
        for have, want in zip(reversed(x.shape_values), reversed(dims)):
            if static_value(have) != 1 and same_dim(have, want) is False:
                raise call.error(f"cannot broadcast {format_shape(x.shape_values)} to {format_shape(dims)}")
    return make_tensor_info(dims, x.dtype)


def broadcast_to_legalize(call, context):
    dims = shape_argument(call, 1)
    if dims is None:
        return None
    return context.call_te(
        lambda x: te.compute(dims, lambda *i: x[broadcast_index(x.shape, i)], "T_broadcast_to"),
        call.args[:1], call.arg_info[:1], "broadcast_to",
    )


def _expand_dims_positions(call, ndim):
    axes = axis_list(call.attrs["axis"])
    out_ndim = ndim + len(axes)
    return normalize_axes(call, axes, out_ndim), out_ndim


def expand_dims_dims(call, dims):
    positions, out_ndim = _expand_dims_positions(call, len(dims))
    source = iter(dims)
    return tuple(int64(1) if axis in positions else next(source) for axis in range(out_ndim))


def _squeeze_axes(call, dims):
    axis = call.attrs["axis"]
    if axis is None:
        return tuple(i for i, d in enumerate(dims) if static_value(d) == 1)
    axes = normalize_axes(call, axis_list(axis), len(dims))
    for a in axes:
        if static_value(dims[a]) not in (1, None):
            raise call.error(f"cannot squeeze axis {a} of size {static_value(dims[a])}")
    return axes


def layout_infer(compute_dims):
    def infer(call):
        x = tensor_info(call, 0)
        if x.shape_values is None:
            return TensorStructInfo(None, x.dtype, -1)
        return make_tensor_info(compute_dims(call, x.shape_values), x.dtype)

    return infer


def reshape_like_legalize(name, compute_dims):
    """Legalization of an operator that only changes the shape, not the element order."""

    def legalize(call, context):
        x = tensor_info(call, 0)
        if x.shape_values is None:
            return None

        def fcompute(a):
            dims = compute_dims(call, a.shape)
            return te.compute(dims, lambda *i: a[unflatten(flat_offset(i, dims), a.shape)], f"T_{name}")

        return context.call_te(fcompute, call.args, call.arg_info, name)

    return legalize


def squeeze_dims(call, dims):
    axes = _squeeze_axes(call, dims)
    return tuple(d for i, d in enumerate(dims) if i not in axes)


def flatten_dims(call, dims):
    return (product_dims(dims),)


def _index_map(call):
    mapping = call.attrs["index_map"]
    return tuple(mapping["initial_indices"]), tuple(mapping["final_indices"])


def _mapped_extent(expr, initial, dims):
    """The extent of one output axis of the index map: v, v // c, v % c."""
    if isinstance(expr, tir.Var) and any(expr is v for v in initial):
        return dims[[v is expr for v in initial].index(True)]
    if isinstance(expr, (tir.FloorDiv, tir.FloorMod)) and isinstance(expr.b, tir.IntImm):
        inner = _mapped_extent(expr.a, initial, dims)
        if inner is None:
            return None
        if isinstance(expr, tir.FloorMod):
            return int64(expr.b.value)
        if static_value(inner) is not None:
            return int64(-(-inner.value // expr.b.value))
        return (inner + int64(expr.b.value - 1)) // int64(expr.b.value)
    return None


def layout_transform_infer(call):
    x = tensor_info(call, 0)
    initial, final = _index_map(call)
    if x.ndim >= 0 and x.ndim != len(initial):
        raise call.error(f"the index map takes {len(initial)} indices but the tensor has rank {x.ndim}")
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, len(final))
    extents = [_mapped_extent(e, initial, x.shape_values) for e in final]
    if any(e is None for e in extents):
        return TensorStructInfo(None, x.dtype, len(final))
    return make_tensor_info(tuple(extents), x.dtype)


def layout_transform_legalize(call, context):
    """Permutations only (each output index is a distinct input index)."""
    initial, final = _index_map(call)
    is_permutation = (len(final) == len(initial) and all(isinstance(e, tir.Var) for e in final)
                      and {id(e) for e in final} == {id(v) for v in initial})
    if not is_permutation or tensor_info(call, 0).shape_values is None:
        return None
    order = [[v is e for v in initial].index(True) for e in final]

    def fcompute(a):
        dims = tuple(a.shape[axis] for axis in order)
        return te.compute(dims, lambda *i: a[tuple(i[order.index(axis)] for axis in range(a.ndim))],
                          "T_layout_trans")

    return context.call_te(fcompute, call.args, call.arg_info, "te_layout_transform")


