"""Allocations that StaticPlanBlockMemory left alone (returned tensors, tensors that
escape) made explicit, as TVM's LowerAllocTensor does before KillAfterLastUse, so
that their storage can be killed like any other:

    alloc: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
becomes
    storage: R.Object = R.memory.alloc_storage(R.shape([24]), R.prim_value(0), R.str("global"), R.dtype("uint8"))
    alloc: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([2, 3]), R.dtype("float32"), R.prim_value(0))
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir.names import NameSupply
from ..ir.struct_info import ObjectStructInfo
from ..ir.visitor import pre_order
from ..op.infer import literal_of
from ..op.shape import int64
from .binding_rewriter import BindingRewriter
from .memory_sizes import tensor_bytes

ALLOC_TENSOR = "relax.builtin.alloc_tensor"


def storage_call(size, span=None, device: rx.Expr | None = None) -> rx.Call:
    """R.memory.alloc_storage of `size` bytes (an int or a PrimExpr) in the global scope."""
    size = int64(size) if isinstance(size, int) else size
    return rx.Call(rx.Op("relax.memory.alloc_storage"), (
        rx.ShapeExpr((size,)), rx.PrimValue(int64(0)) if device is None else device, rx.StringImm("global"), rx.DataTypeImm("uint8"),
    ), span=span)


def tensor_call(storage: rx.Var, shape: rx.Expr, dtype: rx.Expr, span=None, device: rx.Expr | None = None) -> rx.Call:
    """R.memory.alloc_tensor at offset 0 of `storage`."""
    return rx.Call(rx.Op("relax.memory.alloc_tensor"), (
        storage, rx.PrimValue(int64(0)), shape, dtype, rx.PrimValue(int64(0)) if device is None else device,
    ), span=span)


class Names(NameSupply):
    """Fresh variable names in a function: storage, storage1, ..."""

    def __init__(self, func: rx.Function):
        super().__init__(node.name_hint for node in pre_order(func) if isinstance(node, rx.Var))


def _lowerable(value: rx.Expr) -> bool:
    if not (isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == ALLOC_TENSOR):
        return False
    scope = value.args[3] if len(value.args) > 3 else None
    return isinstance(value.args[0], rx.ShapeExpr) and (scope is None or literal_of(scope) == "global")


class _Lowerer(BindingRewriter):
    def __init__(self, names: Names):
        self.names = names

    def rewrite(self, binding: rx.Binding) -> list[rx.Binding]:
        value = binding.value
        if not (isinstance(binding, rx.VarBinding) and _lowerable(value)):
            return [binding]
        shape, dtype = value.args[0], value.args[1]
        storage = rx.Var(self.names.fresh("storage"), ObjectStructInfo())
        size = tensor_bytes(shape.values, literal_of(dtype))
        device = value.args[2] if len(value.args) > 2 else None
        return [rx.VarBinding(storage, storage_call(size, value.span, device), span=binding.span),
                dataclasses.replace(binding, value=tensor_call(storage, shape, dtype, value.span, device))]


def lower_alloc_tensors(func: rx.Function) -> rx.Function:
    """`func` with every global-scope R.builtin.alloc_tensor of known shape made explicit."""
    if not any(isinstance(n, rx.Call) and isinstance(n.op, rx.Op) and n.op.name == ALLOC_TENSOR for n in pre_order(func)):
        return func
    return dataclasses.replace(func, body=_Lowerer(Names(func)).seq(func.body))
