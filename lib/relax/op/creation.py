"""Tensors made from nothing or from a template: zeros, ones, full (and their _like
forms), arange, tril, triu; and the elementwise astype and where.

`full(shape, fill_value)` takes its value as a scalar tensor argument, as TVM does
(`R.full(R.shape([2, 2]), R.const(0.25, "float32"), dtype="float32")`).
"""

from __future__ import annotations

import math

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .infer import literal_of
from .registry import AttrSpec, OpDef, register
from .shape import (
    BroadcastError, broadcast_index, broadcast_shapes, int64, make_tensor_info, shape_argument, tensor_info,
)


def _dtype_check(value) -> str | None:
    if value is None or isinstance(value, str) and (value in ("", "void") or dt.is_valid(value)):
        return None
    return "expected a data type"


def _requested_dtype(call, fallback: str) -> str:
    dtype = call.attrs.get("dtype")
    return fallback if dtype in (None, "", "void") else dtype


def _constant(value, dtype: str) -> tir.PrimExpr:
    if dt.is_float(dtype):
        return tir.FloatImm(dtype, float(value))
    return tir.IntImm(dtype, int(value))


# -- zeros, ones, full and the _like forms ------------------------------------------------
def _filled_infer(from_template: bool, has_value: bool):
    def infer(call) -> TensorStructInfo:
        if from_template:
            template = tensor_info(call, 0)
            dtype = _requested_dtype(call, template.dtype)
            return TensorStructInfo(template.shape, dtype, template.ndim)
        dims = shape_argument(call, 0)
        fallback = tensor_info(call, 1).dtype if has_value else "float32"
        dtype = _requested_dtype(call, fallback)
        return make_tensor_info(dims, dtype) if dims is not None else TensorStructInfo(None, dtype, -1)

    return infer


def _filled_legalize(name: str, from_template: bool, fill: float | None):
    """Legalization of zeros/ones (fill given) and full (fill from the value argument).

    The template of a _like form is passed to the kernel only for its shape."""

    def legalize(call, context):
        info = call.op.infer(call)
        if info.shape_values is None:
            return None
        dtype = info.dtype
        positions = ([0] if from_template else []) + ([] if fill is not None else [1])

        def fcompute(*tensors):
            dims = tensors[0].shape if from_template else info.shape_values
            if fill is not None:
                return te.compute(dims, lambda *i: _constant(fill, dtype), f"T_{name}")
            value = tensors[-1]
            return te.compute(dims, lambda *i: _cast(value[()], dtype), f"T_{name}")

        return context.call_te(fcompute, [call.args[p] for p in positions], [call.arg_info[p] for p in positions], name)

    return legalize


def _cast(value: tir.PrimExpr, dtype: str) -> tir.PrimExpr:
    return value if value.dtype == dtype else tir.Cast(dtype, value)


for _name, _template, _fill in (("zeros", False, 0), ("ones", False, 1), ("zeros_like", True, 0),
                                ("ones_like", True, 1)):
    register(OpDef(
        f"relax.{_name}", ("x",) if _template else ("shape",), (AttrSpec("dtype", None if _template else "float32", _dtype_check),),
        _filled_infer(_template, False), "elementwise" if _template else "injective",
        _filled_legalize(_name, _template, _fill), f"a tensor of {'zeros' if _fill == 0 else 'ones'}",
    ))

register(OpDef(
    "relax.full", ("shape", "fill_value"), (AttrSpec("dtype", None, _dtype_check),), _filled_infer(False, True),
    "injective", _filled_legalize("full", False, None), "a tensor filled with a scalar value",
))
register(OpDef(
    "relax.full_like", ("x", "fill_value"), (AttrSpec("dtype", None, _dtype_check),), _filled_infer(True, True),
    "elementwise", _filled_legalize("full_like", True, None), "a tensor shaped like x filled with a scalar value",
))


# -- arange ------------------------------------------------------------------------------------
def _arange_bounds(call):
    values = [literal_of(arg) for arg in call.args]
    if not all(isinstance(v, (int, float)) for v in values):
        return None
    start, end, step = (values + [None, None])[:3] if len(values) > 1 else (0, values[0], None)
    step = 1 if step is None else step
    if step == 0:
        raise call.error("step cannot be 0")
    return start, end, step


def _arange_infer(call) -> TensorStructInfo:
    bounds = _arange_bounds(call)
    dtype = _requested_dtype(call, "int64")
    if bounds is None:
        return TensorStructInfo(None, dtype, 1)
    start, end, step = bounds
    return make_tensor_info((int64(max(0, math.ceil((end - start) / step))),), dtype)


def _arange_legalize(call, context):
    bounds = _arange_bounds(call)
    if bounds is None:
        return None
    start, _, step = bounds
    info = _arange_infer(call)
    dtype = info.dtype

    def value(i):
        if dt.is_float(dtype):
            return tir.Add(_constant(start, dtype), tir.Mul(tir.Cast(dtype, i), _constant(step, dtype)))
        return tir.Cast(dtype, tir.Add(int64(int(start)), tir.Mul(i, int64(int(step)))))

    return context.call_te(lambda: te.compute(info.shape_values, value, "T_arange"), (), (), "arange")


register(OpDef(
    "relax.arange", ("start", "*rest"), (AttrSpec("dtype", None, _dtype_check),), _arange_infer, "injective",
    _arange_legalize, "evenly spaced values: arange(end), arange(start, end[, step])",
))


# -- tril and triu -------------------------------------------------------------------------------
def _triangle_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    if 0 <= info.ndim < 2:
        raise call.error(f"operand must have rank 2 or more, got rank {info.ndim}")
    return info.with_fields(span=None)


def _triangle_legalize(lower: bool):
    def legalize(call, context):
        k = literal_of(call.args[1]) if len(call.args) > 1 else call.attrs.get("k", 0)
        if not isinstance(k, int):
            return None

        def fcompute(x):
            def body(*i):
                row, col = i[-2], i[-1]
                keep = tir.LE(col, row + int64(k)) if lower else tir.GE(col, row + int64(k))
                return tir.Select(keep, x[i], _constant(0, x.dtype))

            return te.compute(x.shape, body, "T_tril" if lower else "T_triu")

        return context.call_te(fcompute, call.args[:1], call.arg_info[:1], "tril" if lower else "triu")

    return legalize


for _name, _lower in (("tril", True), ("triu", False)):
    register(OpDef(
        f"relax.{_name}", ("x", "*k"), (), _triangle_infer, "injective", _triangle_legalize(_lower),
        f"zero the elements {'above' if _lower else 'below'} the k-th diagonal",
    ))


# -- astype and where ------------------------------------------------------------------------------
def _astype_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    return TensorStructInfo(info.shape, call.attrs["dtype"], info.ndim)


def _astype_legalize(call, context):
    dtype = call.attrs["dtype"]
    return context.call_te(
        lambda x: te.compute(x.shape, lambda *i: _cast(x[i], dtype), "T_cast", dtype), call.args, call.arg_info,
        "cast",
    )


register(OpDef(
    "relax.astype", ("x",), (AttrSpec("dtype", check=_dtype_check),), _astype_infer, "elementwise",
    _astype_legalize, "convert every element to dtype",
))


def _where_infer(call) -> TensorStructInfo:
    cond, a, b = (tensor_info(call, i) for i in range(3))
    if cond.dtype not in ("bool", "void"):
        raise call.error(f"condition must be a bool tensor, got {cond.dtype}")
    if a.dtype != b.dtype and "void" not in (a.dtype, b.dtype):
        raise call.error(f"operand data types {a.dtype} and {b.dtype} must be equal")
    if None in (cond.shape_values, a.shape_values, b.shape_values):
        return TensorStructInfo(None, a.dtype, max(cond.ndim, a.ndim, b.ndim))
    try:
        dims = broadcast_shapes(broadcast_shapes(cond.shape_values, a.shape_values) or (), b.shape_values)
    except BroadcastError as exc:
        raise call.error(str(exc)) from None
    return make_tensor_info(dims, a.dtype)


def _where_legalize(call, context):
    if call.op.infer(call).shape_values is None:
        return None

    def fcompute(c, a, b):
        dims = broadcast_shapes(broadcast_shapes(c.shape, a.shape), b.shape)
        return te.compute(dims, lambda *i: tir.Select(c[broadcast_index(c.shape, i)], a[broadcast_index(a.shape, i)],
                                                      b[broadcast_index(b.shape, i)]), "T_where")

    return context.call_te(fcompute, call.args, call.arg_info, "where")


register(OpDef(
    "relax.where", ("condition", "x1", "x2"), (), _where_infer, "broadcast", _where_legalize,
    "x1 where condition holds, else x2 (broadcast)",
))
