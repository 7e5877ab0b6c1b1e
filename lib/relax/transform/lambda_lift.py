"""LambdaLift: local functions become functions of the module; closures capture.

    def main(x):                              def main_inner(y, x):   # captured x last
        @R.function                               return R.add(y, x)
        def inner(y):                ->       def main(x):
            return R.add(y, x)                    inner = R.make_closure(cls.main_inner, (x,))
        a = inner(x)                              a = R.invoke_closure(inner, (x,), sinfo_args=...)

A local function that captures nothing is called directly (`cls.main_inner(x)`).
Captured variables are bound as the LAST arguments, as the VM's closures bind them.
Runs after Normalize, so every local function and variable has struct info.
"""

from __future__ import annotations

import dataclasses

from ..diagnostics import error
from ..ir import expr as rx
from ..ir.analysis import free_vars, substitute
from ..ir.module import IRModule
from ..ir.names import fresh_name
from ..ir.node import FrozenDict
from ..ir.struct_info import FuncStructInfo, ObjectStructInfo
from ..ir.pass_infra import Pass, register_pass


class _Lifter:
    def __init__(self, taken: set[str]):
        self.taken = taken
        self.lifted: dict[str, rx.Function] = {}

    def fresh_name(self, hint: str) -> str:
        return fresh_name(hint, self.taken)

    def function(self, func: rx.Function, prefix: str) -> rx.Function:
        body = self.seq(func.body, prefix, {})
        return func if body is func.body else dataclasses.replace(func, body=body)

    def seq(self, seq: rx.SeqExpr, prefix: str, closures: dict[int, tuple]) -> rx.SeqExpr:
        blocks = []
        for block in seq.blocks:
            bindings = []
            for binding in block.bindings:
                bindings.append(self.binding(binding, prefix, closures))
            blocks.append(dataclasses.replace(block, bindings=tuple(bindings)))
        return dataclasses.replace(seq, blocks=tuple(blocks))

    def binding(self, binding: rx.Binding, prefix: str, closures: dict[int, tuple]) -> rx.Binding:
        value = binding.value
        if isinstance(value, rx.Function):
            return self.lift(binding, value, prefix, closures)
        if isinstance(value, rx.Call) and isinstance(value.op, rx.Var) and id(value.op) in closures:
            name, captured = closures[id(value.op)]
            ret = value.op.struct_info.ret if isinstance(value.op.struct_info, FuncStructInfo) else ObjectStructInfo()
            if not captured:
                value = rx.Call(rx.GlobalVar(name), value.args, span=value.span)
            else:
                value = rx.Call(rx.Op("relax.invoke_closure"), (value.op, rx.Tuple(value.args)),
                                sinfo_args=(ret,), span=value.span)
        elif isinstance(value, rx.If):
            value = dataclasses.replace(value, true_branch=self.seq(value.true_branch, prefix, closures),
                                        false_branch=self.seq(value.false_branch, prefix, closures))
        return dataclasses.replace(binding, value=value) if value is not binding.value else binding

    def lift(self, binding: rx.Binding, local: rx.Function, prefix: str, closures: dict[int, tuple]) -> rx.Binding:
        name = self.fresh_name(f"{prefix}_{binding.var.name_hint}")
        captured = [v for v in free_vars(local) if v is not binding.var]
        if any(v is binding.var for v in free_vars(local)):
            raise error("a recursive local function is not supported yet: define it in the module", local.span)
        if captured:
            fresh = [rx.Var(v.name_hint, v.struct_info) for v in captured]
            local = substitute(local, dict(zip(captured, fresh)))
            local = dataclasses.replace(local, params=local.params + tuple(fresh))
        local = dataclasses.replace(local, attrs=FrozenDict(local.attrs.without("global_symbol")))
        self.lifted[name] = self.function(local, name)
        closures[id(binding.var)] = (name, captured)
        if not captured:
            return dataclasses.replace(binding, value=rx.GlobalVar(name))
        closure = rx.Call(rx.Op("relax.make_closure"), (rx.GlobalVar(name), rx.Tuple(tuple(captured))),
                          span=local.span)
        return dataclasses.replace(binding, value=closure)


@register_pass
class LambdaLift(Pass):
    """Lift local functions to the module; closures capture the variables they use."""

    name = "lambda-lift"

    def run(self, mod: IRModule) -> IRModule:
        lifter = _Lifter(set(mod.functions))
        functions = {name: lifter.function(f, name) if isinstance(f, rx.Function) else f
                     for name, f in mod.functions.items()}
        if not lifter.lifted:
            return mod
        functions.update(lifter.lifted)
        return IRModule.from_functions(functions, attrs=mod.attrs, global_infos=mod.global_infos)
