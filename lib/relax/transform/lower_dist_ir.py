"""LowerDistIR: a function in DTensor form becomes the plain per-worker function each
worker of a Disco session runs, as TVM's pass of that name does.

    def main(x: R.DTensor((4, 8), "float32", "mesh[0]", "R"),
             w1: R.DTensor((8, 16), "float32", "mesh[0]", "S[1]")):
        h: R.DTensor((4, 16), "float32", "mesh[0]", "S[1]") = R.matmul(x, w1)
becomes
    def main(x: R.Tensor((4, 8), dtype="float32"), w1: R.Tensor((8, 16), dtype="float32")):
        lv: R.Tensor((4, 8), dtype="float32") = R.ccl.broadcast_from_worker0(x)
        lv1: R.Tensor((8, 8), dtype="float32") = R.ccl.scatter_from_worker0(w1, num_workers=2, axis=1)
        h: R.Tensor((4, 8), dtype="float32") = R.matmul(lv, lv1)

The parameters keep their global shapes: worker 0's value is the one that counts, and
each parameter is first broadcast (replicated) or scattered (split) from it, so the
program gets the same result whatever the other workers pass (relaxrun --workers gives
every worker every input). Every other tensor takes the shape of its part on one worker;
a split result is returned as worker's own part. One-axis meshes only.
"""

from __future__ import annotations

from ..diagnostics import error
from ..ir import expr as rx
from ..ir import tir
from ..ir.dtensor import DTensorStructInfo, ShardingError, local_shape, resolve_mesh, shard_axis
from ..ir.module import IRModule
from ..ir.node import FrozenDict
from ..ir.pass_infra import Pass, register_pass
from ..ir.struct_info import TensorStructInfo
from ..ir.visitor import ExprMutator


def _is_distributed(func: rx.Function) -> bool:
    return any(isinstance(p.struct_info, DTensorStructInfo) for p in func.params)


class _Lower(ExprMutator):
    def __init__(self, mod: IRModule, func: rx.Function):
        super().__init__()
        info = next(p.struct_info for p in func.params if isinstance(p.struct_info, DTensorStructInfo))
        try:
            self.mesh = resolve_mesh(mod.global_infos, info.device_mesh)
        except ShardingError as problem:
            raise error(str(problem), func.span) from None
        if len(self.mesh["shape"]) != 1:
            raise error("lower-dist-ir lowers functions on one-axis device meshes only", func.span)
        self.func = func
        self.names = 0

    def local(self, info, span):
        if not isinstance(info, DTensorStructInfo):
            return info
        dims = [getattr(v, "value", None) for v in info.shape_values or ()]
        if info.shape_values is None or None in dims:
            raise error("lower-dist-ir needs static shapes", span)
        try:
            shape = local_shape(tuple(dims), self.mesh, info.placement)
        except ShardingError as problem:
            raise error(str(problem), span) from None
        return TensorStructInfo(rx.ShapeExpr(tuple(tir.IntImm("int64", d) for d in shape)), info.dtype)

    def prologue(self, param: rx.Var, new: rx.Var, var_class) -> rx.VarBinding:
        info = param.struct_info
        axis = shard_axis(info.placement[0])
        if axis is None:
            call = rx.Call(rx.Op("relax.ccl.broadcast_from_worker0"), (new,), span=param.span)
        else:
            attrs = FrozenDict({"num_workers": self.mesh["shape"][0], "axis": axis})
            call = rx.Call(rx.Op("relax.ccl.scatter_from_worker0"), (new,), attrs, span=param.span)
        name = "lv" if self.names == 0 else f"lv{self.names}"
        self.names += 1
        part = var_class(name, self.local(info, param.span), span=param.span)
        self.remember(param, part)
        return rx.VarBinding(part, call, span=param.span)

    def visit_BindingBlock(self, block: rx.BindingBlock) -> rx.BindingBlock:
        bindings = []
        for binding in block.bindings:
            value = self.visit(binding.value)
            var = binding.var.with_fields(struct_info=self.local(binding.var.struct_info, binding.span))
            self.remember(binding.var, var)
            bindings.append(binding.with_fields(var=var, value=value))
        return block.with_fields(bindings=tuple(bindings))

    def run(self) -> rx.Function:
        func = self.func
        blocks = list(func.body.blocks)
        dataflow = bool(blocks) and isinstance(blocks[0], rx.DataflowBlock)
        params, prologue = [], []
        for param in func.params:
            info = param.struct_info
            if not isinstance(info, DTensorStructInfo):
                params.append(param)
                continue
            new = param.with_fields(struct_info=TensorStructInfo(info.shape, info.dtype, info.ndim))
            params.append(new)
            prologue.append(self.prologue(param, new, rx.DataflowVar if dataflow else rx.Var))
        lowered = [self.visit(block) for block in blocks]
        if dataflow:
            lowered[0] = lowered[0].with_fields(bindings=(*prologue, *lowered[0].bindings))
        else:
            lowered.insert(0, rx.BindingBlock(tuple(prologue)))
        body = func.body.with_fields(blocks=tuple(lowered), body=self.visit(func.body.body))
        return func.with_fields(params=tuple(params), body=body,
                                ret_struct_info=self.local(func.ret_struct_info, func.span))


@register_pass
class LowerDistIR(Pass):
    """Turn DTensor functions into per-worker code: parameters broadcast or scattered, local shapes."""

    name = "lower-dist-ir"

    def run(self, mod: IRModule) -> IRModule:
        functions = {name: _Lower(mod, func).run() if isinstance(func, rx.Function) and _is_distributed(func) else func
                     for name, func in mod.functions.items()}
        if all(functions[n] is mod.functions[n] for n in functions):
            return mod
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
