"""Slicing and repeating operators: strided_slice, take, tile, repeat, flip.

Struct-info inference and legalization only; manipulation.py registers them. Each output
element reads the input at an index computed from its own (a stride, a gathered position,
a modulo or a division by the repeat count, a reversal).
"""

from __future__ import annotations

from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .index_check import checked_position
from .infer import literal_of
from .reduction import normalize_axes
from .shape import axis_list, int64, make_tensor_info, mul_dims, product_dims, static_value, tensor_info, unflatten


def _slice_spec(call, ndim):
    """Per axis (begin, extent, stride) of a static strided slice, numpy-style clamping."""
    axes, begin, end = (literal_of(call.args[i]) for i in (1, 2, 3))
    strides = literal_of(call.args[4]) if len(call.args) > 4 else (1,) * len(axes)
    if not (len(axes) == len(begin) == len(end) == len(strides)):
        raise call.error("axes, begin, end and strides must have the same length")
    values = (*axes, *begin, *end, *strides)
    inexact = next((v for v in values if isinstance(v, float)), None)
    if inexact is not None:
        raise call.error(f"axes, begin, end and strides must be integers, not {inexact!r}")
    if not all(isinstance(v, int) for v in values):
        return None
    # An axis is checked before it is wrapped: modulo would map axis 5 of a rank-3 tensor
    # onto axis 2, and divide by zero on a rank-0 one.
    spec = {}
    for a, b, e, s in zip(axes, begin, end, strides):
        if not -ndim <= a < ndim:
            raise call.error(f"axis {a} is out of range for a tensor of rank {ndim}")
        if a % ndim in spec:
            raise call.error(f"axis {a} is sliced more than once")
        spec[a % ndim] = (b, e, s)
    return spec


def _sliced_dims(call, dims):
    spec = _slice_spec(call, len(dims))
    if spec is None:
        return None, None
    out, starts = [], []
    for axis, dim in enumerate(dims):
        if axis not in spec:
            out.append(dim)
            starts.append((0, 1))
            continue
        begin, end, stride = spec[axis]
        size = static_value(dim)
        if size is None:
            return None, None
        if stride == 0:
            raise call.error("a stride cannot be 0")
        start, stop, step = slice(begin, end, stride).indices(size)
        out.append(int64(len(range(start, stop, step))))
        starts.append((start, step))
    return tuple(out), starts


def strided_slice_infer(call):
    x = tensor_info(call, 0)
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, x.ndim)
    dims, _ = _sliced_dims(call, x.shape_values)
    return make_tensor_info(dims, x.dtype) if dims is not None else TensorStructInfo(None, x.dtype, x.ndim)


def strided_slice_legalize(call, context):
    x = tensor_info(call, 0)
    if x.shape_values is None or _sliced_dims(call, x.shape_values)[0] is None:
        return None

    def fcompute(a):
        dims, starts = _sliced_dims(call, a.shape)
        return te.compute(dims, lambda *i: a[tuple(int64(s) + v * int64(t) for v, (s, t) in zip(i, starts))],
                          "T_strided_slice")

    return context.call_te(fcompute, call.args[:1], call.arg_info[:1], "strided_slice")


def take_infer(call):
    x, indices = tensor_info(call, 0), tensor_info(call, 1)
    if x.shape_values is None or indices.shape_values is None:
        return TensorStructInfo(None, x.dtype, -1)
    axis = call.attrs["axis"]
    if axis is None:
        return make_tensor_info(indices.shape_values, x.dtype)
    (axis,) = normalize_axes(call, axis, x.ndim)
    return make_tensor_info(x.shape_values[:axis] + indices.shape_values + x.shape_values[axis + 1:], x.dtype)


def take_legalize(call, context):
    info = take_infer(call)
    if info.shape_values is None:
        return None
    axis = call.attrs["axis"]

    def fcompute(a, idx):
        def body(*i):
            if axis is None:
                flat = tir.Cast("int64", idx[i])
                return a[unflatten(_wrap(flat, product_dims(a.shape), call.attrs["mode"]), a.shape)]
            (ax,) = normalize_axes(call, axis, a.ndim)
            position = tir.Cast("int64", idx[i[ax:ax + idx.ndim]])
            position = _wrap(position, a.shape[ax], call.attrs["mode"])
            return a[i[:ax] + (position,) + i[ax + idx.ndim:]]

        dims = (idx.shape if axis is None else
                a.shape[:normalize_axes(call, axis, a.ndim)[0]] + idx.shape + a.shape[normalize_axes(call, axis, a.ndim)[0] + 1:])
        return te.compute(dims, body, "T_take")

    return context.call_te(fcompute, call.args, call.arg_info, "take")


def _wrap(position, extent, mode):
    """An index into [0, extent): "wrap" takes it modulo, "clip" clamps it, and "fast"
    counts a negative one from the end and stops the kernel on one out of range (TVM
    trusts the input there; an unchecked read would crash or leak memory)."""
    if mode == "wrap":
        return position % extent
    if mode == "clip":
        return tir.Max(tir.Min(position, extent - 1), int64(0))
    return checked_position(position, extent, "R.take")


def tile_dims(call, dims):
    reps = axis_list(call.attrs["repeats"])
    rank = max(len(dims), len(reps))
    dims = (int64(1),) * (rank - len(dims)) + tuple(dims)
    reps = (1,) * (rank - len(reps)) + reps
    return tuple(mul_dims(d, int64(r)) for d, r in zip(dims, reps))


def tile_legalize(call, context):
    if tensor_info(call, 0).shape_values is None:
        return None

    def fcompute(a):
        dims = tile_dims(call, a.shape)
        lead = len(dims) - a.ndim
        return te.compute(dims, lambda *i: a[tuple(v % a.shape[k] for k, v in enumerate(i[lead:]))],
                          "T_tile")

    return context.call_te(fcompute, call.args, call.arg_info, "tile")


def repeat_dims(call, dims):
    repeats, axis = call.attrs["repeats"], call.attrs["axis"]
    if axis is None:
        return (mul_dims(product_dims(dims), int64(repeats)),)
    (axis,) = normalize_axes(call, axis, len(dims))
    return tuple(mul_dims(d, int64(repeats)) if k == axis else d for k, d in enumerate(dims))


def repeat_legalize(call, context):
    if tensor_info(call, 0).shape_values is None:
        return None
    repeats, axis = call.attrs["repeats"], call.attrs["axis"]

    def fcompute(a):
        dims = repeat_dims(call, a.shape)
        if axis is None:
            return te.compute(dims, lambda i: a[unflatten(i // int64(repeats), a.shape)], "T_repeat")
        (ax,) = normalize_axes(call, axis, a.ndim)
        return te.compute(dims, lambda *i: a[tuple(v // int64(repeats) if k == ax else v
                                                   for k, v in enumerate(i))], "T_repeat")

    return context.call_te(fcompute, call.args, call.arg_info, "repeat")


def flip_legalize(call, context):
    if tensor_info(call, 0).shape_values is None:
        return None

    def fcompute(a):
        (ax,) = normalize_axes(call, call.attrs["axis"], a.ndim)
        return te.compute(a.shape, lambda *i: a[tuple(a.shape[k] - 1 - v if k == ax else v for k, v in enumerate(i))],
                          "T_reverse_sequence")

    return context.call_te(fcompute, call.args, call.arg_info, "flip")


def flip_infer(call):
    x = tensor_info(call, 0)
    if x.ndim >= 0:
        normalize_axes(call, call.attrs["axis"], x.ndim)
    return x.with_fields(span=None)


