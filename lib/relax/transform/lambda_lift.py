"""LambdaLift: local functions become functions of the module; closures capture.

    def main(x):                              def main_inner(y, x):   # captured x last
        @R.function                               return R.add(y, x)
        def inner(y):                ->       def main(x):
            return R.add(y, x)                    inner = R.make_closure(cls.main_inner, (x,))
        a = inner(x)                              a = R.invoke_pure_closure(inner, (x,), sinfo_args=...)

A local function that captures nothing is called directly (`cls.main_inner(x)`); the
closure of an impure one is invoked with R.invoke_closure. A recursive local function
calls its lifted self directly, with what it captured passed on as trailing arguments.
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

    def function(self, func: rx.Function, prefix: str, closures: dict[int, tuple] | None = None) -> rx.Function:
        body = self.seq(func.body, prefix, dict(closures or {}))
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
            name, captured, passed = closures[id(value.op)]
            info = value.op.struct_info
            ret = info.ret if isinstance(info, FuncStructInfo) else ObjectStructInfo()
            if not captured or passed is not None:
                value = rx.Call(rx.GlobalVar(name), value.args + (passed or ()), span=value.span)
            else:
                # As TVM: a closure of a pure function is invoked as pure.
                pure = not isinstance(info, FuncStructInfo) or info.purity
                op = "relax.invoke_pure_closure" if pure else "relax.invoke_closure"
                value = rx.Call(rx.Op(op), (value.op, rx.Tuple(value.args)), sinfo_args=(ret,), span=value.span)
        elif isinstance(value, rx.If):
            value = dataclasses.replace(value, true_branch=self.seq(value.true_branch, prefix, closures),
                                        false_branch=self.seq(value.false_branch, prefix, closures))
        return dataclasses.replace(binding, value=value) if value is not binding.value else binding

    def lift(self, binding: rx.Binding, local: rx.Function, prefix: str, closures: dict[int, tuple]) -> rx.Binding:
        name = self.fresh_name(f"{prefix}_{binding.var.name_hint}")
        captured = [v for v in free_vars(local) if v is not binding.var]
        fresh = [rx.Var(v.name_hint, v.struct_info) for v in captured]
        if captured:
            local = substitute(local, dict(zip(captured, fresh)))
            local = dataclasses.replace(local, params=local.params + tuple(fresh))
        local = dataclasses.replace(local, attrs=FrozenDict(local.attrs.without("global_symbol")))
        # Inside its own body, a recursive function calls its lifted self directly, passing
        # on what it captured as the trailing arguments.
        own = {id(binding.var): (name, captured, tuple(fresh))}
        self.lifted[name] = lifted = self.function(local, name, own)
        if any(v is binding.var for v in free_vars(lifted)):
            raise error(f"local function '{binding.var.name_hint}' uses itself other than by calling itself;"
                        " define it in the module", local.span)
        closures[id(binding.var)] = (name, captured, None)
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
