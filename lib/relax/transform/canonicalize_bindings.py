"""CanonicalizeBindings: a variable bound to another variable is replaced by it.

    lv1: R.Tensor((4,), dtype="float32") = x
    gv: R.Tensor((4,), dtype="float32") = R.add(lv1, lv1)   ->   gv: ... = R.add(x, x)

Only when nothing is lost: the alias must not carry more precise struct info than
its source, and a dataflow variable may not replace an output of its block (it
would escape the block).
"""

from __future__ import annotations

from ..ir import expr as rx
from ..ir.module import IRModule
from ..ir.structural import structural_equal
from ..ir.visitor import ExprMutator
from ..ir.pass_infra import FunctionPass, register_pass


def _replaceable(alias: rx.Var, source: rx.Var) -> bool:
    if isinstance(source, rx.DataflowVar) and not isinstance(alias, rx.DataflowVar):
        return False
    if alias.struct_info is None or source.struct_info is None:
        return alias.struct_info is None
    return structural_equal(alias.struct_info, source.struct_info, map_free_vars=False)


class _Canonicalizer(ExprMutator):
    def visit_BindingBlock(self, block: rx.BindingBlock) -> rx.BindingBlock:
        kept = []
        for binding in block.bindings:
            binding = self.visit(binding)
            value = binding.value
            if isinstance(binding, rx.VarBinding) and isinstance(value, rx.Var) and _replaceable(binding.var, value):
                # Uses of the alias are memoized to its definition: point them at the source.
                self.remember(binding.var, value)
                continue
            kept.append(binding)
        return block.with_fields(bindings=tuple(kept))

    visit_DataflowBlock = visit_BindingBlock


@register_pass
class CanonicalizeBindings(FunctionPass):
    """Replace variables bound to other variables by their source."""

    name = "canonicalize-bindings"
    opt_level = 1

    def transform_function(self, func: rx.Function, mod: IRModule) -> rx.Function:
        return _Canonicalizer().visit(func)
