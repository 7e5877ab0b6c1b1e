"""Affine quantization: R.quantize and R.dequantize.

    quantize:   out = clamp(round(x / scale) + zero_point, out_dtype.min, out_dtype.max)
    dequantize: out = (int32(x) - int32(zero_point)) * scale

`scale` and `zero_point` are scalars or 1-D tensors with one value per element of
`axis`. dequantize computes in float32 and, for a narrower out_dtype (float16),
clamps to its finite range before the cast, as TVM's legalization does.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .registry import AttrSpec, OpDef, register
from .shape import format_shape, int64, same_dim, static_value, tensor_info


def _dtype_check(value) -> str | None:
    return None if isinstance(value, str) and dt.is_valid(value) else "expected a data type"


def _axis(call, ndim: int) -> int:
    axis = call.attrs["axis"]
    if ndim >= 0 and not -ndim <= axis < max(ndim, 1):
        raise call.error(f"axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim > 0 else 0


def _check_parameter(call, position: int, name: str, data) -> None:
    info = tensor_info(call, position)
    if info.ndim not in (-1, 0, 1):
        raise call.error(f"{name} must be a scalar or a 1-D tensor, got rank {info.ndim}")
    if info.ndim == 1 and info.shape_values is not None and data.shape_values is not None and data.ndim > 0:
        length, channels = info.shape_values[0], data.shape_values[_axis(call, data.ndim)]
        if static_value(length) != 1 and same_dim(length, channels) is False:
            raise call.error(f"{name} of shape {format_shape(info.shape_values)} does not match axis"
                             f" {call.attrs['axis']} of {format_shape(data.shape_values)}")


def _infer(quantizing: bool):
    def infer(call) -> TensorStructInfo:
        data = tensor_info(call, 0)
        out_dtype = call.attrs["out_dtype"]
        if quantizing:
            if data.dtype != "void" and not dt.is_float(data.dtype):
                raise call.error(f"data must be a floating-point tensor, got {data.dtype}")
            if not (dt.is_int(out_dtype) or dt.is_uint(out_dtype)):
                raise call.error(f"out_dtype must be an integer type, got {out_dtype}")
        else:
            if data.dtype != "void" and not (dt.is_int(data.dtype) or dt.is_uint(data.dtype)):
                raise call.error(f"data must be an integer tensor, got {data.dtype}")
            if not dt.is_float(out_dtype):
                raise call.error(f"out_dtype must be a floating-point type, got {out_dtype}")
        _axis(call, data.ndim)
        scale = tensor_info(call, 1)
        if scale.dtype != "void" and not dt.is_float(scale.dtype):
            raise call.error(f"scale must be a floating-point tensor, got {scale.dtype}")
        _check_parameter(call, 1, "scale", data)
        _check_parameter(call, 2, "zero_point", data)
        return TensorStructInfo(data.shape, out_dtype, data.ndim)

    return infer


def _per_channel(tensor, index, axis):
    """The element of a scale or zero point for the data element at `index`."""
    if tensor.ndim == 0:
        return tensor[()]
    return tensor[int64(0) if static_value(tensor.shape[0]) == 1 else index[axis]]


def _cast(value, dtype: str):
    return value if value.dtype == dtype else tir.Cast(dtype, value)


def _limits(dtype: str):
    if dt.is_float(dtype):
        finite = float(np.finfo(dt.to_numpy(dtype)).max)
        return -finite, finite
    bits = dt.bits(dtype)
    return (0, (1 << bits) - 1) if dt.is_uint(dtype) else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def _quantize_element(x, scale, zero_point, out_dtype: str):
    compute = x.dtype
    value = tir.Add(tir.Call(compute, "tir.round", (tir.Div(x, _cast(scale, compute)),)), _cast(zero_point, compute))
    low, high = _limits(out_dtype)
    return tir.Cast(out_dtype, tir.Max(tir.Min(value, tir.FloatImm(compute, float(high))),
                                       tir.FloatImm(compute, float(low))))


def _dequantize_element(x, scale, zero_point, out_dtype: str):
    shifted = tir.Sub(_cast(x, "int32"), _cast(zero_point, "int32"))
    value = tir.Mul(tir.Cast("float32", shifted), _cast(scale, "float32"))
    if dt.bits(out_dtype) >= 32:
        return _cast(value, out_dtype)
    low, high = _limits(out_dtype)
    return tir.Cast(out_dtype, tir.Max(tir.Min(value, tir.FloatImm("float32", high)), tir.FloatImm("float32", low)))


def _legalize(quantizing: bool):
    name = "quantize" if quantizing else "dequantize"
    element = _quantize_element if quantizing else _dequantize_element

    def legalize(call, context):
        out_dtype = call.attrs["out_dtype"]
        axis = _axis(call, call.arg_info[0].ndim)

        def fcompute(x, scale, zero_point):
            return te.compute(x.shape, lambda *i: element(x[i], _per_channel(scale, i, axis),
                                                          _per_channel(zero_point, i, axis), out_dtype),
                              f"{name}d", out_dtype)

        return context.call_te(fcompute, call.args, call.arg_info, name)

    return legalize


for _quantizing, _default in ((True, "int8"), (False, "float32")):
    _name = "quantize" if _quantizing else "dequantize"
    register(OpDef(f"relax.{_name}", ("data", "scale", "zero_point"),
                   (AttrSpec("axis", -1), AttrSpec("out_dtype", _default, _dtype_check)),
                   _infer(_quantizing), "elementwise", _legalize(_quantizing),
                   "affine quantization to out_dtype" if _quantizing else "affine dequantization to out_dtype"))
