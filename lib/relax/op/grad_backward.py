"""Backward operators of R.grad: the gradient with respect to the input of
nn.max_pool2d, nn.avg_pool2d, nn.nll_loss and take, given the gradient of the output.

    max_pool2d_backward   each window's gradient goes to the window's first maximum
                          (row-major order; padding is never a maximum)
    avg_pool2d_backward   each window's gradient, divided by the window's count (the
                          kernel size with count_include_pad), goes to every input in it
    nll_loss_backward     -weight[target] * output_grad (/ the summed weight for "mean")
                          at the target class, 0 elsewhere; classes equal to a
                          non-negative ignore_index weigh 0
    take_backward         output_grad summed into the positions the indices took from
                          (an index outside the axis contributes nothing)

Each legalizes to one kernel written as gathers (a sum over the windows or indices
that reach an input position) rather than as scatters, so that every output element
is computed once, in parallel, as the TE language requires.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import StructInfo, TensorStructInfo
from . import te
from .index_check import checked_position
from .nn_pool import PoolParams, pool_attrs, pool_compute, pool_out_dims
from .nn_window import if_then_else, in_bounds, pick, place
from .registry import AttrSpec, OpDef, register
from .shape import flat_offset, format_shape, int64, same_dim, tensor_info


def _zero(dtype: str) -> tir.PrimExpr:
    return tir.FloatImm(dtype, 0.0) if dt.is_float(dtype) else tir.IntImm(dtype, 0)


def _all(conditions) -> tir.PrimExpr:
    result = None
    for condition in conditions:
        result = condition if result is None else tir.And(result, condition)
    return result if result is not None else tir.IntImm("bool", 1)


def _same_shape_error(call, grad: TensorStructInfo, expected, what: str) -> None:
    if grad.shape_values is None or expected is None:
        return
    if len(grad.shape_values) != len(expected) or any(same_dim(a, b) is False
                                                      for a, b in zip(grad.shape_values, expected)):
        raise call.error(f"output_grad has shape {format_shape(grad.shape_values)}, "
                         f"but {what} has shape {format_shape(expected)}")


# -- pools ---------------------------------------------------------------------------------
def _pool_backward_infer(call) -> StructInfo:
    grad, data = tensor_info(call, 0), tensor_info(call, 1)
    for name, info in (("output_grad", grad), ("data", data)):
        if info.ndim >= 0 and info.ndim != 4:
            raise call.error(f"{name} must have rank 4, got rank {info.ndim}")
    if data.shape_values is not None:
        params = PoolParams(call, 2)
        _same_shape_error(call, grad, place(params.out_axes, pool_out_dims(call, params, data.shape_values)),
                          "the pool's output")
    return data.with_fields(span=None)


def _window_source(params: PoolParams, position, window, out_sizes):
    """For an input position (H, W) and a window offset (kh, kw): the output position
    whose window reads the input there, and whether there is one."""
    outs, conditions = [], []
    for axis, (index, k) in enumerate(zip(position, window)):
        reach = index + int64(params.padding[axis]) - k.var * int64(params.dilation[axis])
        stride = int64(params.strides[axis])
        out = reach // stride
        conditions += [tir.GE(reach, int64(0)), tir.EQ(reach % stride, int64(0)),
                       tir.LT(out, out_sizes[axis])]
        outs.append(out)
    return outs, _all(conditions)


def _valid_count(params: PoolParams, out_position, sizes) -> tir.PrimExpr:
    """How many positions of the window at `out_position` fall inside the input."""
    count: tir.PrimExpr = int64(1)
    for axis, (position, size) in enumerate(zip(out_position, sizes)):
        dilation, extent = params.dilation[axis], params.pool_size[axis]
        start = position * int64(params.strides[axis]) - int64(params.padding[axis])
        first = tir.Max(int64(0), (int64(dilation - 1) - start) // int64(dilation))
        last = tir.Min(int64(extent - 1), (size - int64(1) - start) // int64(dilation))
        count = count * tir.Max(last - first + int64(1), int64(0))
    return count


def _pool_backward_compute(call, params: PoolParams, grad: te.Tensor, data: te.Tensor, kind: str) -> te.Tensor:
    sizes = pick(data.shape, params.data_axes[2:])
    out_sizes = pick(grad.shape, params.out_axes[2:])
    kernel_h, kernel_w = params.pool_size
    if kind == "max":
        pooled = pool_compute(call, params, data, "max")
        first = _first_maximum(params, data, pooled, sizes)
    window = [te.reduce_axis(params.pool_size[axis], name) for axis, name in enumerate(("rv0", "rv1"))]

    def gather(*index):
        batch, channel, *position = pick(index, params.data_axes)
        outs, reaches = _window_source(params, position, window, out_sizes)
        out_index = place(params.out_axes, (batch, channel, *outs))
        if kind == "max":
            taken = tir.EQ(first[out_index], window[0].var * int64(kernel_w) + window[1].var)
            # Both loads only where a window reaches here (elsewhere out_index is outside the output).
            value = if_then_else(reaches, tir.Select(taken, grad[out_index], _zero(grad.dtype)), _zero(grad.dtype))
        else:
            count = int64(kernel_h * kernel_w) if params.count_include_pad else \
                tir.Max(_valid_count(params, outs, sizes), int64(1))
            share = tir.Div(grad[out_index], tir.Cast(grad.dtype, count))
            value = if_then_else(reaches, share, _zero(grad.dtype))
        return te.reduce_sum(tir.Cast(data.dtype, value), window)

    return te.compute(data.shape, gather, f"{kind}_pool2d_backward")


def _first_maximum(params: PoolParams, data: te.Tensor, pooled: te.Tensor, sizes) -> te.Tensor:
    """The row-major window offset (kh * KW + kw) of each window's first maximum."""
    kernel_h, kernel_w = params.pool_size
    window = [te.reduce_axis(params.pool_size[axis], name) for axis, name in enumerate(("rv0", "rv1"))]

    def first(*out_index):
        batch, channel, *position = pick(out_index, params.out_axes)
        spatial = [position[axis] * int64(params.strides[axis]) - int64(params.padding[axis])
                   + window[axis].var * int64(params.dilation[axis]) for axis in range(2)]
        index = place(params.data_axes, (batch, channel, *spatial))
        offset = window[0].var * int64(kernel_w) + window[1].var
        inside = in_bounds(spatial, sizes)
        # Outside the input the load is skipped (it reads as the maximum, and `inside` rejects it).
        is_max = tir.EQ(if_then_else(inside, data[index], pooled[out_index]), pooled[out_index])
        return te.reduce_min(tir.Select(tir.And(inside, is_max), offset, int64(kernel_h * kernel_w)), window)

    return te.compute(pooled.shape, first, "pool_argmax")


def _pool_backward_legalize(kind: str):
    def legalize(call, context):
        grad, data = tensor_info(call, 0), tensor_info(call, 1)
        if grad.shape_values is None or data.shape_values is None:
            return None
        params = PoolParams(call, 2)
        return context.call_te(lambda g, d: _pool_backward_compute(call, params, g, d, kind), call.args,
                               call.arg_info, f"{kind}_pool2d_backward")

    return legalize


for _kind in ("max", "avg"):
    register(OpDef(f"relax.grad.{_kind}_pool2d_backward", ("output_grad", "data"), pool_attrs(2, False),
                   _pool_backward_infer, "opaque", _pool_backward_legalize(_kind),
                   f"the gradient of nn.{_kind}_pool2d with respect to its input"))


# -- nll_loss_backward ---------------------------------------------------------------------
REDUCTIONS = ("mean", "sum", "none")


def _reduction_check(value) -> str | None:
    return None if value in REDUCTIONS else f"expected one of {', '.join(REDUCTIONS)}"


def _nll_backward_infer(call) -> StructInfo:
    predictions, targets = tensor_info(call, 1), tensor_info(call, 2)
    tensor_info(call, 0)
    if len(call.args) > 4:
        raise call.error(f"takes at most 4 arguments but {len(call.args)} were given")
    if len(call.args) == 4:
        tensor_info(call, 3)
    if targets.dtype != "void" and not (dt.is_int(targets.dtype) or dt.is_uint(targets.dtype)):
        raise call.error(f"targets must have an integer dtype, got {targets.dtype}")
    if predictions.ndim == 0:
        raise call.error("predictions must have rank 1 or more")
    if predictions.ndim >= 1 and targets.ndim >= 0 and targets.ndim != max(predictions.ndim - 1, 0) \
            and not (predictions.ndim == 1 and targets.ndim == 0):
        raise call.error(f"targets of rank {targets.ndim} do not fit predictions of rank {predictions.ndim}")
    return predictions.with_fields(span=None)


def _nll_backward_compute(call, grad, predictions, targets, weights=None) -> te.Tensor:
    reduction, ignore_index = call.attrs["reduction"], int(call.attrs["ignore_index"])
    dtype = predictions.dtype

    def target_of(target_index):
        return tir.Cast("int64", targets[target_index]) if targets.dtype != "int64" else targets[target_index]

    def weight_of(target_index):
        target = target_of(target_index)
        weight = (weights[checked_position(target, weights.shape[0], "R.grad.nll_loss_backward")]
                  if weights is not None else tir.FloatImm(dtype, 1.0))
        if ignore_index < 0:  # as TVM: a negative ignore_index ignores nothing
            return weight
        return if_then_else(tir.EQ(target, int64(ignore_index)), _zero(dtype), weight)

    total = None
    if reduction == "mean":
        axes = [te.reduce_axis(d, f"rv{i}") for i, d in enumerate(targets.shape)]
        total = te.compute((), lambda: te.reduce_sum(weight_of(tuple(a.var for a in axes)), axes)
                           if axes else weight_of(()), "weight_sum", dtype)

    def gradient(*index):
        target_index = tuple(index[:1]) + tuple(index[2:]) if predictions.ndim > 1 else ()
        klass = index[1] if predictions.ndim > 1 else index[0]
        scale = grad[target_index] if reduction == "none" else grad[()]
        if total is not None:
            scale = tir.Div(scale, total[()])
        value = -(weight_of(target_index) * tir.Cast(dtype, scale))
        return tir.Select(tir.EQ(klass, target_of(target_index)), value, _zero(dtype))

    return te.compute(predictions.shape, gradient, "pred_grad")


def _nll_backward_legalize(call, context):
    infos = [tensor_info(call, i) for i in range(len(call.args))]
    if any(info.shape_values is None for info in infos):
        return None
    return context.call_te(lambda *tensors: _nll_backward_compute(call, *tensors), call.args, call.arg_info,
                           "nll_loss_backward")


register(OpDef("relax.grad.nll_loss_backward", ("output_grad", "predictions", "targets", "*weights"),
               (AttrSpec("reduction", "mean", _reduction_check), AttrSpec("ignore_index", -100)),
               _nll_backward_infer, "opaque", _nll_backward_legalize,
               "the gradient of nn.nll_loss with respect to the predictions"))


# -- take_backward -------------------------------------------------------------------------
def _take_backward_infer(call) -> StructInfo:
    grad, x, indices = (tensor_info(call, i) for i in range(3))
    if indices.dtype != "void" and not (dt.is_int(indices.dtype) or dt.is_uint(indices.dtype)):
        raise call.error(f"indices must have an integer dtype, got {indices.dtype}")
    if indices.ndim not in (-1, 1):
        raise call.error(f"indices must be 1-D, got rank {indices.ndim}")
    axis = call.attrs["axis"]
    if axis is not None and x.ndim >= 0:
        if not -x.ndim <= axis < x.ndim:
            raise call.error(f"axis {axis} is out of range for a tensor of rank {x.ndim}")
        if x.shape_values is not None and indices.shape_values is not None:
            axis %= x.ndim
            expected = x.shape_values[:axis] + indices.shape_values + x.shape_values[axis + 1:]
            _same_shape_error(call, grad, expected, "take's output")
    return x.with_fields(span=None)


def _take_backward_compute(call, grad, x, indices) -> te.Tensor:
    axis = call.attrs["axis"]
    (length,) = indices.shape
    position = te.reduce_axis(length, "rv0")
    index = tir.Cast("int64", indices[position.var]) if indices.dtype != "int64" else indices[position.var]

    def gather(*out_index):
        if axis is None:
            taken = tir.EQ(index, flat_offset(out_index, x.shape))
            source = (position.var,)
        else:
            at = axis % x.ndim
            taken = tir.EQ(index, out_index[at])
            source = tuple(out_index[:at]) + (position.var,) + tuple(out_index[at + 1:])
        value = tir.Select(taken, tir.Cast(x.dtype, grad[source]), _zero(x.dtype))
        return te.reduce_sum(value, [position])

    return te.compute(x.shape, gather, "take_backward")


def _take_backward_legalize(call, context):
    if any(tensor_info(call, i).shape_values is None for i in range(3)):
        return None
    return context.call_te(lambda g, x, i: _take_backward_compute(call, g, x, i), call.args, call.arg_info,
                           "take_backward")


# TVM keeps take's attributes here, mode included (printed as mode=""); the gradient ignores it.
register(OpDef("relax.grad.take_backward", ("output_grad", "x", "indices"), (AttrSpec("axis", None), AttrSpec("mode", "")),
               _take_backward_infer, "opaque", _take_backward_legalize,
               "the gradient of take with respect to x"))
