"""LowerGlobalViewToLocalView: the sharded operators of a propagated function compute
each device's part; where that part is a partial result (a matmul contracting over a
split axis, a sum / max / min / mean reducing one), an allreduce completes it (sum; max;
min; avg for a mean, the average of equal parts' means), as TVM's pass of that name does.

    p: R.DTensor((4, 8), "float32", "mesh[0]", "R") = R.matmul(hr, w2)      (hr S[1], w2 S[0])
becomes
    lv: R.DTensor((4, 8), "float32", "mesh[0]", "R") = R.matmul(hr, w2)
    p: R.DTensor((4, 8), "float32", "mesh[0]", "R") = R.ccl.allreduce(lv, op_type="sum", in_group=False)

The other operators need nothing: elementwise and broadcast operators on matching splits,
a matmul split along its rows or columns, a reduction keeping its split axis, compute
their own part from their own parts. Partial results are lowered on one-axis meshes
(the allreduce spans every worker).
"""

from __future__ import annotations

from ..diagnostics import error
from ..ir import expr as rx
from ..ir.dtensor import DTensorStructInfo, shard_axis
from ..ir.module import IRModule
from ..ir.node import FrozenDict
from ..ir.pass_infra import Pass, register_pass
from .sharding_rules import matmul_contracts, partial_reduction


def _partial_kind(binding: rx.VarBinding) -> str | None:
    """The allreduce kind completing this binding's partial result, or None."""
    value = binding.value
    if not (isinstance(value, rx.Call) and isinstance(value.op, rx.Op)):
        return None
    name = value.op.name
    count = 2 if name == "relax.matmul" else 1
    infos = [getattr(a, "struct_info", None) for a in value.args[:count]]
    if len(infos) != count or not all(isinstance(i, DTensorStructInfo) for i in infos):
        return None
    found = None
    for axis in range(len(infos[0].placement)):
        entries = [shard_axis(i.placement[axis]) for i in infos]
        if name == "relax.matmul":
            kind = "sum" if matmul_contracts(entries, infos) else None
        else:
            kind = partial_reduction(name, value.attrs, entries, infos)
        if kind is not None:
            if len(infos[0].placement) != 1:
                raise error("a partial result over one axis of a multi-axis device mesh is not lowered", value.span)
            found = kind
    return found


def _lower_block(block: rx.BindingBlock) -> rx.BindingBlock:
    bindings = []
    for binding in block.bindings:
        kind = _partial_kind(binding) if isinstance(binding, rx.VarBinding) else None
        if kind is None:
            bindings.append(binding)
            continue
        var_class = rx.DataflowVar if isinstance(binding.var, rx.DataflowVar) else rx.Var
        partial = var_class("lv", binding.var.struct_info, span=binding.span)
        bindings.append(rx.VarBinding(partial, binding.value, span=binding.span))
        reduce = rx.Call(rx.Op("relax.ccl.allreduce"), (partial,),
                         FrozenDict({"op_type": kind, "in_group": False}), span=binding.span)
        bindings.append(binding.with_fields(value=reduce))
    if len(bindings) == len(block.bindings):
        return block
    return block.with_fields(bindings=tuple(bindings))


@register_pass
class LowerGlobalViewToLocalView(Pass):
    """Complete each partial result (a matmul contracting, or a reduction reducing, a split axis) with an allreduce."""

    name = "lower-global-view-to-local-view"

    def run(self, mod: IRModule) -> IRModule:
        functions = dict(mod.functions)
        for name, func in mod.functions.items():
            if not isinstance(func, rx.Function) or not isinstance(func.body, rx.SeqExpr):
                continue
            blocks = tuple(_lower_block(block) for block in func.body.blocks)
            if any(a is not b for a, b in zip(blocks, func.body.blocks)):
                functions[name] = func.with_fields(body=func.body.with_fields(blocks=blocks))
        if all(functions[n] is mod.functions[n] for n in functions):
            return mod
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
