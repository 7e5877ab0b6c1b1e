"""Elementwise binary operators with numpy broadcasting: arithmetic, comparison,
logical and bitwise.

Both operands must have the same dtype (as in TVM); comparisons give bool. Each
operator is one row of BINARY_OPS: its name, how one element is computed in TIR,
and whether the result is bool.
"""

from __future__ import annotations

from typing import Callable

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import runtime_shape, te
from .registry import OpDef, register
from .shape import BroadcastError, broadcast_index, broadcast_shapes, make_tensor_info, tensor_info


def _intrinsic(name: str) -> Callable[[tir.PrimExpr, tir.PrimExpr], tir.PrimExpr]:
    return lambda a, b: tir.Call(a.dtype, f"tir.{name}", (a, b))


def _xor(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    return tir.NE(a, b)


def _floor_divide(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    if dt.is_float(a.dtype):
        return tir.Call(a.dtype, "tir.floor", (tir.Div(a, b),))
    return tir.FloorDiv(a, b)


def _floor_mod(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    if dt.is_float(a.dtype):
        return tir.Sub(a, tir.Mul(tir.Call(a.dtype, "tir.floor", (tir.Div(a, b),)), b))
    return tir.FloorMod(a, b)


def _truncate_mod(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    if dt.is_float(a.dtype):
        return tir.Call(a.dtype, "tir.fmod", (a, b))
    return tir.Mod(a, b)


# name, element computation, result is bool, dtype kinds allowed ("any", "int", "bool")
BINARY_OPS: tuple[tuple[str, Callable, bool, str], ...] = (
    ("add", tir.Add, False, "any"),
    ("subtract", tir.Sub, False, "any"),
    ("multiply", tir.Mul, False, "any"),
    ("divide", tir.Div, False, "any"),
    ("floor_divide", _floor_divide, False, "any"),
    ("power", _intrinsic("pow"), False, "any"),
    ("maximum", tir.Max, False, "any"),
    ("minimum", tir.Min, False, "any"),
    ("mod", _truncate_mod, False, "any"),
    ("floor_mod", _floor_mod, False, "any"),
    ("equal", tir.EQ, True, "any"),
    ("not_equal", tir.NE, True, "any"),
    ("less", tir.LT, True, "any"),
    ("less_equal", tir.LE, True, "any"),
    ("greater", tir.GT, True, "any"),
    ("greater_equal", tir.GE, True, "any"),
    ("logical_and", tir.And, True, "bool"),
    ("logical_or", tir.Or, True, "bool"),
    ("logical_xor", _xor, True, "bool"),
    ("bitwise_and", _intrinsic("bitwise_and"), False, "int"),
    ("bitwise_or", _intrinsic("bitwise_or"), False, "int"),
    ("bitwise_xor", _intrinsic("bitwise_xor"), False, "int"),
    ("left_shift", _intrinsic("shift_left"), False, "int"),
    ("right_shift", _intrinsic("shift_right"), False, "int"),
)


def _check_kind(call, dtype: str, kind: str) -> None:
    if dtype == "void":
        return
    if kind == "int" and not (dt.is_int(dtype) or dt.is_uint(dtype)):
        raise call.error(f"operands must be integers, got {dtype}")
    if kind == "bool" and not dt.is_bool(dtype):
        raise call.error(f"operands must be bool, got {dtype}")


def _make_infer(result_is_bool: bool, kind: str):
    def infer(call) -> TensorStructInfo:
        lhs, rhs = tensor_info(call, 0), tensor_info(call, 1)
        if lhs.dtype != rhs.dtype and "void" not in (lhs.dtype, rhs.dtype):
            raise call.error(f"operand data types {lhs.dtype} and {rhs.dtype} must be equal")
        dtype = lhs.dtype if lhs.dtype != "void" else rhs.dtype
        _check_kind(call, dtype, kind)
        out_dtype = "bool" if result_is_bool else dtype
        if lhs.shape_values is not None and rhs.shape_values is not None:
            try:
                dims = broadcast_shapes(lhs.shape_values, rhs.shape_values)
            except BroadcastError as exc:
                raise call.error(str(exc)) from None
            if dims is not None:
                return make_tensor_info(dims, out_dtype)
        ndim = -1 if -1 in (lhs.ndim, rhs.ndim) else max(lhs.ndim, rhs.ndim)
        return TensorStructInfo(None, out_dtype, ndim)

    return infer


def _make_legalize(name: str, element: Callable):
    def legalize(call, context):
        out = call.op.infer(call)
        if out.shape_values is None:
            # An operand of unknown shape, or sizes that may or may not broadcast ((n,) with (m,)).
            if runtime_shape.known_dtypes(call.arg_info):
                return runtime_shape.binary(call, context, element, name)
            return None

        def fcompute(a: te.Tensor, b: te.Tensor) -> te.Tensor:
            dims = broadcast_shapes(a.shape, b.shape)
            return te.compute(
                dims,
                lambda *index: element(a[broadcast_index(a.shape, index)], b[broadcast_index(b.shape, index)]),
                f"T_{name}",
            )

        return context.call_te(fcompute, call.args, call.arg_info, name)

    return legalize


for _name, _element, _is_bool, _kind in BINARY_OPS:
    register(OpDef(
        name=f"relax.{_name}",
        args=("x1", "x2"),
        attrs=(),
        infer=_make_infer(_is_bool, _kind),
        pattern="broadcast",
        legalize=_make_legalize(_name, _element),
        doc=f"elementwise {_name.replace('_', ' ')} with numpy broadcasting",
    ))
