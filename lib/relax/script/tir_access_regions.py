"""The regions a block reads and writes, for blocks written without T.reads/T.writes.

TVM completes such blocks when it parses them; so does this. Each buffer access
in the block body is a point (`A[vi, vj]`) or, over a loop inside the block, the
range the loop sweeps (`A[vi, j]` for j in range(4) is `A[vi, 0:4]`). Several
accesses of one buffer are joined per dimension with min/max, as TVM prints them
(`T.min(a, b):T.min(a, b) + (T.max(a, b) + 1 - T.min(a, b))`). A buffer the block
writes is not listed among its reads; buffers the block allocates are not listed.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.node import Node, field_values
from . import tir_expr_queries, tir_ops


def infer_regions(body: tir.Stmt, init: tir.Stmt | None, allocated: tuple[tir.Buffer, ...]):
    """(reads, writes) of a block body as BufferRegions, in order of first access."""
    collector = _AccessCollector()
    if init is not None:
        collector.visit(init)
    collector.visit(body)
    local = {id(b) for b in allocated}
    written = {id(b) for b, _ in collector.writes}
    writes = _join_by_buffer([a for a in collector.writes if id(a[0]) not in local])
    reads = _join_by_buffer([a for a in collector.reads if id(a[0]) not in local and id(a[0]) not in written])
    return reads, writes


class _AccessCollector:
    def __init__(self):
        self.reads: list[tuple[tir.Buffer, tuple[tir.Range, ...]]] = []
        self.writes: list[tuple[tir.Buffer, tuple[tir.Range, ...]]] = []
        self.loops: dict[tir.Var, tir.Range] = {}  # loops inside the block, to sweep over

    def visit(self, value) -> None:
        if isinstance(value, tir.For):
            self.visit(value.min)
            self.visit(value.extent)
            self.loops[value.loop_var] = tir.Range(value.min, value.extent)
            self.visit(value.body)
            return
        if isinstance(value, tir.BlockRealize):
            self.nested_block(value)
            return
        if isinstance(value, tir.BufferStore):
            self.visit(value.value)
            for index in value.indices:
                self.visit(index)
            self.writes.append((value.buffer, self.sweep(value.buffer, value.indices)))
            return
        if isinstance(value, tir.BufferLoad):
            for index in value.indices:
                self.visit(index)
            self.reads.append((value.buffer, self.sweep(value.buffer, value.indices)))
            return
        if isinstance(value, (tuple, list)):
            for item in value:
                self.visit(item)
        elif isinstance(value, Node) and not isinstance(value, (tir.Buffer, tir.Var)):
            for _, child in field_values(value):
                self.visit(child)

    def nested_block(self, realize: tir.BlockRealize) -> None:
        """An inner block's regions, its iterators replaced by their bindings and swept."""
        for value in realize.iter_values:
            self.visit(value)
        block = realize.block
        bindings = {iv.var: value for iv, value in zip(block.iter_vars, realize.iter_values)}
        for target, regions in ((self.reads, block.reads), (self.writes, block.writes)):
            for region in regions:
                ranges = tuple(
                    self.sweep_range(tir_expr_queries.substitute(r.min, bindings), r.extent, dim)
                    for r, dim in zip(region.region, region.buffer.shape)
                )
                target.append((region.buffer, ranges))

    def sweep(self, buffer: tir.Buffer, indices) -> tuple[tir.Range, ...]:
        if len(indices) != len(buffer.shape):  # a flattened access: the whole buffer
            return _full(buffer)
        return tuple(self.sweep_range(index, None, dim) for index, dim in zip(indices, buffer.shape))

    def sweep_range(self, start: tir.PrimExpr, extent: tir.PrimExpr | None, dimension: tir.PrimExpr) -> tir.Range:
        """The range `start` (+ extent) covers as the inner loops run; the whole
        dimension when it depends on them other than linearly."""
        one = tir_ops.make_const(1, start.dtype)
        extent = extent if extent is not None else one
        swept = [v for v in self.loops if tir_expr_queries.uses_var(start, v) or tir_expr_queries.uses_var(extent, v)]
        if not swept:
            return tir.Range(start, extent)
        if tir_expr_queries.constant_difference(extent, one) != 0 and any(tir_expr_queries.uses_var(extent, v) for v in swept):
            return tir.Range(tir_ops.make_const(0, dimension.dtype), dimension)
        low, high = {}, {}
        for var in swept:
            coefficient = tir_expr_queries.linear_coefficient(start, var)
            if coefficient is None:
                return tir.Range(tir_ops.make_const(0, dimension.dtype), dimension)
            loop = self.loops[var]
            last = _last(loop)
            low[var], high[var] = (loop.min, last) if coefficient >= 0 else (last, loop.min)
        first = tir_expr_queries.substitute(start, low)
        end = tir_ops.as_expr(tir_ops.binary(tir.Add, tir_expr_queries.substitute(start, high), extent))
        return tir.Range(first, tir_expr_queries.extent_between(first, end))


def _full(buffer: tir.Buffer) -> tuple[tir.Range, ...]:
    return tuple(tir.Range(tir_ops.make_const(0, d.dtype), d) for d in buffer.shape)


def _join_by_buffer(accesses) -> tuple[tir.BufferRegion, ...]:
    order: list[tir.Buffer] = []
    by_buffer: dict[int, list[tuple[tir.Range, ...]]] = {}
    for buffer, ranges in accesses:
        if id(buffer) not in by_buffer:
            order.append(buffer)
            by_buffer[id(buffer)] = []
        keys = [tir_expr_queries.structural_key(r) for r in by_buffer[id(buffer)]]
        if tir_expr_queries.structural_key(ranges) not in keys:
            by_buffer[id(buffer)].append(ranges)
    return tuple(tir.BufferRegion(b, _join(by_buffer[id(b)])) for b in order)


def _join(candidates: list[tuple[tir.Range, ...]]) -> tuple[tir.Range, ...]:
    if len(candidates) == 1:
        return candidates[0]
    joined = []
    for ranges in zip(*candidates):
        if len({tir_expr_queries.structural_key(r) for r in ranges}) == 1:
            joined.append(ranges[0])
            continue
        low = ranges[0].min
        high = _last(ranges[0])
        for other in ranges[1:]:
            low = tir_ops.as_expr(tir_ops.binary(tir.Min, low, other.min))
            high = tir_ops.as_expr(tir_ops.binary(tir.Max, high, _last(other)))
        end = tir_ops.as_expr(tir_ops.binary(tir.Add, high, 1))
        joined.append(tir.Range(low, tir_expr_queries.extent_between(low, end)))
    return tuple(joined)


def _last(region: tir.Range) -> tir.PrimExpr:
    """min + extent - 1, written as simply as the extent allows."""
    if isinstance(region.extent, tir.IntImm):
        return tir_ops.as_expr(tir_ops.binary(tir.Add, region.min, region.extent.value - 1))
    return tir_ops.as_expr(tir_ops.binary(tir.Sub, tir_ops.binary(tir.Add, region.min, region.extent), 1))
