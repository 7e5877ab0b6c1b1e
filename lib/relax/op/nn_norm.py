"""Batch and group normalization of R.nn: batch_norm and group_norm.

batch_norm returns TVM's triple (output, new moving_mean, new moving_var). With
training=True (TVM's default) it normalizes with the batch's own mean and biased
variance over every axis but `axis`, and blends them into the moving statistics:
moving * (1 - momentum) + batch * momentum. With training=False it normalizes with
the moving statistics and returns them unchanged.

group_norm splits the channel axis into num_groups groups and normalizes each group
over its channels and `axes`. Both compute the mean first, then the mean of squared
deviations (two passes, as TVM's topi does), then (x - mean) / sqrt(var + epsilon)
* gamma + beta, leaving out gamma when scale=False and beta when center=False (as
documented; TVM 0.27's group_norm kernel applies both regardless).
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import te
from .reduction import normalize_axes
from .registry import REQUIRED, AttrSpec, OpDef, register
from .shape import format_shape, int64, same_dim, static_value, tensor_info
from .unary import intrinsic


def _float_data(call) -> TensorStructInfo:
    data = tensor_info(call, 0)
    if data.dtype != "void" and not dt.is_float(data.dtype):
        raise call.error(f"data must be a floating-point tensor, got {data.dtype}")
    return data


def _check_channel_params(call, data: TensorStructInfo, channel_axis: int, names) -> None:
    """Each parameter must be a vector as long as the channel axis."""
    channels = data.shape_values[channel_axis] if data.shape_values is not None else None
    for position, name in enumerate(names, start=1):
        param = tensor_info(call, position)
        if param.ndim >= 0 and param.ndim != 1:
            raise call.error(f"{name} must have rank 1, got rank {param.ndim}")
        if channels is not None and param.shape_values is not None \
                and same_dim(param.shape_values[0], channels) is False:
            raise call.error(f"{name} has {format_shape(param.shape_values)} elements but axis {channel_axis} "
                             f"of data {format_shape(data.shape_values)} has {static_value(channels)}")


def _float(value: float, dtype: str) -> tir.PrimExpr:
    return tir.FloatImm(dtype, float(value))


def _count(data: te.Tensor, axes) -> tir.PrimExpr:
    """How many elements the axes hold, as an int64 size."""
    count: tir.PrimExpr = int64(1)
    for axis in axes:
        count = count * data.shape[axis]
    return count


def _normalize(x, mean, variance, epsilon, gamma, beta):
    dtype = x.dtype
    value = tir.Div(tir.Sub(x, mean), intrinsic("sqrt")(tir.Add(variance, _float(epsilon, dtype))))
    if gamma is not None:
        value = tir.Mul(value, gamma)
    if beta is not None:
        value = tir.Add(value, beta)
    return value


# -- batch_norm ------------------------------------------------------------------------
BATCH_NORM_PARAMS = ("gamma", "beta", "moving_mean", "moving_var")


def _batch_norm_axis(call, data: TensorStructInfo) -> int:
    if data.ndim < 0:
        return call.attrs["axis"]
    (axis,) = normalize_axes(call, call.attrs["axis"], data.ndim)
    return axis


def _batch_norm_infer(call) -> TupleStructInfo:
    data = _float_data(call)
    axis = _batch_norm_axis(call, data)
    if data.ndim >= 0:
        _check_channel_params(call, data, axis, BATCH_NORM_PARAMS)
    mean, variance = tensor_info(call, 3), tensor_info(call, 4)
    return TupleStructInfo((data.with_fields(span=None), mean.with_fields(span=None), variance.with_fields(span=None)))


def batch_norm_compute(data, gamma, beta, moving_mean, moving_var, axis, attrs):
    others = tuple(a for a in range(data.ndim) if a != axis)
    epsilon, momentum = attrs["epsilon"], attrs["momentum"]
    gamma = gamma if attrs["scale"] else None
    beta = beta if attrs["center"] else None

    def per_channel(tensor, index):
        return tensor[(index[axis],)] if tensor is not None else None

    if not attrs["training"]:
        out = te.compute(data.shape, lambda *i: _normalize(
            data[i], moving_mean[(i[axis],)], moving_var[(i[axis],)], epsilon,
            per_channel(gamma, i), per_channel(beta, i)), "T_batch_norm")
        same_mean = te.compute(moving_mean.shape, lambda c: moving_mean[(c,)], "T_moving_mean")
        same_var = te.compute(moving_var.shape, lambda c: moving_var[(c,)], "T_moving_var")
        return (out, same_mean, same_var)

    count = tir.Cast(data.dtype, _count(data, others))
    reduce_axes = {a: te.reduce_axis(data.shape[a], f"k{a}") for a in others}

    def over_channel(c, source):
        index = tuple(c if a == axis else reduce_axes[a].var for a in range(data.ndim))
        return te.reduce_sum(source(index), [reduce_axes[a] for a in others])

    total = te.compute((data.shape[axis],), lambda c: over_channel(c, lambda i: data[i]), "T_batch_sum")
    mean = te.compute(total.shape, lambda c: tir.Div(total[(c,)], count), "T_batch_mean")

    def squared_deviation(index):
        deviation = tir.Sub(data[index], mean[(index[axis],)])
        return tir.Mul(deviation, deviation)

    squares = te.compute(total.shape, lambda c: over_channel(c, squared_deviation), "T_batch_sqsum")
    variance = te.compute(total.shape, lambda c: tir.Div(squares[(c,)], count), "T_batch_var")
    out = te.compute(data.shape, lambda *i: _normalize(
        data[i], mean[(i[axis],)], variance[(i[axis],)], epsilon,
        per_channel(gamma, i), per_channel(beta, i)), "T_batch_norm")
    keep, blend = _float(1 - momentum, data.dtype), _float(momentum, data.dtype)
    new_mean = te.compute(total.shape, lambda c: tir.Add(tir.Mul(keep, moving_mean[(c,)]),
                                                         tir.Mul(blend, mean[(c,)])), "T_new_moving_mean")
    new_var = te.compute(total.shape, lambda c: tir.Add(tir.Mul(keep, moving_var[(c,)]),
                                                        tir.Mul(blend, variance[(c,)])), "T_new_moving_var")
    return (out, new_mean, new_var)


def _batch_norm_legalize(call, context):
    data = tensor_info(call, 0)
    if data.shape_values is None:
        return None
    axis = _batch_norm_axis(call, data)
    return context.call_te(lambda *tensors: batch_norm_compute(*tensors, axis, call.attrs),
                           call.args, call.arg_info, "batch_norm")


register(OpDef(
    name="relax.nn.batch_norm",
    args=("data",) + BATCH_NORM_PARAMS,
    attrs=(
        AttrSpec("axis", REQUIRED, lambda v: None if isinstance(v, int) else "expected an int"),
        AttrSpec("epsilon", 1e-5),
        AttrSpec("center", True),
        AttrSpec("scale", True),
        AttrSpec("momentum", 0.1),
        AttrSpec("training", True),
    ),
    infer=_batch_norm_infer,
    # What TVM annotates for the default (training) kernel; the inference kernel is injective.
    pattern="out_elementwise_fusable",
    legalize=_batch_norm_legalize,
    doc="batch normalization; returns (output, new moving_mean, new moving_var)",
))


# -- group_norm ------------------------------------------------------------------------
def _group_norm_layout(call, data: TensorStructInfo):
    """(channel axis, normalized axes), both non-negative, checked against the rank."""
    (channel_axis,) = normalize_axes(call, call.attrs["channel_axis"], data.ndim)
    axes_attr = call.attrs["axes"]
    axes = normalize_axes(call, (axes_attr,) if isinstance(axes_attr, int) else axes_attr, data.ndim)
    if channel_axis in axes:
        raise call.error(f"axes {list(axes)} must not include the channel axis {channel_axis}")
    return channel_axis, axes


def _group_norm_infer(call) -> TensorStructInfo:
    data = _float_data(call)
    if data.ndim < 0:
        return data.with_fields(span=None)
    channel_axis, _ = _group_norm_layout(call, data)
    _check_channel_params(call, data, channel_axis, ("gamma", "beta"))
    groups = call.attrs["num_groups"]
    if data.shape_values is not None:
        channels = static_value(data.shape_values[channel_axis])
        if channels is not None and channels % groups:
            raise call.error(f"{channels} channels do not split into {groups} groups")
    return data.with_fields(span=None)


def group_norm_compute(data, gamma, beta, channel_axis, axes, attrs):
    groups = attrs["num_groups"]
    group_size = data.shape[channel_axis] // int64(groups)
    # Statistics have one entry per group and per axis that is not normalized.
    stats_dims = tuple(int64(groups) if a == channel_axis else int64(1) if a in axes else d
                       for a, d in enumerate(data.shape))
    inner = te.reduce_axis(group_size, "k_channel")
    reduce_axes = {a: te.reduce_axis(data.shape[a], f"k{a}") for a in axes}
    count = tir.Cast(data.dtype, group_size * _count(data, axes))

    def source_index(stat_index):
        return tuple(stat_index[a] * group_size + inner.var if a == channel_axis
                     else reduce_axes[a].var if a in axes else stat_index[a] for a in range(data.ndim))

    def reduce(source):
        return lambda *s: te.reduce_sum(source(source_index(s)), [inner, *[reduce_axes[a] for a in axes]])

    def stat_of(index):
        return tuple(index[a] // group_size if a == channel_axis else int64(0) if a in axes else index[a]
                     for a in range(data.ndim))

    return normalize_over(data, stats_dims, reduce, stat_of, count, attrs, gamma, beta, channel_axis, "group")


def normalize_over(data, stats_dims, reduce, stat_of, count, attrs, gamma, beta, channel_axis: int, name: str):
    """The mean and variance of `data` over what `reduce` sums (two passes, as TVM computes
    them), then data normalized, scaled by gamma and shifted by beta per channel: the last
    steps of group_norm and instance_norm, which differ in the positions they reduce over."""
    total = te.compute(stats_dims, reduce(lambda i: data[i]), f"T_{name}_sum")
    mean = te.compute(stats_dims, lambda *s: tir.Div(total[s], count), f"T_{name}_mean")

    def squared_deviation(index):
        deviation = tir.Sub(data[index], mean[stat_of(index)])
        return tir.Mul(deviation, deviation)

    squares = te.compute(stats_dims, reduce(squared_deviation), f"T_{name}_sqsum")
    variance = te.compute(stats_dims, lambda *s: tir.Div(squares[s], count), f"T_{name}_var")
    return te.compute(data.shape, lambda *i: _normalize(
        data[i], mean[stat_of(i)], variance[stat_of(i)], attrs["epsilon"],
        gamma[(i[channel_axis],)] if attrs["scale"] else None,
        beta[(i[channel_axis],)] if attrs["center"] else None), f"T_{name}_norm")


def _group_norm_legalize(call, context):
    data = tensor_info(call, 0)
    if data.shape_values is None:
        return None
    channel_axis, axes = _group_norm_layout(call, data)
    return context.call_te(lambda d, g, b: group_norm_compute(d, g, b, channel_axis, axes, call.attrs),
                           call.args, call.arg_info, "group_norm")


def _positive_int_check(value) -> str | None:
    return None if isinstance(value, int) and value >= 1 else "expected a positive int"


def _axes_check(value) -> str | None:
    if isinstance(value, int) or isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return None
    return "expected an int or a list of ints"


register(OpDef(
    name="relax.nn.group_norm",
    args=("data", "gamma", "beta"),
    attrs=(
        AttrSpec("num_groups", REQUIRED, _positive_int_check),
        AttrSpec("channel_axis", REQUIRED, lambda v: None if isinstance(v, int) else "expected an int"),
        AttrSpec("axes", REQUIRED, _axes_check),
        AttrSpec("epsilon", 1e-5),
        AttrSpec("center", True),
        AttrSpec("scale", True),
    ),
    infer=_group_norm_infer,
    pattern="out_elementwise_fusable",  # as TVM annotates its kernel
    legalize=_group_norm_legalize,
    doc="group normalization: channels split into num_groups groups, each normalized over its channels and axes",
))
