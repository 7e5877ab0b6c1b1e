"""Convolutions of R.nn: conv1d, conv2d (any permutation of NCHW / OIHW, e.g.
NHWC with HWIO), grouped and depthwise, dilated, strided, padded; conv2d_transpose
(NCHW / IOHW). The computations take the number of spatial axes as a parameter:
nn_conv_nd.py registers the 1-D and 3-D forms from them.

A convolution legalizes to a padding stage ("pad_temp", zeros outside the input,
only when there is padding) and one reduction over input channels of the group and
kernel positions, accumulating in out_dtype. The transposed convolution is written
directly as the gradient of a convolution: an output position receives input
positions whose strided, dilated footprint lands on it.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .nn_window import (
    SPATIAL_LETTERS, axes_of, dim, fold, if_then_else, in_bounds, int_tuple_check, layout_check, out_dtype_check,
    padding_check, padding_values, pick, place, positive, spatial_values, window_out_size,
)
from .registry import AttrSpec, OpDef, register
from .shape import format_shape, int64, make_tensor_info, same_dim, static_value, tensor_info

def conv_attrs(rank: int, data_layout: str, kernel_layout: str, transpose: bool = False):
    spatial = int_tuple_check((1, rank), minimum=1)
    attrs = [
        AttrSpec("strides", (1,) * rank, spatial),
        AttrSpec("padding", (0,) * (2 * rank), padding_check(rank)),
    ]
    if transpose:
        attrs.append(AttrSpec("output_padding", (0,) * rank, int_tuple_check((1, rank))))
    attrs += [
        AttrSpec("dilation", (1,) * rank, spatial),
        AttrSpec("groups", 1, lambda v: None if isinstance(v, int) and v >= 1 else "expected a positive int"),
        AttrSpec("data_layout", data_layout, layout_check(data_layout)),
        AttrSpec("kernel_layout", kernel_layout, layout_check(kernel_layout)),
        AttrSpec("out_layout", None, layout_check(data_layout)),
        AttrSpec("out_dtype", None, out_dtype_check),
    ]
    return tuple(attrs)


class ConvParams:
    """A convolution's attributes in normal form, with its layouts as axis positions."""

    def __init__(self, call, rank: int, transpose: bool = False):
        attrs = call.attrs
        self.rank = rank
        self.strides = spatial_values(attrs["strides"], rank)
        self.dilation = spatial_values(attrs["dilation"], rank)
        self.padding = padding_values(attrs["padding"], rank)
        self.output_padding = spatial_values(attrs["output_padding"], rank) if transpose else (0,) * rank
        self.groups = attrs["groups"]
        spatial = SPATIAL_LETTERS[rank]
        self.data_axes = axes_of(attrs["data_layout"], "NC" + spatial)
        self.kernel_axes = axes_of(attrs["kernel_layout"], ("IO" if transpose else "OI") + spatial)
        self.out_layout = attrs["out_layout"] or attrs["data_layout"]
        self.out_axes = axes_of(self.out_layout, "NC" + spatial)
        if transpose:
            supported = attrs["data_layout"] == "NC" + spatial and attrs["kernel_layout"] == "IO" + spatial
            if not supported or self.out_layout != "NC" + spatial:
                raise call.error(f"only NC{spatial} data with IO{spatial} kernels is supported")
            for pad, stride, dilation in zip(self.output_padding, self.strides, self.dilation):
                if pad >= stride and pad >= dilation:
                    raise call.error(f"output_padding {pad} must be smaller than the stride or the dilation")

    def pad_before(self, axis: int) -> int:
        return self.padding[axis]

    def pad_after(self, axis: int) -> int:
        return self.padding[self.rank + axis]



def zero(dtype: str) -> tir.PrimExpr:
    return tir.FloatImm(dtype, 0.0) if dt.is_float(dtype) else tir.IntImm(dtype, 0)


def conv_dtype(call, data: TensorStructInfo, weight: TensorStructInfo) -> str:
    requested = call.attrs["out_dtype"]
    if requested not in (None, "", "void"):
        return requested
    if "void" not in (data.dtype, weight.dtype) and data.dtype != weight.dtype:
        raise call.error(f"data type {data.dtype} and weight type {weight.dtype} differ; give out_dtype")
    return data.dtype if data.dtype != "void" else weight.dtype


def _check_channels(call, groups: int, in_channels, weight_in, weight_out) -> None:
    """conv: the weight is (C_out, C_in / groups, ...)."""
    channels, per_group = static_value(in_channels), static_value(weight_in)
    if channels is not None and per_group is not None and channels != per_group * groups:
        expected = str(per_group) if groups == 1 else f"{per_group} per group x {groups} groups = {per_group * groups}"
        raise call.error(f"data has {channels} channels but the weight expects {expected}")
    if static_value(weight_out) is not None and static_value(weight_out) % groups:
        raise call.error(f"{static_value(weight_out)} output channels are not divisible by {groups} groups")


def _check_transpose_channels(call, groups: int, in_channels, weight_in) -> None:
    """conv_transpose: the weight is (C_in, C_out / groups, ...)."""
    if same_dim(in_channels, weight_in) is False:
        raise call.error(f"data has {static_value(in_channels)} channels but the weight expects "
                         f"{static_value(weight_in)}")
    if static_value(in_channels) is not None and static_value(in_channels) % groups:
        raise call.error(f"{static_value(in_channels)} input channels are not divisible by {groups} groups")


def conv_out_dims(call, params: ConvParams, data_dims, weight_dims, transpose: bool = False):
    """Output dims in canonical order (N, C_out, spatial...)."""
    batch, in_channels, *spatial = pick(data_dims, params.data_axes)
    # The kernel layout letters are OI... for conv and IO... for conv_transpose.
    kernel_first, kernel_second, *kernel = pick(weight_dims, params.kernel_axes)
    if transpose:
        _check_transpose_channels(call, params.groups, in_channels, kernel_first)
        out_channels = fold(kernel_second * int64(params.groups))
    else:
        _check_channels(call, params.groups, in_channels, kernel_second, kernel_first)
        out_channels = kernel_first
    out_spatial = []
    for axis, (size, extent) in enumerate(zip(spatial, kernel)):
        stride, dilation = params.strides[axis], params.dilation[axis]
        pad_total = params.pad_before(axis) + params.pad_after(axis)
        if transpose:
            dilated = dim(dilation) * (dim(extent) - int64(1)) + int64(1)
            value = fold((dim(size) - int64(1)) * int64(stride) - int64(pad_total) + dilated
                         + int64(params.output_padding[axis]))
        else:
            value = window_out_size(size, pad_total, extent, dilation, stride)
        if not positive(value):
            raise call.error(f"the output would be empty: input {format_shape(data_dims)}, "
                             f"weight {format_shape(weight_dims)}")
        out_spatial.append(value)
    return (batch, out_channels, *out_spatial)


def conv_infer(rank: int, transpose: bool = False):
    def infer(call) -> TensorStructInfo:
        data, weight = tensor_info(call, 0), tensor_info(call, 1)
        for name, info in (("data", data), ("weight", weight)):
            if info.ndim >= 0 and info.ndim != rank + 2:
                raise call.error(f"{name} must have rank {rank + 2}, got rank {info.ndim}")
        params = ConvParams(call, rank, transpose)
        dtype = conv_dtype(call, data, weight)
        if data.shape_values is None or weight.shape_values is None:
            return TensorStructInfo(None, dtype, rank + 2)
        dims = conv_out_dims(call, params, data.shape_values, weight.shape_values, transpose)
        return make_tensor_info(place(params.out_axes, dims), dtype)

    return infer


def _cast(value: tir.PrimExpr, dtype: str) -> tir.PrimExpr:
    return value if value.dtype == dtype else tir.Cast(dtype, value)


def _window_axes(kernel) -> list[te.ReduceAxis]:
    """Reduction axes over the kernel's spatial extents: rz, ry, rx in 3-D, ry, rx in
    2-D, rx alone in 1-D."""
    names = ("rz", "ry", "rx")[-len(kernel):]
    return [te.reduce_axis(extent, name) for extent, name in zip(kernel, names)]


def padded(data: te.Tensor, params: ConvParams, fill) -> te.Tensor:
    """The data with `fill` around its spatial axes: TVM's "pad_temp" stage."""
    spatial_axes = params.data_axes[2:]
    dims = list(data.shape)
    for axis, position in enumerate(spatial_axes):
        dims[position] = fold(dims[position] + int64(params.pad_before(axis) + params.pad_after(axis)))

    def body(*index):
        source = list(index)
        for axis, position in enumerate(spatial_axes):
            source[position] = index[position] - int64(params.pad_before(axis))
        inside = in_bounds([source[p] for p in spatial_axes], [data.shape[p] for p in spatial_axes])
        return if_then_else(inside, data[tuple(source)], fill(data.dtype))

    return te.compute(tuple(dims), body, "pad_temp")


def conv_compute(call, params: ConvParams, data: te.Tensor, weight: te.Tensor, out_dtype: str, name: str):
    has_padding = any(params.padding)
    source = padded(data, params, zero) if has_padding else data
    kernel_out, kernel_in, *kernel = pick(weight.shape, params.kernel_axes)
    channel = te.reduce_axis(kernel_in, "rc")
    window = _window_axes(kernel)
    out_dims = conv_out_dims(call, params, data.shape, weight.shape)
    group_size = kernel_out if params.groups == 1 else fold(tir.FloorDiv(kernel_out, int64(params.groups)))

    def body(*out_index):
        batch, out_channel, *position = pick(out_index, params.out_axes)
        in_channel = channel.var
        if params.groups > 1:
            in_channel = out_channel // group_size * kernel_in + channel.var
        spatial = [p * int64(params.strides[a]) + k.var * int64(params.dilation[a])
                   for a, (p, k) in enumerate(zip(position, window))]
        data_value = source[place(params.data_axes, (batch, in_channel, *spatial))]
        weight_value = weight[place(params.kernel_axes, (out_channel, channel.var, *[k.var for k in window]))]
        return te.reduce_sum(tir.Mul(_cast(data_value, out_dtype), _cast(weight_value, out_dtype)), [channel, *window])

    return te.compute(place(params.out_axes, out_dims), body, name, out_dtype)


def conv_transpose_compute(call, params: ConvParams, data: te.Tensor, weight: te.Tensor, out_dtype: str, name: str):
    in_channels = data.shape[1]
    kernel_in, kernel_out, *kernel = weight.shape
    group_in = in_channels if params.groups == 1 else fold(tir.FloorDiv(in_channels, int64(params.groups)))
    channel = te.reduce_axis(group_in, "rc")
    window = _window_axes(kernel)
    out_dims = conv_out_dims(call, params, data.shape, weight.shape, transpose=True)

    def body(batch, out_channel, *position):
        group = out_channel // kernel_out if params.groups > 1 else int64(0)
        in_channel = group * group_in + channel.var if params.groups > 1 else channel.var
        # Input position i reaches output position i * stride + k * dilation - pad_before.
        conditions, sources = [], []
        for axis, (p, k) in enumerate(zip(position, window)):
            offset = p + int64(params.pad_before(axis)) - k.var * int64(params.dilation[axis])
            stride = int64(params.strides[axis])
            source = offset // stride
            if params.strides[axis] > 1:
                conditions.append(tir.EQ(offset % stride, int64(0)))
            conditions.append(in_bounds([source], [data.shape[2 + axis]]))
            sources.append(source)
        condition = conditions[0]
        for part in conditions[1:]:
            condition = tir.And(condition, part)
        out_in_group = out_channel % kernel_out if params.groups > 1 else out_channel
        product = tir.Mul(_cast(data[(batch, in_channel, *sources)], out_dtype),
                          _cast(weight[(in_channel, out_in_group, *[k.var for k in window])], out_dtype))
        return te.reduce_sum(if_then_else(condition, product, zero(out_dtype)), [channel, *window])

    return te.compute(out_dims, body, name, out_dtype)


def conv_legalize(rank: int, transpose: bool = False):
    def legalize(call, context):
        info = conv_infer(rank, transpose)(call)
        if info.shape_values is None:
            return None
        params = ConvParams(call, rank, transpose)
        layout = call.attrs["data_layout"].lower()
        if transpose:
            return context.call_te(
                lambda d, w: conv_transpose_compute(call, params, d, w, info.dtype, f"conv{rank}d_transpose_{layout}"),
                call.args, call.arg_info, f"conv{rank}d_transpose",
            )
        return context.call_te(
            lambda d, w: conv_compute(call, params, d, w, info.dtype, f"conv{rank}d_{layout}"),
            call.args, call.arg_info, f"conv{rank}d",
        )

    return legalize


for _rank, _data_layout, _kernel_layout in ((1, "NCW", "OIW"), (2, "NCHW", "OIHW")):
    register(OpDef(
        name=f"relax.nn.conv{_rank}d",
        args=("data", "weight"),
        attrs=conv_attrs(_rank, _data_layout, _kernel_layout),
        infer=conv_infer(_rank),
        pattern="out_elementwise_fusable",
        legalize=conv_legalize(_rank),
        doc=f"{_rank}-D convolution (grouped, dilated, strided, padded; any permutation of the layouts)",
    ))

register(OpDef(
    name="relax.nn.conv2d_transpose",
    args=("data", "weight"),
    attrs=conv_attrs(2, "NCHW", "IOHW", transpose=True),
    infer=conv_infer(2, transpose=True),
    pattern="out_elementwise_fusable",
    legalize=conv_legalize(2, transpose=True),
    doc="2-D transposed convolution (the gradient of conv2d with respect to its input)",
))
