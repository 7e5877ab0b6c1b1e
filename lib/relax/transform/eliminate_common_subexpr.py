"""EliminateCommonSubexpr: a pure value computed twice in a block is computed once.

    lv0: R.Tensor((4,), dtype="float32") = R.exp(x)
    lv1: R.Tensor((4,), dtype="float32") = R.exp(x)     ->   lv0: ... = R.exp(x)
    gv = R.add(lv0, lv1)                                      gv = R.add(lv0, lv0)

Values are compared structurally with variables by identity; only pure values
(see purity.py) are merged, never packed calls or allocations.
"""

from __future__ import annotations

from ..ir import expr as rx
from ..ir.module import IRModule
from ..ir.structural import structural_equal, structural_hash
from ..ir.visitor import ExprMutator
from ..ir.pass_infra import FunctionPass, register_pass
from .purity import is_pure

# Allocations are pure by the registry but each must stay a distinct tensor.
NEVER_MERGED = ("relax.builtin.alloc_tensor", "relax.memory.alloc_storage", "relax.memory.alloc_tensor",
                "relax.vm.alloc_storage", "relax.vm.alloc_tensor")


class _Eliminator(ExprMutator):
    def __init__(self, mod: IRModule):
        super().__init__()
        self.mod = mod

    def visit_BindingBlock(self, block: rx.BindingBlock) -> rx.BindingBlock:
        seen: dict[int, list[tuple[rx.Expr, rx.Var]]] = {}
        kept = []
        for binding in block.bindings:
            binding = self.visit(binding)
            value = binding.value
            if isinstance(binding, rx.VarBinding) and self._mergeable(value):
                key = structural_hash(value, map_free_vars=False)
                for earlier, var in seen.get(key, []):
                    if structural_equal(earlier, value, map_free_vars=False) and self._same_kind(var, binding.var):
                        self.remember(binding.var, var)
                        break
                else:
                    seen.setdefault(key, []).append((value, binding.var))
                    kept.append(binding)
                    continue
                continue
            kept.append(binding)
        return block.with_fields(bindings=tuple(kept))

    visit_DataflowBlock = visit_BindingBlock

    def _mergeable(self, value: rx.Expr) -> bool:
        if not isinstance(value, (rx.Call, rx.Tuple, rx.TupleGetItem)):
            return False
        if isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and value.op.name in NEVER_MERGED:
            return False
        return is_pure(value, self.mod)

    @staticmethod
    def _same_kind(earlier: rx.Var, later: rx.Var) -> bool:
        # A dataflow variable cannot stand for a block output.
        return not (isinstance(earlier, rx.DataflowVar) and not isinstance(later, rx.DataflowVar))


@register_pass
class EliminateCommonSubexpr(FunctionPass):
    """Compute each pure value once per block."""

    name = "eliminate-common-subexpr"
    opt_level = 1

    def transform_function(self, func: rx.Function, mod: IRModule) -> rx.Function:
        return _Eliminator(mod).visit(func)
