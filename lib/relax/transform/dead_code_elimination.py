"""DeadCodeElimination: drop pure bindings nobody uses, and private functions nobody calls.

    lv: R.Tensor((4,), dtype="float32") = R.exp(x)      (lv unused)
    gv: R.Tensor((4,), dtype="float32") = R.add(x, x)  ->  gv: ... = R.add(x, x)
    return gv                                                 return gv

Liveness runs backward over each function's blocks; a binding stays when its
variable is used later, or when its value may have effects (packed calls, impure
operators). Functions without a global symbol that no kept function refers to
are removed from the module.
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx
from ..ir import tir
from ..ir.analysis import collect, free_vars
from ..ir.module import IRModule
from ..ir.pass_infra import Pass, register_pass
from ..tir.rewrite import collect as collect_tir
from .purity import is_pure


def _used_ids(node) -> set[int]:
    return {id(v) for v in free_vars(node)}


class _FunctionDCE:
    def __init__(self, mod: IRModule):
        self.mod = mod

    def seq(self, seq: rx.SeqExpr, live: set[int]) -> rx.SeqExpr:
        live |= _used_ids(seq.body)
        blocks = []
        for block in reversed(seq.blocks):
            kept = []
            for binding in reversed(block.bindings):
                value = binding.value
                if id(binding.var) not in live and is_pure(value, self.mod) and not isinstance(binding, rx.MatchCast):
                    continue
                value = self.value(value, live)
                kept.append(dataclasses.replace(binding, value=value) if value is not binding.value else binding)
                live |= _used_ids(value)
            if kept or not isinstance(block, rx.DataflowBlock):
                blocks.append(dataclasses.replace(block, bindings=tuple(reversed(kept))))
        blocks = [b for b in blocks if b.bindings]
        return dataclasses.replace(seq, blocks=tuple(reversed(blocks)))

    def value(self, value: rx.Expr, live: set[int]) -> rx.Expr:
        if isinstance(value, rx.If):
            return dataclasses.replace(value, true_branch=self.seq(value.true_branch, set(live)),
                                       false_branch=self.seq(value.false_branch, set(live)))
        if isinstance(value, rx.Function):
            return dataclasses.replace(value, body=self.seq(value.body, set()))
        return value

    def function(self, func: rx.Function) -> rx.Function:
        body = self.seq(func.body, set())
        return func if body is func.body else dataclasses.replace(func, body=body)


def _referenced_functions(func) -> set[str]:
    if isinstance(func, tir.PrimFunc):  # a call of another function: a GlobalVar in a tir.Call
        return {node.name_hint for node in collect_tir(func.body, rx.GlobalVar)}  # TIR's own walk
    return {node.name_hint for node in collect(func, lambda n: isinstance(n, rx.GlobalVar))}


@register_pass
class DeadCodeElimination(Pass):
    """Remove unused pure bindings and unreachable private functions."""

    name = "dead-code-elimination"
    opt_level = 1

    def run(self, mod: IRModule) -> IRModule:
        functions = {name: _FunctionDCE(mod).function(f) if isinstance(f, rx.Function) else f
                     for name, f in mod.functions.items()}
        reachable = [name for name, f in functions.items() if "global_symbol" in f.attrs]
        seen = set(reachable)
        while reachable:
            for callee in _referenced_functions(functions[reachable.pop()]):
                if callee in functions and callee not in seen:
                    seen.add(callee)
                    reachable.append(callee)
        if not seen:  # a module with no public function keeps everything
            seen = set(functions)
        kept = {name: f for name, f in functions.items() if name in seen}
        if len(kept) == len(mod.functions) and all(kept[n] is mod.functions[n] for n in kept):
            return mod
        return IRModule.from_functions(kept, attrs=mod.attrs, global_infos=mod.global_infos)
