"""Pools of R.nn: max_pool2d, avg_pool2d (pool_size, strides, dilation, padding,
ceil_mode, count_include_pad; layout any permutation of NCHW) and
adaptive_avg_pool2d (output_size).

A pool legalizes to one reduction over the window. Positions outside the input are
skipped by an if_then_else (never loaded): they read as the reduction's identity.
The average divides by how many window positions fall inside the input, or inside
the padded input with count_include_pad, as TVM's topi does.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .nn_window import (
    axes_of, fold, if_then_else, in_bounds, int_tuple_check, layout_check, padding_check, padding_values,
    pick, place, positive, spatial_values, window_out_size,
)
from .registry import AttrSpec, OpDef, register
from .shape import format_shape, int64, make_tensor_info, static_value, tensor_info

POOL_ATTRS = (
    AttrSpec("pool_size", (1, 1), int_tuple_check((1, 2), minimum=1)),
    AttrSpec("strides", (1, 1), int_tuple_check((1, 2), minimum=1)),
    AttrSpec("dilation", (1, 1), int_tuple_check((1, 2), minimum=1)),
    AttrSpec("padding", (0, 0, 0, 0), padding_check(2)),
    AttrSpec("ceil_mode", False),
    AttrSpec("count_include_pad", False),
    AttrSpec("layout", "NCHW", layout_check("NCHW")),
    AttrSpec("out_layout", None, layout_check("NCHW")),
)


class PoolParams:
    def __init__(self, call):
        attrs = call.attrs
        self.pool_size = spatial_values(attrs["pool_size"], 2)
        self.strides = spatial_values(attrs["strides"], 2)
        self.dilation = spatial_values(attrs["dilation"], 2)
        self.padding = padding_values(attrs["padding"], 2)
        self.ceil_mode = bool(attrs["ceil_mode"])
        self.count_include_pad = bool(attrs["count_include_pad"])
        self.layout = attrs["layout"]
        self.out_layout = attrs["out_layout"] or self.layout
        self.data_axes = axes_of(self.layout, "NCHW")
        self.out_axes = axes_of(self.out_layout, "NCHW")



def _data_info(call) -> TensorStructInfo:
    data = tensor_info(call, 0)
    if data.ndim >= 0 and data.ndim != 4:
        raise call.error(f"data must have rank 4, got rank {data.ndim}")
    return data


def pool_out_dims(call, params: PoolParams, dims):
    """Output dims in canonical order (N, C, H, W)."""
    batch, channels, *spatial = pick(dims, params.data_axes)
    out = []
    for axis, size in enumerate(spatial):
        value = window_out_size(size, params.padding[axis] + params.padding[2 + axis], params.pool_size[axis],
                                params.dilation[axis], params.strides[axis], params.ceil_mode)
        if params.ceil_mode:
            value = _drop_window_in_padding(value, size, params.strides[axis], params.padding[axis])
        if not positive(value):
            raise call.error(f"the output would be empty: input {format_shape(dims)}, "
                             f"pool_size {list(params.pool_size)}")
        out.append(value)
    return (batch, channels, *out)


def _drop_window_in_padding(count, size, stride: int, pad_before: int):
    """With ceil_mode, a last window starting past the input (in the bottom or right
    padding) is dropped, as TVM (and PyTorch) do."""
    last_start = (count - int64(1)) * int64(stride)
    starts_outside = fold(tir.GE(last_start, size + int64(pad_before)))
    known = static_value(fold(tir.Select(starts_outside, int64(1), int64(0))))
    if known is not None:
        return fold(count - int64(known))
    return tir.Call("int64", "tir.if_then_else", (starts_outside, fold(count - int64(1)), count))


def _pool_infer(call) -> TensorStructInfo:
    data = _data_info(call)
    params = PoolParams(call)
    if data.shape_values is None:
        return TensorStructInfo(None, data.dtype, 4)
    return make_tensor_info(place(params.out_axes, pool_out_dims(call, params, data.shape_values)), data.dtype)


def _window(params: PoolParams, out_index, window):
    """Input positions (H, W) read by each window element at an output index."""
    positions = []
    for axis, (position, k) in enumerate(zip(out_index, window)):
        start = position * int64(params.strides[axis]) - int64(params.padding[axis])
        positions.append(start + k.var * int64(params.dilation[axis]))
    return positions


def _window_count(params: PoolParams, out_index, sizes) -> tir.PrimExpr:
    """How many window positions land inside [low, high) on every spatial axis: the
    input, or with count_include_pad the padded input."""
    count: tir.PrimExpr | None = None
    for axis, (position, size) in enumerate(zip(out_index, sizes)):
        stride, dilation, extent = params.strides[axis], params.dilation[axis], params.pool_size[axis]
        start = position * int64(stride) - int64(params.padding[axis])
        low, high = int64(0), size
        if params.count_include_pad:
            low, high = int64(-params.padding[axis]), size + int64(params.padding[2 + axis])
        # The first and last k with low <= start + k * dilation < high.
        first = tir.Max(int64(0), tir.FloorDiv(low - start + int64(dilation - 1), int64(dilation)))
        last = tir.Min(int64(extent - 1), tir.FloorDiv(high - int64(1) - start, int64(dilation)))
        inside = tir.Max(last - first + int64(1), int64(0))
        count = inside if count is None else count * inside
    return count


def pool_compute(call, params: PoolParams, data: te.Tensor, kind: str) -> te.Tensor:
    window = [te.reduce_axis(params.pool_size[axis], name) for axis, name in enumerate(("rv0", "rv1"))]
    sizes = pick(data.shape, params.data_axes[2:])
    out_dims = place(params.out_axes, pool_out_dims(call, params, data.shape))
    identity = lowest(data.dtype) if kind == "max" else _zero(data.dtype)
    reducer = te.reduce_max if kind == "max" else te.reduce_sum

    def reduce(*out_index):
        batch, channel, *position = pick(out_index, params.out_axes)
        spatial = _window(params, position, window)
        index = place(params.data_axes, (batch, channel, *spatial))
        value = if_then_else(in_bounds(spatial, sizes), data[index], identity)
        return reducer(value, window)

    name = f"pool_{kind}"
    pooled = te.compute(out_dims, reduce, name)
    if kind == "max":
        return pooled

    def average(*out_index):
        position = pick(out_index, params.out_axes[2:])
        count = _window_count(params, position, sizes)
        return tir.Div(pooled[out_index], tir.Cast(data.dtype, tir.Max(count, int64(1))))

    return te.compute(out_dims, average, "pool_avg")


def lowest(dtype: str) -> tir.PrimExpr:
    """The smallest finite value: what TVM's max pool reads in the padding."""
    if dt.is_float(dtype):
        finite = {"bfloat16": -3.3895313892515355e38}.get(dtype)
        return tir.FloatImm(dtype, finite if finite is not None else float(np.finfo(dt.to_numpy(dtype)).min))
    return te.min_value(dtype)


def _zero(dtype: str) -> tir.PrimExpr:
    return tir.FloatImm(dtype, 0.0) if dt.is_float(dtype) else tir.IntImm(dtype, 0)


def _pool_legalize(kind: str):
    def legalize(call, context):
        data = _data_info(call)
        if data.shape_values is None:
            return None
        params = PoolParams(call)
        return context.call_te(lambda d: pool_compute(call, params, d, kind), call.args, call.arg_info,
                               f"{kind}_pool2d")

    return legalize


for _kind in ("max", "avg"):
    register(OpDef(
        name=f"relax.nn.{_kind}_pool2d",
        args=("data",),
        attrs=POOL_ATTRS,
        infer=_pool_infer,
        pattern="out_elementwise_fusable",  # what TVM's AnnotateTIROpPattern finds in the kernel
        legalize=_pool_legalize(_kind),
        doc=f"2-D {'maximum' if _kind == 'max' else 'average'} pooling over sliding windows",
    ))


# -- adaptive_avg_pool2d ---------------------------------------------------------------
def _output_size_check(value) -> str | None:
    if value is None:
        return None
    return int_tuple_check((1, 2), minimum=1)(value)


def _adaptive_out_dims(call, dims, layout):
    batch, channels, *spatial = pick(dims, axes_of(layout, "NCHW"))
    output_size = call.attrs["output_size"]
    if output_size is not None:
        spatial = [int64(v) for v in spatial_values(output_size, 2)]
    return (batch, channels, *spatial)


def _adaptive_infer(call) -> TensorStructInfo:
    data = _data_info(call)
    layout = call.attrs["layout"]
    out_layout = call.attrs["out_layout"] or layout
    if data.shape_values is None:
        return TensorStructInfo(None, data.dtype, 4)
    canonical = _adaptive_out_dims(call, data.shape_values, layout)
    return make_tensor_info(place(axes_of(out_layout, "NCHW"), canonical), data.dtype)


def _bin_bounds(index, in_size, out_size):
    """Output bin `index` averages input [floor(i * in / out), ceil((i + 1) * in / out))."""
    start = tir.FloorDiv(index * in_size, out_size)
    end = tir.FloorDiv((index + int64(1)) * in_size + out_size - int64(1), out_size)
    return start, end


def _largest_bin(in_size, out_size):
    """The widest bin: exact for static sizes, the whole axis otherwise."""
    size, bins = static_value(in_size), static_value(out_size)
    if size is None or bins is None:
        return in_size
    return max(-(-(i + 1) * size // bins) - (i * size // bins) for i in range(bins))


def adaptive_pool_compute(call, data: te.Tensor) -> te.Tensor:
    layout = call.attrs["layout"]
    out_layout = call.attrs["out_layout"] or layout
    data_axes, out_axes = axes_of(layout, "NCHW"), axes_of(out_layout, "NCHW")
    canonical = _adaptive_out_dims(call, data.shape, layout)
    sizes = pick(data.shape, data_axes[2:])
    window = [te.reduce_axis(_largest_bin(size, bins), name)
              for size, bins, name in zip(sizes, canonical[2:], ("rv0", "rv1"))]

    def bounds(out_index):
        position = pick(out_index, out_axes[2:])
        return [_bin_bounds(p, size, bins) for p, size, bins in zip(position, sizes, canonical[2:])]

    def reduce(*out_index):
        batch, channel = out_index[out_axes[0]], out_index[out_axes[1]]
        spatial, inside = [], None
        for (start, end), k in zip(bounds(out_index), window):
            spatial.append(start + k.var)
            part = tir.LT(start + k.var, end)
            inside = part if inside is None else tir.And(inside, part)
        index = place(data_axes, (batch, channel, *spatial))
        return te.reduce_sum(if_then_else(inside, data[index], _zero(data.dtype)), window)

    out_dims = place(out_axes, canonical)
    total = te.compute(out_dims, reduce, "adaptive_pool_sum")

    def average(*out_index):
        (top, bottom), (left, right) = bounds(out_index)
        count = (bottom - top) * (right - left)
        return tir.Div(total[out_index], tir.Cast(data.dtype, count))

    return te.compute(out_dims, average, "adaptive_pool_avg")


def _adaptive_legalize(call, context):
    data = _data_info(call)
    if data.shape_values is None:
        return None
    return context.call_te(lambda d: adaptive_pool_compute(call, d), call.args, call.arg_info,
                           "adaptive_avg_pool2d")


register(OpDef(
    name="relax.nn.adaptive_avg_pool2d",
    args=("data",),
    attrs=(
        AttrSpec("output_size", None, _output_size_check),
        AttrSpec("layout", "NCHW", layout_check("NCHW")),
        AttrSpec("out_layout", None, layout_check("NCHW")),
    ),
    infer=_adaptive_infer,
    pattern="opaque",  # as TVM annotates its two-stage kernel
    legalize=_adaptive_legalize,
    doc="2-D average pooling into a fixed output size (bins as in TVM and PyTorch)",
))
