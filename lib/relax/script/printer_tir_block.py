"""Printing schedulable TIR blocks: `with T.sblock("name"):`, block iterators
(`T.axis.remap`, `T.axis.spatial`, ...), read/write regions, `T.init()`, and the
implicit root block that TVM shows as the comment `# with T.sblock("root"):`.

A mixin of TirPrinter, whose expression printer, scopes, loops and buffer
declarations it uses.
"""

from __future__ import annotations

from ..ir import tir
from . import printer_doc as doc
from .printer_prim_expr import index_text
from .printer_values import add_folded, attr_value, indent, is_true, same_expr

_AXIS_KINDS = {"DataPar": ("spatial", "S"), "CommReduce": ("reduce", "R"), "Ordered": ("scan", None), "Opaque": ("opaque", None)}


def contains_block(stmt) -> bool:
    if isinstance(stmt, (tir.Block, tir.BlockRealize)):
        return True
    for value in vars(stmt).values():
        if isinstance(value, tir.Stmt) and contains_block(value):
            return True
        if isinstance(value, tuple) and any(isinstance(v, tir.Stmt) and contains_block(v) for v in value):
            return True
    return False


def _region_stop(start, extent):
    """start + extent, seeing through an extent written as `stop - start`."""
    if isinstance(extent, tir.Sub) and same_expr(extent.b, start):
        return extent.a
    return add_folded(start, extent)


class BlockPrinting:
    """The block half of TirPrinter (which provides ctx, exprs, expr, stmt and loops)."""

    def _function_body(self, body) -> list[str]:
        root = body.block if isinstance(body, tir.BlockRealize) else None
        if root is not None and self._is_implicit_root(body):
            lines = ['# with T.sblock("root"):']
            lines.extend(self._alloc_buffers(root.alloc_buffers, "sblock_alloc_buffer"))
            return lines + self.stmt(root.body)
        return self.stmt(body)

    @staticmethod
    def _is_implicit_root(realize: tir.BlockRealize) -> bool:
        block = realize.block
        if realize.iter_values or not is_true(realize.predicate):
            return False
        if block.annotations or block.match_buffers or block.reads or block.writes or block.init is not None:
            return False
        inner = block.body
        if block.alloc_buffers:
            return True
        if isinstance(inner, tir.BlockRealize):
            return bool(inner.block.iter_vars)
        return contains_block(inner)

    def region(self, region: tir.BufferRegion) -> str:
        parts = []
        for rng in region.region:
            start = self.expr(rng.min)
            if isinstance(rng.extent, tir.IntImm) and rng.extent.value == 1:
                parts.append(start)
            else:
                parts.append(f"{start}:{self.expr(_region_stop(rng.min, rng.extent))}")
        return f"{self.exprs.buffer_name(region.buffer)}[{index_text(parts)}]"

    def _BlockRealize(self, node: tir.BlockRealize) -> list[str]:
        block = node.block
        with self.ctx.scope():
            lines = self._iter_vars(block.iter_vars, node.iter_values)
            if not is_true(node.predicate):
                lines.append(f"{self.ctx.tir('where')}({self.expr(node.predicate)})")
            lines.append(doc.call(self.ctx.tir("reads"), [self.region(r) for r in block.reads]))
            lines.append(doc.call(self.ctx.tir("writes"), [self.region(r) for r in block.writes]))
            if block.annotations:
                lines.append(f"{self.ctx.tir('sblock_attr')}({attr_value(self.ctx, self.exprs, block.annotations)})")
            lines.extend(self._alloc_buffers(block.alloc_buffers, "sblock_alloc_buffer"))
            for match in block.match_buffers:
                source = self.region(match.source)
                text = self.buffer_call("match_buffer", match.buffer, args=[source])
                lines.append(f"{self.ctx.define(match.buffer, match.buffer.name)} = {text}")
            if block.init is not None:
                with self.ctx.scope():
                    init = self.stmt(block.init)
                lines.append(f"with {self.ctx.tir('init')}():")
                lines.extend(indent(init or ["pass"]))
            lines.extend(self.stmt(block.body))
        return [f"with {self.ctx.tir('sblock')}({doc.string_text(block.name_hint)}):"] + indent(lines)

    def _Block(self, node: tir.Block) -> list[str]:
        return self._BlockRealize(tir.BlockRealize((), tir.IntImm("bool", 1), node))

    def _iter_vars(self, iter_vars, values) -> list[str]:
        lines: list[str] = []
        group: list[int] = []

        def flush():
            if len(group) == 1:
                lines.append(single(group[0]))
            elif group:
                names = [self.ctx.define(iter_vars[i].var, iter_vars[i].var.name) for i in group]
                kinds = "".join(_AXIS_KINDS[iter_vars[i].iter_type][1] for i in group)
                loop_vars = doc.list_text([self.expr(values[i]) for i in group])
                lines.append(f"{', '.join(names)} = {self.ctx.tir('axis.remap')}({doc.string_text(kinds)}, {loop_vars})")
            group.clear()

        def single(i: int) -> str:
            iter_var = iter_vars[i]
            dom = iter_var.dom
            if isinstance(dom.min, tir.IntImm) and dom.min.value == 0:
                dom_text = self.expr(dom.extent)
            else:
                dom_text = doc.tuple_text([self.expr(dom.min), self.expr(add_folded(dom.min, dom.extent))])
            value = self.expr(values[i]) if i < len(values) else None
            kind = _AXIS_KINDS.get(iter_var.iter_type, ("opaque", None))[0]
            name = self.ctx.define(iter_var.var, iter_var.var.name)
            args = [dom_text] + ([value] if value is not None else [])
            return f"{name} = {doc.call(self.ctx.tir('axis.' + kind), args)}"

        for i, iter_var in enumerate(iter_vars):
            if self._remappable(iter_var, values[i] if i < len(values) else None):
                group.append(i)
            else:
                flush()
                lines.append(single(i))
        flush()
        return lines

    def _remappable(self, iter_var: tir.IterVar, value) -> bool:
        if iter_var.iter_type not in ("DataPar", "CommReduce") or not isinstance(value, tir.Var):
            return False
        loop = self.loops.get(value)
        if loop is None or iter_var.dom is None:
            return False
        return same_expr(loop.min, iter_var.dom.min) and same_expr(loop.extent, iter_var.dom.extent)
