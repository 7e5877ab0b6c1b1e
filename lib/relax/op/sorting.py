"""Sorting and data-dependent shapes: sort, argsort, topk, unique, nonzero,
dynamic_strided_slice.

They are computed by the runtime on the host (runtime/host_ops.py), reached by
name: sort, argsort and topk in destination-passing style (their output shapes are
known), unique and nonzero returning new tensors, whose sizes depend on the data
and are known only at run time (struct info keeps only the rank).
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from ..runtime.host_ops import NO_AXIS
from .reduction import normalize_axes
from .registry import AttrSpec, OpDef, register
from .shape import int64, make_tensor_info, tensor_info


def _prim(value) -> rx.PrimValue:
    if isinstance(value, bool):
        return rx.PrimValue(tir.IntImm("bool", int(value)))
    return rx.PrimValue(tir.IntImm("int64", int(value)))


def _index_dtype_check(value) -> str | None:
    return None if isinstance(value, str) and dt.is_valid(value) and dt.is_int(value) else "expected an integer dtype"


def _dps_call(name: str, args, out_info) -> rx.Call:
    return rx.Call(rx.Op("relax.call_dps_packed"), (rx.ExternFunc(name), rx.Tuple(tuple(args))), sinfo_args=(out_info,))


def _pure_call(name: str, args, out_info) -> rx.Call:
    return rx.Call(rx.Op("relax.call_pure_packed"), (rx.ExternFunc(name),) + tuple(args), sinfo_args=(out_info,))


def _axis(call, info: TensorStructInfo) -> int:
    (axis,) = normalize_axes(call, call.attrs["axis"], info.ndim)
    return axis


# -- sort and argsort -------------------------------------------------------------------
def _sort_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    if info.ndim >= 0:
        _axis(call, info)
    return info.with_fields(span=None)


def _argsort_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    if info.ndim >= 0:
        _axis(call, info)
    return TensorStructInfo(info.shape, call.attrs["dtype"], info.ndim)


def _sort_legalize(name: str):
    def legalize(call, context):
        info = tensor_info(call, 0)
        if info.ndim < 0:
            return None
        args = (call.args[0], _prim(_axis(call, info)), _prim(call.attrs["descending"]))
        return _dps_call(f"relax.run.{name}", args, call.op.infer(call))

    return legalize


register(OpDef("relax.sort", ("x",), (AttrSpec("axis", -1), AttrSpec("descending", False)), _sort_infer, "opaque",
               _sort_legalize("sort"), "the values sorted along an axis (stable)"))
register(OpDef("relax.argsort", ("data",),
               (AttrSpec("axis", -1), AttrSpec("descending", False), AttrSpec("dtype", "int32", _index_dtype_check)),
               _argsort_infer, "opaque", _sort_legalize("argsort"), "the indices that sort along an axis (stable)"))


# -- topk ------------------------------------------------------------------------------------
RET_TYPES = ("both", "values", "indices")


def _topk_infer(call):
    info = tensor_info(call, 0)
    if call.attrs["ret_type"] not in RET_TYPES:
        raise call.error(f"ret_type must be one of {', '.join(RET_TYPES)}")
    k = call.attrs["k"]
    if info.shape_values is None:
        values = TensorStructInfo(None, info.dtype, info.ndim)
    else:
        axis = _axis(call, info)
        size = info.shape_values[axis]
        if isinstance(size, tir.IntImm) and not 0 < k <= size.value:
            raise call.error(f"k={k} is outside 1..{size.value}, the size of axis {axis}")
        dims = tuple(int64(k) if a == axis else d for a, d in enumerate(info.shape_values))
        values = make_tensor_info(dims, info.dtype)
    indices = TensorStructInfo(values.shape, call.attrs["dtype"], values.ndim)
    return {"both": TupleStructInfo((values, indices)), "values": values, "indices": indices}[call.attrs["ret_type"]]


def _topk_legalize(call, context):
    info = tensor_info(call, 0)
    if info.ndim < 0:
        return None
    a = call.attrs
    args = (call.args[0], _prim(a["k"]), _prim(_axis(call, info)), _prim(a["largest"]), rx.StringImm(a["ret_type"]))
    return _dps_call("relax.run.topk", args, _topk_infer(call))


register(OpDef(
    "relax.topk", ("data",),
    (AttrSpec("k", 1), AttrSpec("axis", -1), AttrSpec("ret_type", "both"), AttrSpec("largest", True),
     AttrSpec("dtype", "int32", _index_dtype_check)),
    _topk_infer, "opaque", _topk_legalize, "the k largest (or smallest) values along an axis and their indices",
))


# -- unique and nonzero ---------------------------------------------------------------------------
def _unique_infer(call):
    info = tensor_info(call, 0)
    axis = call.attrs["axis"]
    ndim = 1 if axis is None else info.ndim
    if axis is not None and info.ndim >= 0:
        _axis(call, info)
    fields = [TensorStructInfo(None, info.dtype, ndim)]
    for flag in ("return_index", "return_inverse", "return_counts"):
        if call.attrs[flag]:
            fields.append(TensorStructInfo(None, "int64", 1))
    return fields[0] if len(fields) == 1 else TupleStructInfo(tuple(fields))


def _unique_legalize(call, context):
    a = call.attrs
    axis = NO_AXIS if a["axis"] is None else _axis(call, tensor_info(call, 0))
    args = (call.args[0], _prim(a["sorted"]), _prim(a["return_index"]), _prim(a["return_inverse"]),
            _prim(a["return_counts"]), _prim(axis))
    return _pure_call("relax.run.unique", args, _unique_infer(call))


register(OpDef(
    "relax.unique", ("x",),
    (AttrSpec("sorted", True), AttrSpec("return_index", False), AttrSpec("return_inverse", False),
     AttrSpec("return_counts", False), AttrSpec("axis", None)),
    _unique_infer, "opaque", _unique_legalize, "the distinct values (a size known only at run time)",
))


def _nonzero_infer(call):
    tensor_info(call, 0)  # the operand must be a tensor
    return TensorStructInfo(None, "int64", 2)


register(OpDef(
    "relax.nonzero", ("x",), (), _nonzero_infer, "opaque",
    lambda call, context: _pure_call("relax.run.nonzero", call.args, _nonzero_infer(call)),
    "the indices of the non-zero elements, one row per dimension (a size known only at run time)",
))


def _dynamic_slice_infer(call):
    info = tensor_info(call, 0)
    for position in (1, 2, 3):
        bound = tensor_info(call, position)
        if bound.dtype != "void" and not dt.is_int(bound.dtype):
            raise call.error(f"argument {position + 1} must be an integer tensor, got {bound.dtype}")
    return TensorStructInfo(None, info.dtype, info.ndim)


register(OpDef(
    "relax.dynamic_strided_slice", ("x", "begin", "end", "strides"), (), _dynamic_slice_infer, "opaque",
    lambda call, context: _pure_call("relax.run.dynamic_strided_slice", call.args, _dynamic_slice_infer(call)),
    "a strided slice whose begin, end and strides are tensors known at run time",
))
