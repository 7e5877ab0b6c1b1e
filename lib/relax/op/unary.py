"""Elementwise unary operators: math functions, rounding, predicates, clip.

Each row of UNARY_OPS gives the name, the element computation in TIR, and which
dtypes it accepts ("float" ops need a floating dtype; "any" takes every numeric
one). Predicates (isnan, isinf, isfinite) give bool.
"""

from __future__ import annotations

from typing import Callable

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import runtime_shape, te
from .registry import AttrSpec, OpDef, register
from .shape import tensor_info


def intrinsic(name: str, result_dtype: str | None = None) -> Callable[[tir.PrimExpr], tir.PrimExpr]:
    return lambda x: tir.Call(result_dtype or x.dtype, f"tir.{name}", (x,))


def constant(value: float, like: tir.PrimExpr) -> tir.PrimExpr:
    return tir.FloatImm(like.dtype, value) if dt.is_float(like.dtype) else tir.IntImm(like.dtype, int(value))


def _negative(x):
    return tir.Sub(constant(0, x), x)


def _abs(x):
    if dt.is_uint(x.dtype) or dt.is_bool(x.dtype):
        return x
    if dt.is_float(x.dtype):
        return tir.Call(x.dtype, "tir.fabs", (x,))
    return tir.Select(tir.LT(x, constant(0, x)), _negative(x), x)


def _square(x):
    return tir.Mul(x, x)


def _sign(x):
    zero, one = constant(0, x), constant(1, x)
    return tir.Select(tir.LT(zero, x), one, tir.Select(tir.LT(x, zero), constant(-1, x), zero))


def _isfinite(x):
    return tir.Call("bool", "tir.isfinite", (x,))


def _logical_not(x):
    return tir.Not(x)


def _bitwise_not(x):
    return tir.Call(x.dtype, "tir.bitwise_not", (x,))


def _rsqrt(x):
    return tir.Call(x.dtype, "tir.rsqrt", (x,))


# name, element computation, accepted dtypes ("float", "any", "int", "bool"), result dtype (None: same)
UNARY_OPS: tuple[tuple[str, Callable, str, str | None], ...] = (
    ("abs", _abs, "any", None),
    ("negative", _negative, "any", None),
    ("exp", intrinsic("exp"), "float", None),
    ("log", intrinsic("log"), "float", None),
    ("sqrt", intrinsic("sqrt"), "float", None),
    ("rsqrt", _rsqrt, "float", None),
    ("square", _square, "any", None),
    ("sin", intrinsic("sin"), "float", None),
    ("cos", intrinsic("cos"), "float", None),
    ("tan", intrinsic("tan"), "float", None),
    ("tanh", intrinsic("tanh"), "float", None),
    ("asin", intrinsic("asin"), "float", None),
    ("acos", intrinsic("acos"), "float", None),
    ("atan", intrinsic("atan"), "float", None),
    ("sinh", intrinsic("sinh"), "float", None),
    ("cosh", intrinsic("cosh"), "float", None),
    ("asinh", intrinsic("asinh"), "float", None),
    ("acosh", intrinsic("acosh"), "float", None),
    ("atanh", intrinsic("atanh"), "float", None),
    ("sigmoid", intrinsic("sigmoid"), "float", None),
    ("erf", intrinsic("erf"), "float", None),
    ("floor", intrinsic("floor"), "any_round", None),
    ("ceil", intrinsic("ceil"), "any_round", None),
    ("round", intrinsic("round"), "any_round", None),
    ("trunc", intrinsic("trunc"), "any_round", None),
    ("sign", _sign, "any", None),
    ("isnan", intrinsic("isnan", "bool"), "float", "bool"),
    ("isinf", intrinsic("isinf", "bool"), "float", "bool"),
    ("isfinite", _isfinite, "float", "bool"),
    ("logical_not", _logical_not, "bool", None),
    ("bitwise_not", _bitwise_not, "int", None),
)


def check_dtype(call, dtype: str, accepted: str) -> None:
    if dtype == "void" or accepted in ("any", "any_round"):
        return
    if accepted == "float" and not dt.is_float(dtype):
        raise call.error(f"operand must be a floating-point tensor, got {dtype}")
    if accepted == "int" and not (dt.is_int(dtype) or dt.is_uint(dtype)):
        raise call.error(f"operand must be an integer tensor, got {dtype}")
    if accepted == "bool" and not dt.is_bool(dtype):
        raise call.error(f"operand must be a bool tensor, got {dtype}")


def elementwise_infer(accepted: str, result_dtype: str | None):
    def infer(call) -> TensorStructInfo:
        info = tensor_info(call, 0)
        check_dtype(call, info.dtype, accepted)
        if result_dtype is None:
            return info.with_fields(span=None)
        return TensorStructInfo(info.shape, result_dtype, info.ndim)

    return infer


def elementwise_legalize(name: str, element: Callable[..., tir.PrimExpr], accepted: str = "any"):
    """Legalization of an operator computing `element(x, **attrs)` at every index."""

    def legalize(call, context):
        def fcompute(x: te.Tensor) -> te.Tensor:
            def body(*index):
                value = x[index]
                if accepted == "any_round" and not dt.is_float(x.dtype):
                    return value  # rounding an integer is the identity
                return element(value, **dict(call.attrs))

            return te.compute(x.shape, body, f"T_{name}")

        if runtime_shape.needs_runtime_shape(call.arg_info):
            return runtime_shape.unary(call, context, fcompute, name)
        return context.call_te(fcompute, call.args, call.arg_info, name)

    return legalize


for _name, _element, _accepted, _result in UNARY_OPS:
    register(OpDef(
        name=f"relax.{_name}",
        args=("x",),
        attrs=(),
        infer=elementwise_infer(_accepted, _result),
        pattern="elementwise",
        legalize=elementwise_legalize(_name, _element, _accepted),
        doc=f"elementwise {_name}",
    ))


def _clip(x, min, max):  # noqa: A002 - the attribute names are TVM's
    low = constant(float(min), x)
    high = constant(float(max), x)
    return tir.Max(tir.Min(x, high), low)


def _is_number(value) -> str | None:
    return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "expected a number"


register(OpDef(
    name="relax.clip",
    args=("x",),
    attrs=(AttrSpec("min", check=_is_number), AttrSpec("max", check=_is_number)),
    infer=elementwise_infer("any", None),
    pattern="elementwise",
    legalize=elementwise_legalize("clip", _clip),
    doc="clamp every element into [min, max]",
))
