"""Softmax and normalization layers of R.nn: softmax, log_softmax, layer_norm, rms_norm.

Softmax is computed stably (subtracting the row maximum) in four stages: maximum,
exponentials, their sum, and the quotient. The norms reduce over `axes` and apply
the learned scale (gamma) and shift (beta) along those axes.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .reduction import element_count, normalize_axes, reduce_compute
from .registry import AttrSpec, OpDef, register
from .shape import int64, tensor_info
from .unary import intrinsic


def _float_input(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    if info.dtype != "void" and not dt.is_float(info.dtype):
        raise call.error(f"operand must be a floating-point tensor, got {info.dtype}")
    return info


def _softmax_infer(call) -> TensorStructInfo:
    info = _float_input(call)
    if info.ndim >= 0:
        normalize_axes(call, call.attrs["axis"], info.ndim)
    return info.with_fields(span=None)


def _keep_index(index, axis):
    return tuple(int64(0) if a == axis else i for a, i in enumerate(index))


def softmax_stages(x: te.Tensor, axis: int, log: bool) -> te.Tensor:
    maximum = reduce_compute(x, (axis,), True, te.reduce_max, "T_softmax_maxelem")
    shifted = te.compute(x.shape, lambda *i: tir.Sub(x[i], maximum[_keep_index(i, axis)]), "T_softmax_shifted")
    exp = te.compute(x.shape, lambda *i: intrinsic("exp")(shifted[i]), "T_softmax_exp")
    total = reduce_compute(exp, (axis,), True, te.reduce_sum, "T_softmax_expsum")
    if log:
        return te.compute(
            x.shape, lambda *i: tir.Sub(shifted[i], intrinsic("log")(total[_keep_index(i, axis)])), "T_log_softmax"
        )
    return te.compute(x.shape, lambda *i: tir.Div(exp[i], total[_keep_index(i, axis)]), "T_softmax_norm")


def _softmax_legalize(log: bool):
    def legalize(call, context):
        info = tensor_info(call, 0)
        if info.shape_values is None:
            return None
        (axis,) = normalize_axes(call, call.attrs["axis"], info.ndim)
        name = "log_softmax" if log else "softmax"
        return context.call_te(lambda x: softmax_stages(x, axis, log), call.args, call.arg_info, name)

    return legalize


for _name, _log in (("softmax", False), ("log_softmax", True)):
    register(OpDef(
        name=f"relax.nn.{_name}",
        args=("data",),
        attrs=(AttrSpec("axis", -1),),
        infer=_softmax_infer,
        pattern="opaque",
        legalize=_softmax_legalize(_log),
        doc=f"{_name} along one axis",
    ))


def _norm_infer(call) -> TensorStructInfo:
    info = _float_input(call)
    if info.ndim >= 0:
        axes = normalize_axes(call, call.attrs["axes"], info.ndim)
        for position in range(1, len(call.args)):
            param = tensor_info(call, position)
            if param.ndim >= 0 and param.ndim != len(axes):
                raise call.error(
                    f"argument {position + 1} must have rank {len(axes)} (one dimension per normalized axis), "
                    f"got rank {param.ndim}"
                )
    return info.with_fields(span=None)


def _param_index(index, axes):
    return tuple(index[a] for a in axes)


def _accumulation_dtype(dtype: str) -> str:
    """Half-precision data is summed and normalized in float32, as TVM's topi does: float16
    sums of x*x overflow, and E[x^2] - E[x]^2 rounded to float16 goes below -epsilon."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def layer_norm_stages(x, gamma, beta, axes, epsilon, center, scale) -> te.Tensor:
    acc = _accumulation_dtype(x.dtype)

    def widened(index):
        return x[index] if acc == x.dtype else tir.Cast(acc, x[index])

    count = tir.Cast(acc, element_count(x, axes))
    total = reduce_compute(x, axes, True, te.reduce_sum, "T_layer_norm_sum", widened)
    squares = reduce_compute(x, axes, True, te.reduce_sum, "T_layer_norm_sqsum",
                             lambda i: tir.Mul(widened(i), widened(i)))

    def body(*index):
        kept = tuple(int64(0) if a in axes else i for a, i in enumerate(index))
        mean = tir.Div(total[kept], count)
        variance = tir.Sub(tir.Div(squares[kept], count), tir.Mul(mean, mean))
        inv_std = tir.Call(acc, "tir.rsqrt", (tir.Add(variance, tir.FloatImm(acc, epsilon)),))
        value = tir.Mul(tir.Sub(widened(index), mean), inv_std)
        if acc != x.dtype:
            value = tir.Cast(x.dtype, value)
        if scale:
            value = tir.Mul(value, gamma[_param_index(index, axes)])
        if center:
            value = tir.Add(value, beta[_param_index(index, axes)])
        return value

    return te.compute(x.shape, body, "T_layer_norm")


def rms_norm_stages(x, weight, axes, epsilon) -> te.Tensor:
    acc = _accumulation_dtype(x.dtype)

    def widened(index):
        return x[index] if acc == x.dtype else tir.Cast(acc, x[index])

    count = tir.Cast(acc, element_count(x, axes))
    squares = reduce_compute(x, axes, True, te.reduce_sum, "T_rms_norm_sqsum", lambda i: tir.Mul(widened(i), widened(i)))

    def body(*index):
        kept = tuple(int64(0) if a in axes else i for a, i in enumerate(index))
        mean_square = tir.Div(squares[kept], count)
        inv_rms = tir.Call(acc, "tir.rsqrt", (tir.Add(mean_square, tir.FloatImm(acc, epsilon)),))
        value = tir.Mul(widened(index), inv_rms)
        if acc != x.dtype:
            value = tir.Cast(x.dtype, value)
        return tir.Mul(value, weight[_param_index(index, axes)])

    return te.compute(x.shape, body, "T_rms_norm")


def _layer_norm_legalize(call, context):
    info = tensor_info(call, 0)
    if info.shape_values is None:
        return None
    axes = normalize_axes(call, call.attrs["axes"], info.ndim)
    a = call.attrs
    return context.call_te(
        lambda x, g, b: layer_norm_stages(x, g, b, axes, a["epsilon"], a["center"], a["scale"]),
        call.args, call.arg_info, "layer_norm",
    )


def _rms_norm_legalize(call, context):
    info = tensor_info(call, 0)
    if info.shape_values is None:
        return None
    axes = normalize_axes(call, call.attrs["axes"], info.ndim)
    return context.call_te(
        lambda x, w: rms_norm_stages(x, w, axes, call.attrs["epsilon"]), call.args, call.arg_info, "rms_norm"
    )


register(OpDef(
    name="relax.nn.layer_norm",
    args=("data", "gamma", "beta"),
    attrs=(AttrSpec("axes", (-1,)), AttrSpec("epsilon", 1e-5), AttrSpec("center", True), AttrSpec("scale", True)),
    infer=_norm_infer,
    pattern="opaque",
    legalize=_layer_norm_legalize,
    doc="layer normalization over `axes`, then scale by gamma and shift by beta",
))

register(OpDef(
    name="relax.nn.rms_norm",
    args=("data", "weight"),
    attrs=(AttrSpec("axes", (-1,)), AttrSpec("epsilon", 1e-5)),
    infer=_norm_infer,
    pattern="opaque",
    legalize=_rms_norm_legalize,
    doc="root-mean-square normalization over `axes`, then scale by weight",
))
