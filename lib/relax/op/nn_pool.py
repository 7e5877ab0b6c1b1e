"""Pools of R.nn: max_pool2d, avg_pool2d (pool_size, strides, dilation, padding,
ceil_mode, count_include_pad; layout any permutation of NCHW) and
adaptive_avg_pool2d (output_size). The computations take the number of spatial
axes as a parameter: nn_pool_nd.py registers the 1-D and 3-D pools from them.

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
    SPATIAL_LETTERS, axes_of, fold, if_then_else, in_bounds, int_tuple_check, layout_check, padding_check, padding_values,
    pick, place, positive, spatial_values, window_out_size,
)
from .registry import AttrSpec, OpDef, register
from .shape import format_shape, int64, make_tensor_info, static_value, tensor_info

def layout_letters(rank: int) -> str:
    """The default layout of a pool with `rank` spatial axes: NCW, NCHW, NCDHW."""
    return "NC" + SPATIAL_LETTERS[rank]


def pool_attrs(rank: int, count_include_pad: bool):
    """A pool's attributes (TVM's Python API defaults count_include_pad to False in
    2-D but to True in 1-D and 3-D)."""
    spatial = int_tuple_check((1, rank), minimum=1)
    layout = layout_letters(rank)
    return (
        AttrSpec("pool_size", (1,) * rank, spatial),
        AttrSpec("strides", (1,) * rank, spatial),
        AttrSpec("dilation", (1,) * rank, spatial),
        AttrSpec("padding", (0,) * (2 * rank), padding_check(rank)),
        AttrSpec("ceil_mode", False),
        AttrSpec("count_include_pad", count_include_pad),
        AttrSpec("layout", layout, layout_check(layout)),
        AttrSpec("out_layout", None, layout_check(layout)),
    )


class PoolParams:
    def __init__(self, call, rank: int):
        attrs = call.attrs
        self.rank = rank
        self.pool_size = spatial_values(attrs["pool_size"], rank)
        self.strides = spatial_values(attrs["strides"], rank)
        self.dilation = spatial_values(attrs["dilation"], rank)
        self.padding = padding_values(attrs["padding"], rank)
        self.ceil_mode = bool(attrs["ceil_mode"])
        self.count_include_pad = bool(attrs["count_include_pad"])
        self.layout = attrs["layout"]
        self.out_layout = attrs["out_layout"] or self.layout
        self.data_axes = axes_of(self.layout, layout_letters(rank))
        self.out_axes = axes_of(self.out_layout, layout_letters(rank))

    def pad_after(self, axis: int) -> int:
        return self.padding[self.rank + axis]


def data_info(call, rank: int) -> TensorStructInfo:
    data = tensor_info(call, 0)
    if data.ndim >= 0 and data.ndim != rank + 2:
        raise call.error(f"data must have rank {rank + 2}, got rank {data.ndim}")
    return data


def pool_out_dims(call, params: PoolParams, dims):
    """Output dims in canonical order (N, C, spatial...)."""
    batch, channels, *spatial = pick(dims, params.data_axes)
    out = []
    for axis, size in enumerate(spatial):
        value = window_out_size(size, params.padding[axis] + params.pad_after(axis), params.pool_size[axis],
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


def pool_infer(rank: int):
    def infer(call) -> TensorStructInfo:
        data = data_info(call, rank)
        params = PoolParams(call, rank)
        if data.shape_values is None:
            return TensorStructInfo(None, data.dtype, rank + 2)
        return make_tensor_info(place(params.out_axes, pool_out_dims(call, params, data.shape_values)), data.dtype)

    return infer


def _window(params: PoolParams, out_index, window):
    """Input positions (one per spatial axis) read by each window element at an output index."""
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
            low, high = int64(-params.padding[axis]), size + int64(params.pad_after(axis))
        # The first and last k with low <= start + k * dilation < high.
        first = tir.Max(int64(0), (low - start + int64(dilation - 1)) // int64(dilation))
        last = tir.Min(int64(extent - 1), (high - int64(1) - start) // int64(dilation))
        inside = tir.Max(last - first + int64(1), int64(0))
        count = inside if count is None else count * inside
    return count


def pool_compute(call, params: PoolParams, data: te.Tensor, kind: str) -> te.Tensor:
    window = [te.reduce_axis(size, f"rv{axis}") for axis, size in enumerate(params.pool_size)]
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


def pool_legalize(kind: str, rank: int):
    def legalize(call, context):
        data = data_info(call, rank)
        if data.shape_values is None:
            return None
        params = PoolParams(call, rank)
        return context.call_te(lambda d: pool_compute(call, params, d, kind), call.args, call.arg_info,
                               f"{kind}_pool{rank}d")

    return legalize


def register_pools(rank: int, count_include_pad: bool) -> None:
    """Registers max_pool<rank>d and avg_pool<rank>d."""
    for kind in ("max", "avg"):
        register(OpDef(
            name=f"relax.nn.{kind}_pool{rank}d",
            args=("data",),
            attrs=pool_attrs(rank, count_include_pad),
            infer=pool_infer(rank),
            pattern="out_elementwise_fusable",  # what TVM's AnnotateTIROpPattern finds in the kernel
            legalize=pool_legalize(kind, rank),
            doc=f"{rank}-D {'maximum' if kind == 'max' else 'average'} pooling over sliding windows",
        ))


register_pools(2, count_include_pad=False)


# -- adaptive_avg_pool2d ---------------------------------------------------------------
def _output_size_check(rank: int):
    def check(value) -> str | None:
        if value is None:
            return None
        return int_tuple_check((1, rank), minimum=1)(value)

    return check


def _adaptive_out_dims(call, dims, layout, rank: int):
    batch, channels, *spatial = pick(dims, axes_of(layout, layout_letters(rank)))
    output_size = call.attrs["output_size"]
    if output_size is not None:
        spatial = [int64(v) for v in spatial_values(output_size, rank)]
    return (batch, channels, *spatial)


def adaptive_infer(rank: int):
    def infer(call) -> TensorStructInfo:
        data = data_info(call, rank)
        layout = call.attrs["layout"]
        out_layout = call.attrs["out_layout"] or layout
        if data.shape_values is None:
            return TensorStructInfo(None, data.dtype, rank + 2)
        canonical = _adaptive_out_dims(call, data.shape_values, layout, rank)
        return make_tensor_info(place(axes_of(out_layout, layout_letters(rank)), canonical), data.dtype)

    return infer


def _bin_bounds(index, in_size, out_size):
    """Output bin `index` averages input [floor(i * in / out), ceil((i + 1) * in / out))."""
    start = index * in_size // out_size
    end = ((index + int64(1)) * in_size + out_size - int64(1)) // out_size
    return start, end


def _largest_bin(in_size, out_size):
    """The widest bin: exact for static sizes, the whole axis otherwise."""
    size, bins = static_value(in_size), static_value(out_size)
    if size is None or bins is None:
        return in_size
    return max(-(-(i + 1) * size // bins) - (i * size // bins) for i in range(bins))


def adaptive_pool_compute(call, data: te.Tensor, rank: int) -> te.Tensor:
    layout = call.attrs["layout"]
    out_layout = call.attrs["out_layout"] or layout
    data_axes, out_axes = axes_of(layout, layout_letters(rank)), axes_of(out_layout, layout_letters(rank))
    canonical = _adaptive_out_dims(call, data.shape, layout, rank)
    sizes = pick(data.shape, data_axes[2:])
    window = [te.reduce_axis(_largest_bin(size, bins), f"rv{axis}")
              for axis, (size, bins) in enumerate(zip(sizes, canonical[2:]))]

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
        count = None
        for start, end in bounds(out_index):
            count = end - start if count is None else count * (end - start)
        return tir.Div(total[out_index], tir.Cast(data.dtype, count))

    return te.compute(out_dims, average, "adaptive_pool_avg")


def adaptive_legalize(rank: int):
    def legalize(call, context):
        data = data_info(call, rank)
        if data.shape_values is None:
            return None
        return context.call_te(lambda d: adaptive_pool_compute(call, d, rank), call.args, call.arg_info,
                               f"adaptive_avg_pool{rank}d")

    return legalize


def register_adaptive_pool(rank: int) -> None:
    layout = layout_letters(rank)
    register(OpDef(
        name=f"relax.nn.adaptive_avg_pool{rank}d",
        args=("data",),
        attrs=(
            AttrSpec("output_size", None, _output_size_check(rank)),
            AttrSpec("layout", layout, layout_check(layout)),
            AttrSpec("out_layout", None, layout_check(layout)),
        ),
        infer=adaptive_infer(rank),
        pattern="opaque",  # as TVM annotates its two-stage kernel
        legalize=adaptive_legalize(rank),
        doc=f"{rank}-D average pooling into a fixed output size (bins as in TVM and PyTorch)",
    ))


register_adaptive_pool(2)
