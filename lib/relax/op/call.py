"""Calls, memory and shape operators: call_tir and its relatives, packed calls, the
explicit memory operators of lowered code (R.memory.*, R.vm.*, R.builtin.*), and
shape_of / shape_to_tensor / tensor_to_shape, null_value, print, assert_op.

Their struct info comes from the call's `sinfo_args` (what `out_sinfo=`/`ty_args=`
gave) or from their shape and dtype arguments; none of them is legalized to TIR:
later passes lower them to VM builtins.
"""

from __future__ import annotations

from ..ir import expr as rx
from ..ir.struct_info import (
    ObjectStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo,
)
from ..script.literal_limits import rank_error
from .infer import literal_of
from .registry import AttrSpec, OpDef, register
from .shape import int64, static_value, tensor_info

VOID = TupleStructInfo(())


def _from_sinfo_args(call) -> StructInfo:
    if not call.call.sinfo_args:
        raise call.error("needs the struct info of its result (out_sinfo=...)")
    return call.call.sinfo_args[0]


def _sinfo_args_or(default: StructInfo):
    def infer(call) -> StructInfo:
        return call.call.sinfo_args[0] if call.call.sinfo_args else default

    return infer


def _call_py_func(call) -> StructInfo:
    """As TVM: the name is a string, the arguments a tuple, and the result the one tensor (or
    the tuple of tensors) that `out_ty` gives, each with its shape spelled out: the VM cannot
    ask a Python function what it will return before calling it."""
    if not isinstance(call.args[0], rx.StringImm):
        raise call.error("the function name must be a string")
    if not isinstance(call.args[1], rx.Tuple) and not isinstance(call.arg_info[1], TupleStructInfo):
        raise call.error("the arguments must be a tuple")
    result = _from_sinfo_args(call)
    for info in result.fields if isinstance(result, TupleStructInfo) else (result,):
        if not isinstance(info, TensorStructInfo) or info.shape_values is None:
            raise call.error("each output must be a tensor with a known shape, such as R.Tensor((n, 4), \"float32\")")
    return result


def _allocated_tensor(shape_position: int, dtype_position: int):
    """Struct info of an allocation from its shape and dtype arguments."""

    def infer(call) -> StructInfo:
        if call.call.sinfo_args:
            return call.call.sinfo_args[0]
        shape = call.args[shape_position] if shape_position < len(call.args) else None
        dtype = literal_of(call.args[dtype_position]) if dtype_position < len(call.args) else "void"
        dtype = dtype if isinstance(dtype, str) else "void"
        if isinstance(shape, rx.ShapeExpr):
            return TensorStructInfo(shape, dtype)
        return TensorStructInfo(None, dtype, -1)

    return infer


def _shape_of(call) -> StructInfo:
    info = tensor_info(call, 0)
    return ShapeStructInfo(info.shape_values, info.ndim)


def _shape_to_tensor(call) -> StructInfo:
    info = call.arg_info[0]
    ndim = info.ndim if isinstance(info, ShapeStructInfo) else -1
    return TensorStructInfo(rx.ShapeExpr((int64(ndim),)) if ndim >= 0 else None, "int64", 1)


def _tensor_to_shape(call) -> StructInfo:
    info = tensor_info(call, 0)
    if info.ndim not in (-1, 1):
        raise call.error(f"operand must be a 1-D tensor, got rank {info.ndim}")
    length = static_value(info.shape_values[0]) if info.shape_values else None
    too_long = rank_error(length, f"a shape value of {length} dimensions") if length is not None else None
    if too_long:
        raise call.error(too_long)
    return ShapeStructInfo(None, length if length is not None else -1)


def _op(name, args, infer, doc, attrs=(), pure=True):
    register(OpDef(f"relax.{name}", args, attrs, infer, "opaque", None, doc, pure))


_op("call_tir", ("func", "args", "*tir_vars"), _from_sinfo_args,
    "call a TIR function in destination-passing style; the outputs are allocated by the caller")
_op("call_tir_inplace", ("func", "args", "*tir_vars"), _from_sinfo_args,
    "call a TIR function that writes some outputs into its inputs", (AttrSpec("inplace_indices", ()),))
_op("call_dps_packed", ("func", "args"), _from_sinfo_args,
    "call a packed function in destination-passing style")
_op("call_py_func", ("func_name", "args"), _call_py_func,
    "call a Python function of the module (or one registered at run time) by its name")
_op("call_pure_packed", ("func", "*args"), _sinfo_args_or(ObjectStructInfo()),
    "call a packed function known to have no side effects")
_op("call_builtin_with_ctx", ("func", "args"), _sinfo_args_or(ObjectStructInfo()),
    "call a VM builtin that takes the VM as its first argument")
_op("builtin.alloc_tensor", ("shape", "dtype", "runtime_device_index", "*storage_scope"),
    _allocated_tensor(0, 1), "allocate a tensor")
_op("memory.alloc_storage", ("size", "virtual_device_index", "storage_scope", "dtype"),
    _sinfo_args_or(ObjectStructInfo()), "allocate storage of a size in bytes")
_op("memory.alloc_tensor", ("storage", "offset", "shape", "dtype", "*runtime_device_index"),
    _allocated_tensor(2, 3), "a tensor placed in a storage at a byte offset")
_op("memory.kill_storage", ("storage",), lambda call: VOID, "end a storage's lifetime", pure=False)
_op("memory.kill_tensor", ("tensor",), lambda call: VOID, "end a tensor's lifetime", pure=False)
_op("vm.alloc_storage", ("size", "runtime_device_index", "dtype", "*storage_scope"),
    _sinfo_args_or(ObjectStructInfo()), "allocate VM storage of a size in bytes")
_op("vm.alloc_tensor", ("storage", "offset", "shape", "dtype", "*runtime_device_index"),
    _allocated_tensor(2, 3), "a tensor placed in VM storage")
_op("vm.kill_object", ("obj",), lambda call: VOID, "drop the VM's reference to an object", pure=False)
_op("vm.call_tir_dyn", ("func", "args"), lambda call: VOID,
    "call a TIR function with symbolic sizes passed at the end of its arguments", pure=False)
_op("null_value", (), lambda call: ObjectStructInfo(), "the null object")
# As in TVM, the format string is an argument: first for print, after the condition for assert_op.
_op("print", ("format", "*values"), lambda call: VOID, "print values through a format string", pure=False)
_op("assert_op", ("condition", "format", "*format_args"), lambda call: VOID,
    "fail at run time unless condition holds, with a formatted message", pure=False)
_op("shape_of", ("x",), _shape_of, "the shape of a tensor as a shape value")
_op("shape_to_tensor", ("shape",), _shape_to_tensor, "a shape value as a 1-D int64 tensor")
_op("tensor_to_shape", ("x",), _tensor_to_shape, "a 1-D int64 tensor as a shape value")
_op("invoke_closure", ("closure", "args"), _sinfo_args_or(ObjectStructInfo()), "call a closure", pure=False)
_op("invoke_pure_closure", ("closure", "args"), _sinfo_args_or(ObjectStructInfo()),
    "call a closure known to have no side effects")
_op("make_closure", ("func", "args"), lambda call: ObjectStructInfo(), "bind arguments to a function")


def _to_vdevice(call) -> StructInfo:
    info = tensor_info(call, 0)
    return TensorStructInfo(info.shape, info.dtype, info.ndim, str(call.attrs["dst_vdevice"]))


register(OpDef("relax.to_vdevice", ("data",), (AttrSpec("dst_vdevice"),), _to_vdevice, "opaque", None,
               "the tensor on another virtual device (only the host device runs today)"))


def _hint_on_device(call) -> StructInfo:
    return tensor_info(call, 0).with_fields(span=None)


register(OpDef("relax.hint_on_device", ("data", "device", "*memory_scope"), (), _hint_on_device, "opaque", None,
               "a hint that the tensor lives on a device (a no-op on the host)"))
register(OpDef("relax.device", (), (AttrSpec("device_type", 1), AttrSpec("index", 0)),
               lambda call: ObjectStructInfo(), "opaque", None, "a device, as R.hint_on_device takes it"))
