"""Reshaping, searching and summarizing operators: R.nn.batch_flatten,
R.nn.pixel_shuffle, collapse_sum_like, bucketize, median, multinomial_from_uniform.

bucketize counts, for each value, the boundaries below it (or not above it with
right=True), which is numpy.searchsorted(boundaries, x, side). median gives the
lower median (element (n - 1) // 2 in stable sorted order) and, over an axis, its
index too; it is legalized without a sort, by ranking each element against the
others. multinomial_from_uniform picks, for each sample u, the first column whose
running probability sum exceeds u (the last column if none does).
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import te
from .index_check import checked_position
from .registry import AttrSpec, OpDef, register
from .shape import (
    format_shape, int64, make_tensor_info, mul_dims, product_dims, same_dim, static_value, tensor_info, unflatten,
)


def _count(condition, axis) -> te.Reduce:
    return te.reduce_sum(tir.Cast("int64", condition), axis)


# -- batch_flatten and pixel_shuffle -----------------------------------------------------------
def _batch_flatten_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    if 0 <= info.ndim < 2:
        raise call.error(f"operand must have rank 2 or more, got rank {info.ndim}")
    if info.shape_values is None:
        return TensorStructInfo(None, info.dtype, 2)
    dims = info.shape_values
    return make_tensor_info((dims[0], product_dims(dims[1:])), info.dtype)


def _batch_flatten_legalize(call, context):
    def fcompute(x):
        inner = x.shape[1:]
        return te.compute((x.shape[0], product_dims(inner)), lambda b, j: x[(b, *unflatten(j, inner))], "T_reshape")

    return context.call_te(fcompute, call.args, call.arg_info, "batch_flatten")


def _pixel_shuffle_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    factor = call.attrs["upscale_factor"]
    if info.ndim not in (-1, 4):
        raise call.error(f"operand must be a 4-D tensor (N, C * r * r, H, W), got rank {info.ndim}")
    if info.shape_values is None:
        return TensorStructInfo(None, info.dtype, 4)
    n, channels, height, width = info.shape_values
    if static_value(channels) is not None and static_value(channels) % (factor * factor):
        raise call.error(f"{static_value(channels)} channels do not divide by upscale_factor squared"
                         f" ({factor * factor})")
    return make_tensor_info((n, channels // int64(factor * factor) if static_value(channels) is None
                             else int64(static_value(channels) // (factor * factor)),
                             mul_dims(height, int64(factor)), mul_dims(width, int64(factor))), info.dtype)


def _pixel_shuffle_legalize(call, context):
    out = _pixel_shuffle_infer(call)
    r = int64(call.attrs["upscale_factor"])

    def fcompute(x):
        def body(b, c, h, w):
            channel = (c * r + h % r) * r + w % r
            return x[b, channel, h // r, w // r]

        return te.compute(out.shape_values, body, "PixelShuffle")

    return context.call_te(fcompute, call.args, call.arg_info, "pixel_shuffle")


def _positive_int(value) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return None if ok else "expected a positive integer"


register(OpDef("relax.nn.batch_flatten", ("data",), (), _batch_flatten_infer, "injective", _batch_flatten_legalize,
               "flatten every axis but the first: (N, ...) -> (N, product)"))
register(OpDef("relax.nn.pixel_shuffle", ("data",), (AttrSpec("upscale_factor", check=_positive_int),),
               _pixel_shuffle_infer, "injective", _pixel_shuffle_legalize,
               "rearrange (N, C * r * r, H, W) into (N, C, H * r, W * r)"))


# -- collapse_sum_like -------------------------------------------------------------------------------
def _collapse_infer(call) -> TensorStructInfo:
    data, target = tensor_info(call, 0), tensor_info(call, 1)
    if data.shape_values is not None and target.shape_values is not None:
        dims, goal = data.shape_values, target.shape_values
        fits = len(goal) <= len(dims) and all(
            static_value(g) == 1 or same_dim(d, g) is not False for d, g in zip(dims[len(dims) - len(goal):], goal))
        if not fits:
            raise call.error(f"cannot collapse {format_shape(dims)} to {format_shape(goal)}")
    return TensorStructInfo(target.shape, data.dtype, target.ndim)


def _collapse_legalize(call, context):
    def fcompute(x, target):
        lead = x.ndim - target.ndim
        summed = [a for a in range(x.ndim) if a < lead or static_value(target.shape[a - lead]) == 1
                  and static_value(x.shape[a]) != 1]
        axes = {a: te.reduce_axis(x.shape[a], f"k{n}") for n, a in enumerate(summed)}

        def body(*i):
            index = [axes[a].var if a in axes else (int64(0) if a >= lead and static_value(x.shape[a]) == 1
                                                   else i[a - lead]) for a in range(x.ndim)]
            return te.reduce_sum(x[tuple(index)], list(axes.values())) if axes else x[tuple(index)]

        return te.compute(target.shape, body, "x_red")

    # The target is passed only for its shape.
    return context.call_te(fcompute, call.args, call.arg_info, "collapse_sum")


register(OpDef("relax.collapse_sum_like", ("data", "collapse_target"), (), _collapse_infer, "comm_reduce",
               _collapse_legalize, "sum data down to the (broadcast-compatible) shape of collapse_target"))


# -- bucketize -----------------------------------------------------------------------------------------
def _bucketize_infer(call) -> TensorStructInfo:
    data, boundaries = tensor_info(call, 0), tensor_info(call, 1)
    if boundaries.ndim not in (-1, 1):
        raise call.error(f"boundaries must be a 1-D tensor, got rank {boundaries.ndim}")
    return TensorStructInfo(data.shape, "int32" if call.attrs["out_int32"] else "int64", data.ndim)


def _bucketize_legalize(call, context):
    out_dtype = _bucketize_infer(call).dtype
    right = call.attrs["right"]

    def fcompute(x, boundaries):
        def body(*i):
            k = te.reduce_axis(boundaries.shape[0], "k")
            below = tir.LE(boundaries[k.var], x[i]) if right else tir.LT(boundaries[k.var], x[i])
            return _count(below, k)

        count = te.compute(x.shape, body, "T_count")
        return te.compute(x.shape, lambda *i: tir.Cast(out_dtype, count[i]), "T_bucketize", out_dtype)

    return context.call_te(fcompute, call.args, call.arg_info, "bucketize")


register(OpDef("relax.bucketize", ("input_tensor", "boundaries"),
               (AttrSpec("out_int32", False), AttrSpec("right", False)), _bucketize_infer, "opaque",
               _bucketize_legalize, "the bucket index of each value among sorted boundaries"))


# -- median ----------------------------------------------------------------------------------------------
def _median_axis(call, ndim: int) -> int | None:
    axis = call.attrs["axis"]
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) != 1:
        raise call.error(f"median reduces over one axis or all of them, got axes {list(axes)}")
    if ndim >= 0 and not -ndim <= axes[0] < ndim:
        raise call.error(f"axis {axes[0]} is out of range for a tensor of rank {ndim}")
    return axes[0] % ndim if ndim > 0 else axes[0]


def _median_infer(call):
    info = tensor_info(call, 0)
    axis = _median_axis(call, info.ndim)
    keep = call.attrs["keepdims"]
    if info.shape_values is None:
        ndim = -1 if info.ndim < 0 else (info.ndim if keep else (0 if axis is None else info.ndim - 1))
        values = TensorStructInfo(None, info.dtype, ndim)
        return values if axis is None else TupleStructInfo((values, TensorStructInfo(None, "int64", ndim)))
    dims = info.shape_values
    reduced = [a for a in range(len(dims)) if axis is None or a == axis]
    out = [int64(1) if a in reduced else d for a, d in enumerate(dims) if keep or a not in reduced]
    if axis is None:
        return make_tensor_info(out, info.dtype)
    return TupleStructInfo((make_tensor_info(out, info.dtype), make_tensor_info(out, "int64")))


def _median_legalize(call, context):
    axis = _median_axis(call, call.arg_info[0].ndim)
    keep = call.attrs["keepdims"]
    out_info = _median_infer(call)
    out_dims = (out_info if axis is None else out_info.fields[0]).shape_values

    def fcompute(x):
        # Over all elements, the median of a flat copy; `along` is the axis searched.
        data = x if axis is not None else te.compute((product_dims(x.shape),), lambda f: x[unflatten(f, x.shape)],
                                                     "T_reshape")
        along = 0 if axis is None else axis
        length = data.shape[along]
        target = tir.FloorDiv(length - int64(1), int64(2))

        def source(out_index, position):
            """The data index along the searched axis at `position` for an output element."""
            if axis is None:
                return (position,)
            inner = tuple(v for a, v in enumerate(out_index) if a != along) if keep else tuple(out_index)
            return inner[:along] + (position,) + inner[along:]

        def rank(*i):
            # The element's position in a stable ascending sort along the axis.
            k = te.reduce_axis(length, "k")
            mine = data[i]
            other = data[tuple(k.var if a == along else v for a, v in enumerate(i))]
            return _count(tir.Or(tir.LT(other, mine), tir.And(tir.EQ(other, mine), tir.LT(k.var, i[along]))), k)

        ranks = te.compute(data.shape, rank, "T_rank")

        def pick(value_of, zero):
            # Exactly one position has the target rank: the sum keeps that one element.
            def body(*o):
                j = te.reduce_axis(length, "j")
                index = source(o, j.var)
                return te.reduce_sum(tir.Select(tir.EQ(ranks[index], target), value_of(index, j.var), zero), j)

            return body

        zero = tir.FloatImm(data.dtype, 0.0) if dt.is_float(data.dtype) else tir.IntImm(data.dtype, 0)
        values = te.compute(out_dims, pick(lambda index, _: data[index], zero), "T_median")
        if axis is None:
            return values
        indices = te.compute(out_dims, pick(lambda _, j: j, int64(0)), "T_median_index")
        return values, indices

    return context.call_te(fcompute, call.args, call.arg_info, "median")


register(OpDef("relax.median", ("x",), (AttrSpec("axis", None), AttrSpec("keepdims", False)), _median_infer,
               "opaque", _median_legalize, "the lower median over one axis (values and indices) or all elements"))


# -- multinomial_from_uniform ---------------------------------------------------------------------------
def _multinomial_infer(call) -> TensorStructInfo:
    prob, uniform, indices = (tensor_info(call, i) for i in range(3))
    for position, info, name in ((0, prob, "prob"), (1, uniform, "uniform_sample"), (2, indices, "sample_indices")):
        if info.ndim not in (-1, 2):
            raise call.error(f"{name} must be a 2-D tensor, got rank {info.ndim}")
    if prob.dtype != "void" and not dt.is_float(prob.dtype):
        raise call.error(f"prob must be a floating-point tensor, got {prob.dtype}")
    if indices.dtype != "void" and not dt.is_int(indices.dtype):
        raise call.error(f"sample_indices must be an integer tensor, got {indices.dtype}")
    dtype = call.attrs["dtype"]
    if uniform.shape_values is None:
        return TensorStructInfo(None, dtype, 2)
    return make_tensor_info((uniform.shape_values[0], int64(1)), dtype)


def _multinomial_legalize(call, context):
    dtype = call.attrs["dtype"]

    def fcompute(prob, uniform, indices):
        vocab = prob.shape[1]

        def running_sum(b, v):
            k = te.reduce_axis(vocab, "k")
            return te.reduce_sum(tir.Select(tir.LE(k.var, v), prob[b, k.var], tir.FloatImm(prob.dtype, 0.0)), k)

        cumsum = te.compute(prob.shape, running_sum, "T_cumsum")

        def below(s, _):
            # The columns whose running sum does not exceed the sample come before the pick.
            k = te.reduce_axis(vocab, "k")
            row = checked_position(indices[s, int64(0)], prob.shape[0], "R.multinomial_from_uniform")
            return _count(tir.LE(cumsum[row, k.var], tir.Cast(prob.dtype, uniform[s, int64(0)])), k)

        count = te.compute((uniform.shape[0], int64(1)), below, "T_count")
        last = vocab - int64(1)
        return te.compute(count.shape, lambda s, c: tir.Cast(dtype, tir.Min(count[s, c], last)),
                          "T_sample_index", dtype)

    return context.call_te(fcompute, call.args, call.arg_info, "multinomial_from_uniform")


register(OpDef("relax.multinomial_from_uniform", ("prob", "uniform_sample", "sample_indices"),
               (AttrSpec("dtype", "int64"),), _multinomial_infer, "opaque", _multinomial_legalize,
               "sample a column index of prob[sample_indices[i]] from a uniform sample"))
