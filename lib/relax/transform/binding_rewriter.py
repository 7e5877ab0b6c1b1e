"""BindingRewriter: the walk of passes that turn one binding into several.

A subclass implements `rewrite(binding) -> list[Binding]`; the walk visits every
block of a function, `if` branches and local functions included, and splices the
returned bindings in place:

    class Lowering(BindingRewriter):
        def rewrite(self, binding):
            if is_allocation(binding.value):
                return [storage_binding, dataclasses.replace(binding, value=tensor_in_storage)]
            return [binding]
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as rx


class BindingRewriter:
    def function(self, func: rx.Function) -> rx.Function:
        body = self.seq(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)

    def seq(self, seq: rx.Expr) -> rx.Expr:
        if not isinstance(seq, rx.SeqExpr):
            return seq
        return dataclasses.replace(seq, blocks=tuple(self.block(b) for b in seq.blocks))

    def block(self, block: rx.BindingBlock) -> rx.BindingBlock:
        out: list[rx.Binding] = []
        for binding in block.bindings:
            out.extend(self.binding(binding))
        return dataclasses.replace(block, bindings=tuple(out))

    def binding(self, binding: rx.Binding) -> list[rx.Binding]:
        """Rewrites nested structure first (branches, local functions), then the binding."""
        value = binding.value
        if isinstance(value, rx.If):
            value = dataclasses.replace(value, true_branch=self.seq(value.true_branch),
                                        false_branch=self.seq(value.false_branch))
        elif isinstance(value, rx.Function):
            value = self.function(value)
        elif isinstance(value, rx.SeqExpr):
            value = self.seq(value)
        if value is not binding.value:
            binding = dataclasses.replace(binding, value=value)
        return self.rewrite(binding)

    def rewrite(self, binding: rx.Binding) -> list[rx.Binding]:
        return [binding]
