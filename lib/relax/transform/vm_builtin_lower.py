"""VMBuiltinLower: allocations and high-level builtins become what the VM runs.

    alloc: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), 0, R.str("global"))
becomes
    storage: R.Object = R.vm.alloc_storage(R.shape([n * 16]), 0, R.dtype("uint8"), R.str("global"))
    alloc: R.Tensor((n, 4), dtype="float32") = R.vm.alloc_tensor(storage, 0, R.shape([n, 4]), R.dtype("float32"))

and likewise R.memory.alloc_storage/alloc_tensor -> R.vm.*, kills -> R.vm.kill_object,
R.call_pure_packed -> a plain packed call, shape_of / tensor_to_shape / null_value /
make_closure / invoke_closure (and invoke_pure_closure) -> the vm.builtin.* functions of those names, and
R.print / R.assert_op / R.shape_to_tensor -> the runtime's relax.run.* host operations,
R.call_py_func -> vm.builtin.call_py_func.
Symbolic sizes stay PrimExprs inside ShapeExprs; VMShapeLower computes them.
"""

from __future__ import annotations

import dataclasses

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.module import IRModule
from ..ir.struct_info import ObjectStructInfo, ShapeStructInfo, TupleStructInfo
from ..op.shape import int64, static_value
from .binding_rewriter import BindingRewriter
from ..ir.pass_infra import FunctionPass, register_pass

VOID = TupleStructInfo(())


def _nbytes(shape: rx.ShapeExpr, dtype: str) -> tir.PrimExpr:
    size: tir.PrimExpr = int64(dt.itemsize(dtype))
    for dim in shape.values:
        if static_value(size) is not None and static_value(dim) is not None:
            size = int64(size.value * dim.value)
        else:
            size = size * dim
    return size


def _packed(name: str, args, info, span) -> rx.Call:
    return rx.Call(rx.ExternFunc(name), tuple(args), sinfo_args=(info,), span=span)


def _with_ctx(name: str, args, info, span) -> rx.Call:
    return rx.Call(rx.Op("relax.call_builtin_with_ctx"), (rx.ExternFunc(name), rx.Tuple(tuple(args))),
                   sinfo_args=(info,), span=span)


def _op(name: str, args, span) -> rx.Call:
    return rx.Call(rx.Op(f"relax.{name}"), tuple(args), span=span)


def _call_py_func(call: rx.Call) -> rx.Call:
    """R.call_py_func("f", (x,)) -> vm.builtin.call_py_func(("f", (x,))): as TVM lowers it, one
    tuple argument; the VM binds the name when it starts (vm/machine/py_functions.py)."""
    return _packed("vm.builtin.call_py_func", (rx.Tuple(tuple(call.args)),), call.sinfo_args[0], call.span)


class _Lowerer(BindingRewriter):
    def rewrite(self, binding: rx.Binding) -> list[rx.Binding]:
        value = binding.value
        if isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == "relax.call_py_func":
            return [dataclasses.replace(binding, value=_call_py_func(value))]
        if isinstance(value, rx.Call) and isinstance(value.op, rx.Op):
            lowered = self.call(binding, value)
            if lowered is not None:
                return lowered
        return [binding]

    def call(self, binding: rx.Binding, call: rx.Call) -> list[rx.Binding] | None:
        name, args, span = call.op.name, call.args, call.span
        var = binding.var
        if name == "relax.builtin.alloc_tensor":
            shape, dtype_imm, device = args[0], args[1], args[2]
            if not isinstance(shape, rx.ShapeExpr):
                return None
            storage = rx.Var("storage", ObjectStructInfo())
            size = rx.ShapeExpr((_nbytes(shape, dtype_imm.value),))
            alloc_storage = _op("vm.alloc_storage", (size, device, rx.DataTypeImm("uint8"), rx.StringImm("global")), span)
            alloc_tensor = _op("vm.alloc_tensor", (storage, rx.PrimValue(int64(0)), shape, dtype_imm), span)
            return [rx.VarBinding(storage, alloc_storage, span=span), dataclasses.replace(binding, value=alloc_tensor)]
        if name == "relax.memory.alloc_storage":
            size, device, scope, dtype_imm = args
            return [dataclasses.replace(binding, value=_op("vm.alloc_storage", (size, device, dtype_imm, scope), span))]
        if name == "relax.memory.alloc_tensor":
            return [dataclasses.replace(binding, value=_op("vm.alloc_tensor", args[:4], span))]
        if name in ("relax.memory.kill_storage", "relax.memory.kill_tensor"):
            return [dataclasses.replace(binding, value=_op("vm.kill_object", args[:1], span))]
        if name == "relax.call_pure_packed":
            info = call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()
            return [dataclasses.replace(binding, value=rx.Call(args[0], args[1:], sinfo_args=(info,), span=span))]
        if name == "relax.shape_of":
            info = var.struct_info or ShapeStructInfo(ndim=-1)
            return [dataclasses.replace(binding, value=_packed("vm.builtin.shape_of", args, info, span))]
        if name == "relax.tensor_to_shape":
            info = var.struct_info or ShapeStructInfo(ndim=-1)
            return [dataclasses.replace(binding, value=_packed("vm.builtin.tensor_to_shape", args, info, span))]
        if name in ("relax.print", "relax.assert_op"):
            runtime_name = "relax.run." + name.removeprefix("relax.")
            return [dataclasses.replace(binding, value=_packed(runtime_name, args, VOID, span))]
        if name == "relax.shape_to_tensor":
            info = var.struct_info or ObjectStructInfo()
            return [dataclasses.replace(binding, value=_packed("relax.run.shape_to_tensor", args, info, span))]
        if name == "relax.null_value":
            return [dataclasses.replace(binding, value=_packed("vm.builtin.null_value", (), ObjectStructInfo(), span))]
        if name == "relax.make_closure":
            fields = args[1].fields if isinstance(args[1], rx.Tuple) else (args[1],)
            value = _packed("vm.builtin.make_closure", (args[0],) + tuple(fields), ObjectStructInfo(), span)
            return [dataclasses.replace(binding, value=value)]
        if name in ("relax.invoke_closure", "relax.invoke_pure_closure"):
            fields = args[1].fields if isinstance(args[1], rx.Tuple) else (args[1],)
            info = call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()
            return [dataclasses.replace(binding, value=_with_ctx("vm.builtin.invoke_closure", (args[0],) + tuple(fields),
                                                                 info, span))]
        return None


@register_pass
class VMBuiltinLower(FunctionPass):
    """Lower allocations and high-level builtins to the VM's alloc_storage/alloc_tensor and vm.builtin calls."""

    name = "vm-builtin-lower"

    def transform_function(self, func: rx.Function, mod: IRModule) -> rx.Function:
        return _Lowerer().function(func)
