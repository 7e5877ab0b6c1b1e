"""LegalizeOps: every operator call with a legalization becomes a call_tir of a new
PrimFunc that computes it (built by the operator's legalization in relax/op).

    lv: R.Tensor((4,), dtype="float32") = R.add(x, y)
becomes
    lv: R.Tensor((4,), dtype="float32") = R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((4,), dtype="float32"))
plus the PrimFunc `add` in the module.

Calls whose operand shapes are not known well enough, and operators without a
legalization (call_tir itself, packed calls, memory operators), stay as they are.
Expects normalized input (run after Normalize).
"""

from __future__ import annotations

import dataclasses

from ..diagnostics import error
from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from ..ir.module import IRModule
from ..ir.visitor import ExprMutator
from ..op import registry
from ..op.infer import bind_call
from ..op.legalize_context import LegalizeContext
from ..ir.pass_infra import Pass, register_pass


class _Legalizer(ExprMutator):
    def __init__(self, mod: IRModule, context: LegalizeContext):
        super().__init__()
        self.mod = mod
        self.context = context

    def visit_VarBinding(self, binding: rx.VarBinding) -> rx.VarBinding:
        binding = super().visit_VarBinding(binding)
        value = binding.value
        if not (isinstance(value, rx.Call) and isinstance(value.op, rx.Op)):
            return binding
        op = registry.get(value.op.name)
        if op is None or op.legalize is None:
            return binding
        _refuse_unsupported_result(binding)
        legalized = op.legalize(bind_call(value, self.mod), self.context)
        if legalized is None:
            return binding
        return dataclasses.replace(binding, value=dataclasses.replace(legalized, span=value.span))


def _refuse_unsupported_result(binding: rx.VarBinding) -> None:
    """An attribute such as dtype="float32x4" or "handle" asks for a tensor the runtime
    cannot hold: its tensors are numpy arrays, of scalars of the types numpy has."""
    info = binding.var.struct_info
    for leaf in info.fields if isinstance(info, TupleStructInfo) else (info,):
        if not isinstance(leaf, TensorStructInfo) or leaf.dtype == "void" or leaf.dtype in dt.SUPPORTED_NUMPY:
            continue
        name = "R." + binding.value.op.name.removeprefix("relax.")
        if dt.is_valid(leaf.dtype) and dt.lanes(leaf.dtype) > 1:
            raise error(f"{name} would give a tensor of the vector data type '{leaf.dtype}', which relax"
                        f" tensors cannot have; use \"{dt.element(leaf.dtype)}\"", binding.value.span)
        raise error(f"{name} would give a tensor of the data type '{leaf.dtype}', which relax tensors cannot"
                    f" have; the supported ones are {', '.join(dt.SUPPORTED_NUMPY)}", binding.value.span)


@register_pass
class LegalizeOps(Pass):
    """Replace operator calls by call_tir of PrimFuncs that compute them."""

    name = "legalize-ops"
    opt_level = 0

    def run(self, mod: IRModule) -> IRModule:
        context = LegalizeContext(set(mod.functions))
        functions = {}
        for name, func in mod.functions.items():
            functions[name] = _Legalizer(mod, context).visit(func) if isinstance(func, rx.Function) else func
        unchanged = all(functions[name] is func for name, func in mod.functions.items())
        if unchanged and not context.new_functions:
            return mod
        functions.update(context.new_functions)
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
