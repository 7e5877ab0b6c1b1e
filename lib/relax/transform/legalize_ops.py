"""LegalizeOps: every operator call with a legalization becomes a call_tir of a new
PrimFunc that computes it (built by the operator's legalization in relax/op).

    lv: R.Tensor((4,), dtype="float32") = R.add(x, y)
becomes
    lv: R.Tensor((4,), dtype="float32") = R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((4,), dtype="float32"))
plus the PrimFunc `add` in the module.

A legalization may need bindings before the call (an elementwise operator on a
tensor of unknown rank flattens it and binds its length: op/runtime_shape.py); it
returns them with the call as a SeqExpr, and they are spliced in before the binding.
Calls whose operand shapes are not known well enough, and operators without a
legalization (call_tir itself, packed calls, memory operators), stay as they are.
Expects normalized input (run after Normalize).
"""

from __future__ import annotations

import dataclasses

from ..diagnostics import error
from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from ..ir.module import IRModule
from ..ir.visitor import ExprMutator
from ..op import registry
from ..op.infer import bind_call, struct_info_of
from ..ir.analysis import free_vars
from ..op.legalize_context import LegalizeContext
from ..op.shape import static_value
from ..ir.pass_infra import Pass, register_pass


class _Legalizer(ExprMutator):
    def __init__(self, mod: IRModule, context: LegalizeContext):
        super().__init__()
        self.mod = mod
        self.context = context
        self.rebound: set[int] = set()  # ids of the variables _rebind made

    def visit_VarBinding(self, binding: rx.VarBinding) -> rx.VarBinding:
        binding = self._refresh(super().visit_VarBinding(binding))
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
        if isinstance(legalized, rx.Var):  # an identity at inference (R.grad.no_grad): variables keep their identity
            return dataclasses.replace(binding, value=legalized)
        if isinstance(legalized, rx.SeqExpr):
            # Bindings the legalization needs first (runtime shapes: op/runtime_shape.py),
            # spliced in before this one by visit_BindingBlock.
            prelude = [b for block in legalized.blocks for b in block.bindings]
            result = dataclasses.replace(binding, value=legalized.body)
            info = struct_info_of(legalized.body, self.mod)
            if _less_specific(info, binding.var.struct_info):  # a data-dependent size (all_class_non_max_suppression)
                result = self._rebind(result, info)
            return [*prelude, result]
        return dataclasses.replace(binding, value=dataclasses.replace(legalized, span=value.span))

    def visit_Function(self, func: rx.Function) -> rx.Function:
        func = self.generic_visit(func)
        if self.rebound and isinstance(func.body, rx.SeqExpr):
            info = struct_info_of(func.body.body, self.mod)
            if _less_specific(info, func.ret_struct_info):  # the result a rebound variable gives
                func = dataclasses.replace(func, ret_struct_info=_erased(info, func.ret_struct_info))
        return func

    def _rebind(self, binding: rx.VarBinding, info) -> rx.VarBinding:
        """The binding to a new variable of struct info `info`, which later uses then read:
        as TVM's LegalizeOps re-normalizes a binding whose value became less specific."""
        var = dataclasses.replace(binding.var, struct_info=info)
        self.remember(binding.var, var)
        self.rebound.add(id(var))
        return dataclasses.replace(binding, var=var)

    def _refresh(self, binding: rx.VarBinding) -> rx.VarBinding:
        """A binding reading a rebound variable gets its struct info inferred again."""
        if not self.rebound or not any(id(v) in self.rebound for v in free_vars(binding.value)):
            return binding
        return self._rebind(binding, struct_info_of(binding.value, self.mod))

    def visit_BindingBlock(self, block: rx.BindingBlock) -> rx.BindingBlock:
        """The block with each binding legalized, a binding that became several spliced in place."""
        outer, self.context.in_dataflow = self.context.in_dataflow, isinstance(block, rx.DataflowBlock)
        bindings: list[rx.Binding] = []
        for binding in block.bindings:
            new = self.visit(binding)
            bindings.extend(new if isinstance(new, list) else (new,))
        self.context.in_dataflow = outer
        if len(bindings) == len(block.bindings) and all(new is old for new, old in zip(bindings, block.bindings)):
            return block
        return dataclasses.replace(block, bindings=tuple(bindings))


def _less_specific(new, old) -> bool:
    """Whether some tensor of `new` lacks a static size that `old` has (a size known only at run time)."""
    if isinstance(new, TupleStructInfo) and isinstance(old, TupleStructInfo) and len(new.fields) == len(old.fields):
        return any(_less_specific(n, o) for n, o in zip(new.fields, old.fields))
    if not (isinstance(new, TensorStructInfo) and isinstance(old, TensorStructInfo) and old.shape_values is not None):
        return False
    if new.shape_values is None or len(new.shape_values) != len(old.shape_values):
        return True
    return any(static_value(o) is not None and static_value(n) != static_value(o)
               for n, o in zip(new.shape_values, old.shape_values))


def _erased(new, old):
    """`old` with each tensor `new` sizes at run time only by its rank: the signature cannot
    name the symbolic sizes the body defines."""
    if isinstance(new, TupleStructInfo) and isinstance(old, TupleStructInfo) and len(new.fields) == len(old.fields):
        return TupleStructInfo(tuple(_erased(n, o) for n, o in zip(new.fields, old.fields)))
    return TensorStructInfo(None, new.dtype, new.ndim) if _less_specific(new, old) else old


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


def _variable_names(func: rx.Function) -> set[str]:
    """The names of the Relax and TIR variables in `func`: new ones must differ from them,
    since the printer writes both kinds in the function's one Python scope."""
    from ..ir.visitor import pre_order

    return {node.name_hint if isinstance(node, rx.Var) else node.name
            for node in pre_order(func) if isinstance(node, (rx.Var, tir.Var))}


@register_pass
class LegalizeOps(Pass):
    """Replace operator calls by call_tir of PrimFuncs that compute them."""

    name = "legalize-ops"
    opt_level = 0

    def run(self, mod: IRModule) -> IRModule:
        context = LegalizeContext(set(mod.functions))
        functions = {}
        for name, func in mod.functions.items():
            if isinstance(func, rx.Function):
                context.local_names = _variable_names(func)
                func = _Legalizer(mod, context).visit(func)
            functions[name] = func
        unchanged = all(functions[name] is func for name, func in mod.functions.items())
        if unchanged and not context.new_functions:
            return mod
        functions.update(context.new_functions)
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
