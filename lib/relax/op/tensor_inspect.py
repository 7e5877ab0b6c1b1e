"""Operators on the DLTensor container, not on its values: R.inspect.* (dtype code, bits,
lanes, ndim, shape_i, stride_i, byte_offset, elem_offset), R.memory.view and
R.memory.ensure_zero_offset.

They read or rewrite a tensor's metadata, which our kernels never see (they get
compact buffers), so each legalizes to a pure packed call of a VM builtin
(runtime/tensor_inspect.py):

    c: R.Prim("uint8") = R.inspect.tensor_dtype_code(x)
becomes
    c: R.Prim("uint8") = R.call_pure_packed("vm.builtin.tensor_dtype_code", x, sinfo_args=(R.Prim("uint8"),))

and R.memory.view(x, shape, dtype, offset) becomes runtime.TVMTensorCreateView as
in TVM, with an omitted shape or dtype (R.tuple() / a null value) meaning "as x".
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir.struct_info import ObjectStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from .infer import literal_of
from .registry import OpDef, register
from .shape import int64, product_dims, static_value, tensor_info

VOID = rx.Tuple(())


def _pure_call(name: str, args, info: StructInfo) -> rx.Call:
    return rx.Call(rx.Op("relax.call_pure_packed"), (rx.ExternFunc(name),) + tuple(args), sinfo_args=(info,))


# -- R.inspect.* -----------------------------------------------------------------------------
# Result dtypes are the DLTensor fields' own types, as TVM declares them.
INSPECT_FIELDS = {
    "tensor_dtype_code": ("uint8", "the type code of the tensor's dtype (0 int, 1 uint, 2 float, 4 bfloat)"),
    "tensor_dtype_bits": ("uint8", "the bits of one lane of the tensor's dtype"),
    "tensor_dtype_lanes": ("uint16", "the lanes of the tensor's dtype"),
    "tensor_ndim": ("int32", "the rank of the tensor"),
    "tensor_byte_offset": ("uint64", "the byte offset of the tensor's data in its buffer"),
    "tensor_elem_offset": ("uint64", "the offset of the tensor's data in its buffer, in elements"),
    "tensor_shape_i": ("int64", "the extent of one axis of the tensor"),
    "tensor_stride_i": ("int64", "the stride of one axis of the tensor, in elements"),
}


def _inspect_infer(field_name: str):
    dtype = INSPECT_FIELDS[field_name][0]

    def infer(call) -> StructInfo:
        info = tensor_info(call, 0)
        if len(call.args) > 1:
            _check_axis(call, info)
        return PrimStructInfo(dtype)

    return infer


def _check_axis(call, info: TensorStructInfo) -> None:
    axis_info = call.arg_info[1]
    if not isinstance(axis_info, PrimStructInfo) or not dt.is_valid(axis_info.dtype) \
            or not (dt.is_int(axis_info.dtype) or dt.is_uint(axis_info.dtype)):
        raise call.error("the axis must be an integer R.Prim value")
    axis = static_value(axis_info.value) if axis_info.value is not None else None
    if axis is None:
        return
    if axis < 0:
        raise call.error(f"the axis may not be negative, got {axis}")
    if info.ndim >= 0 and axis >= info.ndim:
        raise call.error(f"axis {axis} is out of range for a tensor of rank {info.ndim}")


def _inspect_legalize(field_name: str):
    def legalize(call, context):
        return _pure_call(f"vm.builtin.{field_name}", call.args, call.op.infer(call))

    return legalize


for _field, (_dtype, _doc) in INSPECT_FIELDS.items():
    _args = ("tensor", "axis") if _field in ("tensor_shape_i", "tensor_stride_i") else ("tensor",)
    register(OpDef(f"relax.inspect.{_field}", _args, (), _inspect_infer(_field), "opaque",
                   _inspect_legalize(_field), _doc))


# -- R.memory.view -------------------------------------------------------------------------
def _is_absent(expr, info) -> bool:
    """R.tuple() (TVM's "not given") or a null value."""
    if isinstance(info, TupleStructInfo) and not info.fields:
        return True
    return isinstance(info, ObjectStructInfo) and not isinstance(expr, rx.DataTypeImm)


def _view_parts(call):
    """(shape expr or None, dtype or None, offset expr or None) of a view call."""
    parts = list(call.args[1:]) + [None] * (4 - len(call.args))
    infos = list(call.arg_info[1:]) + [None] * (4 - len(call.args))
    if len(call.args) > 4:
        raise call.error(f"takes at most 4 arguments but {len(call.args)} were given")
    shape, dtype, offset = [None if p is None or _is_absent(p, i) else p for p, i in zip(parts, infos)]
    if shape is not None and not isinstance(call.arg_info[1], ShapeStructInfo):
        raise call.error("the shape must be a shape value (R.shape([...]))")
    if dtype is not None:
        dtype = literal_of(dtype)
        if not isinstance(dtype, str) or not dt.is_valid(dtype):
            raise call.error("the dtype must be a data type (R.dtype(\"...\"))")
    if offset is not None:
        offset_info = call.arg_info[3]
        if not isinstance(offset_info, PrimStructInfo) or not dt.is_valid(offset_info.dtype) \
                or not dt.is_int(offset_info.dtype):
            raise call.error("the relative byte offset must be an integer R.Prim value")
    return shape, dtype, offset


def _nbytes(dims, dtype: str):
    size = static_value(product_dims(dims)) if dims is not None else None
    return None if size is None or dtype == "void" else size * dt.itemsize(dtype)


def _static_offset(call, offset) -> int | None:
    """The view's relative byte offset when known at compile time (0 when not given)."""
    if offset is None:
        return 0
    value = call.arg_info[3].value
    return static_value(value) if value is not None else None


def _view_infer(call) -> StructInfo:
    data = tensor_info(call, 0)
    shape, dtype, offset = _view_parts(call)
    out_dtype = dtype or data.dtype
    if shape is None:
        out = data.with_fields(dtype=out_dtype, span=None)
    else:
        shape_info = call.arg_info[1]
        negative = [d for d in (static_value(v) for v in shape_info.values or ()) if d is not None and d < 0]
        if negative:  # unlike R.reshape's -1, a view's shape is the shape itself
            raise call.error(f"a view's shape may not have a negative dimension, got {negative[0]}")
        out = TensorStructInfo(rx.ShapeExpr(shape_info.values) if shape_info.values is not None else None,
                               out_dtype, shape_info.ndim)
    offset_value = _static_offset(call, offset)
    if offset_value is not None and offset_value < 0:
        raise call.error(f"the relative byte offset may not be negative, got {offset_value}")
    have, want = _nbytes(data.shape_values, data.dtype), _nbytes(out.shape_values, out_dtype)
    if None not in (have, want, offset_value) and offset_value + want > have:
        raise call.error(f"a view of {want} bytes at byte offset {offset_value} reaches past the {have} bytes "
                         "of its input")
    return out


def _view_legalize(call, context):
    shape, dtype, offset = _view_parts(call)
    args = (call.args[0], shape if shape is not None else VOID,
            rx.DataTypeImm(dtype) if dtype is not None else VOID,
            offset if offset is not None else rx.PrimValue(int64(0)))
    return _pure_call("runtime.TVMTensorCreateView", args, call.op.infer(call))


register(OpDef("relax.memory.view", ("data", "*shape_dtype_relative_byte_offset"), (), _view_infer, "opaque",
               _view_legalize, "a tensor over the same bytes with another shape, dtype or byte offset"))


def _ensure_zero_offset_legalize(call, context):
    return _pure_call("vm.builtin.ensure_zero_offset", call.args, call.op.infer(call))


register(OpDef("relax.memory.ensure_zero_offset", ("data",), (),
               lambda call: tensor_info(call, 0).with_fields(span=None), "opaque", _ensure_zero_offset_legalize,
               "the tensor with byte offset 0 (a copy when it has another)"))
