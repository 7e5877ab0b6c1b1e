"""Instance normalization of R.nn: instance_norm.

Each slice of data along `axes` (for every index of the other axes, the channel
axis among them) is normalized by its own mean and biased variance, then scaled by
gamma and shifted by beta along channel_axis: group_norm with one channel per
group. As in nn_norm.py, scale=False leaves out gamma and center=False leaves out
beta, as documented (TVM 0.27's kernel applies both regardless).
"""

from __future__ import annotations

from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .nn_norm import _axes_check, _check_channel_params, _float_data, normalize_over
from .reduction import normalize_axes
from .registry import REQUIRED, AttrSpec, OpDef, register
from .shape import int64


def _layout(call, ndim: int) -> tuple[int, tuple[int, ...]]:
    """(channel axis, normalized axes), both non-negative and checked against the rank."""
    (channel_axis,) = normalize_axes(call, call.attrs["channel_axis"], ndim)
    axes_attr = call.attrs["axes"]
    axes = normalize_axes(call, (axes_attr,) if isinstance(axes_attr, int) else axes_attr, ndim)
    if channel_axis in axes:
        raise call.error(f"axes {list(axes)} must not include the channel axis {channel_axis}")
    return channel_axis, axes


def _instance_norm_infer(call) -> TensorStructInfo:
    data = _float_data(call)
    if data.ndim >= 0:
        channel_axis, _ = _layout(call, data.ndim)
        _check_channel_params(call, data, channel_axis, ("gamma", "beta"))
    return data.with_fields(span=None)


def instance_norm_compute(data, gamma, beta, channel_axis, axes, attrs):
    # Statistics keep every axis, with size 1 on the normalized ones.
    stats_dims = tuple(int64(1) if a in axes else d for a, d in enumerate(data.shape))
    reduce_axes = {a: te.reduce_axis(data.shape[a], f"k{a}") for a in axes}
    count: tir.PrimExpr = int64(1)
    for a in axes:
        count = count * data.shape[a]
    count = tir.Cast(data.dtype, count)

    def reduce(source):
        return lambda *s: te.reduce_sum(
            source(tuple(reduce_axes[a].var if a in axes else s[a] for a in range(data.ndim))),
            [reduce_axes[a] for a in axes])

    def stat_of(index):
        return tuple(int64(0) if a in axes else index[a] for a in range(data.ndim))

    return normalize_over(data, stats_dims, reduce, stat_of, count, attrs, gamma, beta, channel_axis, "instance")


def _instance_norm_legalize(call, context):
    data = _float_data(call)
    if data.shape_values is None:
        return None
    channel_axis, axes = _layout(call, data.ndim)
    return context.call_te(lambda d, g, b: instance_norm_compute(d, g, b, channel_axis, axes, call.attrs),
                           call.args, call.arg_info, "instance_norm")


register(OpDef(
    name="relax.nn.instance_norm",
    args=("data", "gamma", "beta"),
    attrs=(
        AttrSpec("channel_axis", REQUIRED, lambda v: None if isinstance(v, int) else "expected an int"),
        AttrSpec("axes", REQUIRED, _axes_check),
        AttrSpec("epsilon", 1e-5),
        AttrSpec("center", True),
        AttrSpec("scale", True),
    ),
    infer=_instance_norm_infer,
    pattern="out_elementwise_fusable",  # as for group_norm, whose kernel has the same stages
    legalize=_instance_norm_legalize,
    doc="instance normalization: each slice along axes normalized by its own mean and variance",
))
