"""ToNonDataflow: dataflow blocks become ordinary binding blocks and dataflow
variables ordinary variables, as the VM-lowering passes after it expect.

    with R.dataflow():                    lv: R.Tensor((4,), dtype="float32") = R.exp(x)
        lv = R.exp(x)               ->    gv: R.Tensor((4,), dtype="float32") = R.add(lv, x)
        gv = R.add(lv, x)
        R.output(gv)
"""

from __future__ import annotations


from ..ir import expr as rx
from ..ir.module import IRModule
from ..ir.visitor import ExprMutator
from ..ir.pass_infra import FunctionPass, register_pass


class _ToNonDataflow(ExprMutator):
    def visit_DataflowBlock(self, block: rx.DataflowBlock) -> rx.BindingBlock:
        visited = self.generic_visit(block)
        return rx.BindingBlock(visited.bindings, span=block.span)

    def visit_var_def(self, var):
        if isinstance(var, rx.DataflowVar):
            return rx.Var(var.name_hint, self.visit(var.struct_info) if var.struct_info else None, span=var.span)
        return super().visit_var_def(var)


@register_pass
class ToNonDataflow(FunctionPass):
    """Turn dataflow blocks and dataflow variables into ordinary ones."""

    name = "to-non-dataflow"

    def transform_function(self, func: rx.Function, mod: IRModule) -> rx.Function:
        return _ToNonDataflow().visit(func)


__all__ = ["ToNonDataflow"]
