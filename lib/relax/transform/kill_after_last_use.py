"""KillAfterLastUse: drop each intermediate value right after its last use, so the VM
frees (or hands back to its pool) memory as early as possible.

    storage: R.Object = R.memory.alloc_storage(R.shape([64]), R.prim_value(0), R.str("global"), R.dtype("float32"))
    alloc: R.Tensor((16,), dtype="float32") = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([16]), R.dtype("float32"), R.prim_value(0))
    cls.exp(x, alloc)
    lv: R.Tensor((16,), dtype="float32") = alloc
    alloc1: R.Tensor((16,), dtype="float32") = R.builtin.alloc_tensor(R.shape([16]), ...)
    cls.exp(lv, alloc1)
    return alloc1
becomes
    storage: R.Object = R.memory.alloc_storage(R.shape([64]), ...)
    alloc: ... = R.memory.alloc_tensor(storage, ...)
    R.memory.kill_storage(storage)
    cls.exp(x, alloc)
    alloc1: ... = R.builtin.alloc_tensor(R.shape([16]), ...)
    cls.exp(alloc, alloc1)
    R.memory.kill_tensor(alloc)
    return alloc1

As TVM does: variables bound to other variables are first replaced by their source
(CanonicalizeBindings), the allocations StaticPlanBlockMemory left alone get an
explicit storage (memory_alloc.py, TVM's LowerAllocTensor), then after the binding that uses a variable last comes
R.memory.kill_storage for a storage, R.memory.kill_tensor for a tensor and
R.vm.kill_object for any other object (a tuple, a closure). Parameters, values that
are returned (or are the result of an `if` branch), shapes and scalars are never
killed. A last use inside a branch kills on that path only. Kills go in plain
binding blocks, never inside a dataflow block.
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir.module import IRModule
from ..ir.struct_info import (
    FuncStructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo,
)
from ..ir.visitor import pre_order
from .canonicalize_bindings import CanonicalizeBindings
from .memory_alloc import lower_alloc_tensors
from ..ir.pass_infra import FunctionPass, register_pass

VOID = TupleStructInfo(())
STORAGE_ALLOCATORS = ("relax.memory.alloc_storage", "relax.vm.alloc_storage")
KILLS = ("relax.memory.kill_storage", "relax.memory.kill_tensor", "relax.vm.kill_object")


def _is_call_to(value: rx.Expr, names) -> bool:
    return isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name in names


class LastUses:
    """For each variable bound in the function, the binding that reads it last (in
    program order, branches in order) or None when its last use is as a result."""

    def __init__(self, func: rx.Function):
        self.last: dict[int, rx.Binding | None] = {}
        self.defined: dict[int, rx.Binding] = {}
        self.killed: set[int] = set()
        # A match_cast of a variable names the same value (the VM gives both one
        # register): a use of either is a use of the source, and only the source is killed.
        self.source_of: dict[int, int] = {}
        self.seq(func.body)

    def seq(self, seq: rx.Expr) -> None:
        if not isinstance(seq, rx.SeqExpr):
            self.use(seq, None)
            return
        for block in seq.blocks:
            for binding in block.bindings:
                self.binding(binding)
        self.use(seq.body, None)

    def binding(self, binding: rx.Binding) -> None:
        value = binding.value
        if _is_call_to(value, KILLS) and isinstance(value.args[0], rx.Var):
            self.killed.add(id(value.args[0]))
        if isinstance(value, rx.If):
            self.use(value.cond, binding)
            self.seq(value.true_branch)
            self.seq(value.false_branch)
        else:
            self.use(value, binding)
        self.defined[id(binding.var)] = binding
        if isinstance(binding, rx.MatchCast) and isinstance(value, rx.Var):
            self.source_of[id(binding.var)] = self.source_of.get(id(value), id(value))

    def use(self, expr: rx.Expr, binding: rx.Binding | None) -> None:
        for node in pre_order(expr):
            if isinstance(node, rx.Var):
                self.last[id(node)] = binding
                if id(node) in self.source_of:
                    self.last[self.source_of[id(node)]] = binding


def _kill(var: rx.Var, definition: rx.Binding) -> rx.Binding | None:
    info = var.struct_info
    if _is_call_to(definition.value, STORAGE_ALLOCATORS):
        op = "relax.memory.kill_storage"
    elif isinstance(info, TensorStructInfo):
        op = "relax.memory.kill_tensor"
    elif isinstance(info, (PrimStructInfo, ShapeStructInfo)) or info is None:
        return None
    elif isinstance(info, TupleStructInfo) and not info.fields:
        return None
    elif isinstance(info, (TupleStructInfo, ObjectStructInfo, FuncStructInfo)):
        op = "relax.vm.kill_object"
    else:
        return None
    return rx.VarBinding(rx.Var("_", VOID), rx.Call(rx.Op(op), (var,)), span=definition.span)


class _Inserter:
    def __init__(self, uses: LastUses):
        self.kills_after: dict[int, list[rx.Binding]] = {}
        for var_id, binding in uses.last.items():
            definition = uses.defined.get(var_id)
            if binding is None or definition is None or var_id in uses.killed or var_id in uses.source_of:
                continue
            kill = _kill(definition.var, definition)
            if kill is not None:
                self.kills_after.setdefault(id(binding), []).append(kill)

    def seq(self, seq: rx.Expr) -> rx.Expr:
        if not isinstance(seq, rx.SeqExpr):
            return seq
        return dataclasses.replace(seq, blocks=tuple(self.block(b) for b in seq.blocks))

    def block(self, block: rx.BindingBlock) -> rx.BindingBlock:
        dataflow = isinstance(block, rx.DataflowBlock)
        out: list[rx.Binding] = []
        for binding in block.bindings:
            kills = self.kills_after.get(id(binding), ())
            value = binding.value
            if isinstance(value, rx.If):
                binding = dataclasses.replace(binding, value=dataclasses.replace(
                    value, true_branch=self.seq(value.true_branch), false_branch=self.seq(value.false_branch)))
            out.append(binding)
            if not dataflow:
                out.extend(kills)
        return dataclasses.replace(block, bindings=tuple(out))


@register_pass
class KillAfterLastUse(FunctionPass):
    """Insert kill_tensor / kill_storage / kill_object after each intermediate's last use."""

    name = "kill-after-last-use"
    opt_level = 2

    def transform_function(self, func: rx.Function, mod: IRModule) -> rx.Function:
        func = lower_alloc_tensors(CanonicalizeBindings().transform_function(func, mod))
        uses = LastUses(func)
        inserter = _Inserter(uses)
        if not inserter.kills_after:
            return func
        return dataclasses.replace(func, body=inserter.seq(func.body))
