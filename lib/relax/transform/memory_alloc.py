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
from ..ir.struct_info import ObjectStructInfo
from ..ir.visitor import pre_order
from ..op.infer import literal_of
from ..op.shape import int64
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


class Names:
    """Fresh variable names in a function: storage, storage1, ..."""

    def __init__(self, func: rx.Function):
        self.taken = {node.name_hint for node in pre_order(func) if isinstance(node, rx.Var)}

    def fresh(self, hint: str) -> str:
        name, counter = hint, 0
        while name in self.taken:
            counter += 1
            name = f"{hint}{counter}"
        self.taken.add(name)
        return name


def _lowerable(value: rx.Expr) -> bool:
    if not (isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name == ALLOC_TENSOR):
        return False
    scope = value.args[3] if len(value.args) > 3 else None
    return isinstance(value.args[0], rx.ShapeExpr) and (scope is None or literal_of(scope) == "global")


class _Lowerer:
    def __init__(self, names: Names):
        self.names = names

    def seq(self, seq: rx.Expr) -> rx.Expr:
        if not isinstance(seq, rx.SeqExpr):
            return seq
        return dataclasses.replace(seq, blocks=tuple(self.block(b) for b in seq.blocks))

    def block(self, block: rx.BindingBlock) -> rx.BindingBlock:
        out: list[rx.Binding] = []
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, rx.If):
                value = dataclasses.replace(value, true_branch=self.seq(value.true_branch),
                                            false_branch=self.seq(value.false_branch))
                out.append(dataclasses.replace(binding, value=value))
            elif isinstance(binding, rx.VarBinding) and _lowerable(value):
                shape, dtype = value.args[0], value.args[1]
                storage = rx.Var(self.names.fresh("storage"), ObjectStructInfo())
                size = tensor_bytes(shape.values, literal_of(dtype))
                device = value.args[2] if len(value.args) > 2 else None
                out.append(rx.VarBinding(storage, storage_call(size, value.span, device), span=binding.span))
                out.append(dataclasses.replace(binding, value=tensor_call(storage, shape, dtype, value.span, device)))
            else:
                out.append(binding)
        return dataclasses.replace(block, bindings=tuple(out))


def lower_alloc_tensors(func: rx.Function) -> rx.Function:
    """`func` with every global-scope R.builtin.alloc_tensor of known shape made explicit."""
    if not any(isinstance(n, rx.Call) and isinstance(n.op, rx.Op) and n.op.name == ALLOC_TENSOR for n in pre_order(func)):
        return func
    return dataclasses.replace(func, body=_Lowerer(Names(func)).seq(func.body))
