"""CallTIRRewrite: call_tir and call_dps_packed become explicit allocations and a
call in destination-passing style.

    lv: R.Tensor((2, 3), dtype="float32") = R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((2, 3), dtype="float32"))
becomes
    alloc: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
    _: R.Tuple = cls.add(x, y, alloc)
    lv: R.Tensor((2, 3), dtype="float32") = alloc

A tuple result allocates every field and binds the variable to the tuple of them;
call_tir_inplace allocates only the outputs that do not reuse an input. Symbolic
sizes passed as `tir_vars` follow the outputs, as the kernel expects them.
Expects normalized input without dataflow blocks (after ToNonDataflow).
"""

from __future__ import annotations

import dataclasses

from ..diagnostics import error
from ..ir import expr as rx
from ..ir import tir
from ..ir.module import IRModule
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from ..op.infer import literal_of
from .binding_rewriter import BindingRewriter
from ..ir.pass_infra import FunctionPass, register_pass

DPS_OPS = ("relax.call_tir", "relax.call_dps_packed", "relax.call_tir_inplace")
VOID = TupleStructInfo(())


def _allocation(info: TensorStructInfo, span) -> rx.Call:
    shape = info.shape
    if shape is None:
        raise error("cannot allocate an output whose shape is unknown", span)
    return rx.Call(
        rx.Op("relax.builtin.alloc_tensor"),
        (shape, rx.DataTypeImm(info.dtype), rx.PrimValue(tir.IntImm("int64", 0)), rx.StringImm("global")),
        sinfo_args=(info,), span=span,
    )


class _Rewriter(BindingRewriter):
    def __init__(self):
        self.counter = 0

    def rewrite(self, binding: rx.Binding) -> list[rx.Binding]:
        value = binding.value
        if isinstance(binding, rx.VarBinding) and isinstance(value, rx.Call) and isinstance(value.op, rx.Op) \
                and value.op.name in DPS_OPS:
            return self.destination_passing(binding, value)
        return [binding]

    def fresh(self, name: str, info) -> rx.Var:
        self.counter += 1
        return rx.Var(name if self.counter == 1 else f"{name}{self.counter - 1}", info)

    def destination_passing(self, binding: rx.Binding, call: rx.Call) -> list[rx.Binding]:
        out_info = call.sinfo_args[0]
        fields = out_info.fields if isinstance(out_info, TupleStructInfo) else (out_info,)
        inputs = call.args[1].fields if isinstance(call.args[1], rx.Tuple) else (call.args[1],)
        inplace = tuple(literal_of(call.attrs.get("inplace_indices", ())) or ())
        inplace = (inplace,) if isinstance(inplace, int) else inplace
        new: list[rx.Binding] = []
        outputs: list[rx.Expr] = []
        for position, info in enumerate(fields):
            if position < len(inplace) and inplace[position] >= 0:
                outputs.append(inputs[inplace[position]])
                continue
            var = self.fresh("alloc", info)
            new.append(rx.VarBinding(var, _allocation(info, call.span), span=call.span))
            outputs.append(var)
        fresh_outputs = [o for o in outputs if all(o is not i for i in inputs)]
        extra = tuple(call.args[2:])  # tir_vars
        callee = call.args[0]
        kernel_call = rx.Call(callee, tuple(inputs) + tuple(fresh_outputs) + extra, span=call.span)
        new.append(rx.VarBinding(rx.Var("_", VOID), kernel_call, span=call.span))
        result = outputs[0] if not isinstance(out_info, TupleStructInfo) else rx.Tuple(tuple(outputs))
        new.append(rx.VarBinding(binding.var, result, span=binding.span))
        return new


@register_pass
class CallTIRRewrite(FunctionPass):
    """Turn call_tir / call_dps_packed into allocations plus a destination-passing call."""

    name = "call-tir-rewrite"

    def transform_function(self, func: rx.Function, mod: IRModule) -> rx.Function:
        return _Rewriter().function(func)
