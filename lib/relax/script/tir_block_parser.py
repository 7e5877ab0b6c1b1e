"""Blocks of schedulable TIR: `with T.sblock("name"):` (TVM 0.27) or `with T.block(...)`.

A block's header statements do not become statements: block iterators
(`vi = T.axis.spatial(16, i)`, `vi, vj = T.axis.remap("SR", [i, j])`), access
regions (`T.reads(...)`, `T.writes(...)`), the predicate (`T.where`), annotations
(`T.sblock_attr`), allocations (`T.sblock_alloc_buffer`), `T.match_buffer` and
`with T.init():`. They fill the BlockFrame of the innermost block; the rest of the
body becomes the block's body. The function itself has a root frame, which
becomes the root block when the function contains blocks or root allocations.
"""

from __future__ import annotations

import ast
from dataclasses import field

from ..ir import FrozenDict, tir
from ..records import record
from . import tir_expr_queries, tir_ops
from .context import ParseContext, Scope
from .prim_expr import PrimExprParser
from .tir_access_regions import infer_regions
from .tir_values import parse_attr_dict

# `T.axis.<kind>` -> IterVar iter_type; remap letters use the one-letter names.
AXIS_KINDS = {
    "spatial": "DataPar", "S": "DataPar",
    "reduce": "CommReduce", "R": "CommReduce",
    "scan": "Ordered",
    "opaque": "Opaque",
}
BLOCK_NAMES = ("sblock", "block")  # "block" is the spelling before TVM 0.27
ATTR_NAMES = ("sblock_attr", "block_attr")
ALLOC_NAMES = ("sblock_alloc_buffer", "block_alloc_buffer")


@record(mutable=True)
class BlockFrame:
    name: str
    legacy: bool = False  # opened with T.block: there T.alloc_buffer allocates in the block
    iter_vars: list[tir.IterVar] = field(default_factory=list)
    iter_values: list[tir.PrimExpr] = field(default_factory=list)
    reads: tuple[tir.BufferRegion, ...] | None = None
    writes: tuple[tir.BufferRegion, ...] | None = None
    predicate: tir.PrimExpr | None = None
    annotations: FrozenDict = field(default_factory=FrozenDict)
    alloc_buffers: list[tir.Buffer] = field(default_factory=list)
    match_buffers: list[tir.MatchBufferRegion] = field(default_factory=list)
    init: tir.Stmt | None = None

    def realize(self, body: tir.Stmt, span=None) -> tir.BlockRealize:
        reads, writes = self.reads, self.writes
        if (reads is None or writes is None) and self.name != "root":
            # TVM completes a block written without T.reads/T.writes; so does this.
            inferred_reads, inferred_writes = infer_regions(body, self.init, tuple(self.alloc_buffers))
            reads = inferred_reads if reads is None else reads
            writes = inferred_writes if writes is None else writes
        block = tir.Block(
            self.name,
            tuple(self.iter_vars),
            reads or (),
            writes or (),
            body,
            init=self.init,
            alloc_buffers=tuple(self.alloc_buffers),
            match_buffers=tuple(self.match_buffers),
            annotations=self.annotations,
            span=span,
        )
        predicate = self.predicate if self.predicate is not None else tir.IntImm("bool", 1)
        return tir.BlockRealize(tuple(self.iter_values), predicate, block, span=span)


class BlockHeaderParser:
    """Reads the header statements of one block into its frame."""

    def __init__(self, ctx: ParseContext, loop_ranges: dict[tir.Var, tir.Range]):
        self.ctx = ctx
        self.loop_ranges = loop_ranges  # loop variable -> its range, for T.axis.remap

    # -- iterators ---------------------------------------------------------------
    def axis(self, frame: BlockFrame, target: ast.Name, call: ast.Call, kind: str, scope: Scope) -> None:
        """`vi = T.axis.spatial(extent_or_(min, max), value)`."""
        if len(call.args) != 2 or call.keywords:
            raise self.ctx.fail(f"T.axis.{kind} takes a domain and a value", call)
        exprs = PrimExprParser(self.ctx, scope)
        value = exprs.parse(call.args[1])
        domain = self.domain(call.args[0], value.dtype, exprs)
        self.add_iter(frame, target, domain, value, AXIS_KINDS[kind], scope)

    def domain(self, node: ast.expr, dtype: str, exprs: PrimExprParser) -> tir.Range:
        if isinstance(node, (ast.Tuple, ast.List)):
            if len(node.elts) != 2:
                raise self.ctx.fail("an axis domain is an extent or a (min, max) pair", node)
            low = tir_ops.cast(dtype, exprs.value(node.elts[0]))
            high = tir_ops.cast(dtype, exprs.value(node.elts[1]))
            return tir.Range(low, tir_expr_queries.extent_between(low, high), span=self.ctx.span(node))
        extent = tir_ops.cast(dtype, exprs.value(node))
        return tir.Range(tir_ops.make_const(0, extent.dtype), extent, span=self.ctx.span(node))

    def remap(self, frame: BlockFrame, targets: list[ast.expr], call: ast.Call, scope: Scope) -> None:
        """`vi, vj = T.axis.remap("SR", [i, j])`: each loop variable becomes a block iterator."""
        if len(call.args) != 2 or call.keywords:
            raise self.ctx.fail("T.axis.remap takes a kind string and a list of loop variables", call)
        kinds_node, values_node = call.args
        if not isinstance(kinds_node, ast.Constant) or not isinstance(kinds_node.value, str):
            raise self.ctx.fail("the first argument of T.axis.remap is a string of 'S' and 'R'", kinds_node)
        if not isinstance(values_node, (ast.List, ast.Tuple)):
            raise self.ctx.fail("the second argument of T.axis.remap is a list of loop variables", values_node)
        kinds, values = kinds_node.value, values_node.elts
        if not len(kinds) == len(values) == len(targets):
            raise self.ctx.fail(
                f"T.axis.remap binds {len(targets)} name{'s' if len(targets) != 1 else ''} with "
                f"{len(kinds)} kind{'s' if len(kinds) != 1 else ''} and {len(values)} loop variable{'s' if len(values) != 1 else ''}",
                call,
            )
        for letter in kinds:
            if letter not in ("S", "R"):
                raise self.ctx.fail(f"unknown axis kind '{letter}' in T.axis.remap; expected 'S' or 'R'", kinds_node)
        exprs = PrimExprParser(self.ctx, scope)
        for target, letter, value_node in zip(targets, kinds, values):
            value = exprs.parse(value_node)
            domain = self.loop_ranges.get(value) if isinstance(value, tir.Var) else None
            if domain is None:
                raise self.ctx.fail(f"T.axis.remap takes loop variables; '{ast.unparse(value_node)}' is not one", value_node)
            self.add_iter(frame, target, domain, value, AXIS_KINDS[letter], scope)

    def add_iter(self, frame, target: ast.expr, domain: tir.Range, value: tir.PrimExpr, iter_type: str, scope: Scope) -> None:
        if not isinstance(target, ast.Name):
            raise self.ctx.fail("a block iterator is bound to a name", target)
        var = tir.Var(target.id, value.dtype, span=self.ctx.span(target))
        frame.iter_vars.append(tir.IterVar(var, domain, iter_type, span=self.ctx.span(target)))
        frame.iter_values.append(value)
        scope.define(target.id, var)

    # -- regions, predicate, annotations ---------------------------------------------
    def regions(self, call: ast.Call, scope: Scope) -> tuple[tir.BufferRegion, ...]:
        """The arguments of T.reads / T.writes: `A[vi, 0:16]`, a list of them, or a buffer."""
        nodes = call.args
        if len(nodes) == 1 and isinstance(nodes[0], (ast.List, ast.Tuple)):
            nodes = nodes[0].elts
        return tuple(self.region(node, scope) for node in nodes)

    def region(self, node: ast.expr, scope: Scope) -> tir.BufferRegion:
        exprs = PrimExprParser(self.ctx, scope)
        if isinstance(node, ast.Name):
            buffer = exprs.buffer(node)
            full = tuple(tir.Range(tir_ops.make_const(0, d.dtype), d) for d in buffer.shape)
            return tir.BufferRegion(buffer, full, span=self.ctx.span(node))
        if not isinstance(node, ast.Subscript):
            raise self.ctx.fail("expected a buffer region such as A[vi, 0:16]", node)
        buffer = exprs.buffer(node.value)
        index_nodes = exprs.index_nodes(node)
        exprs.check_index_count(node, buffer, len(index_nodes))
        ranges = tuple(
            self.range_of(index, dim, exprs) for index, dim in zip(index_nodes, buffer.shape)
        )
        return tir.BufferRegion(buffer, ranges, span=self.ctx.span(node))

    def range_of(self, index: ast.expr, dimension: tir.PrimExpr, exprs: PrimExprParser) -> tir.Range:
        if not isinstance(index, ast.Slice):
            point = exprs.parse(index)
            return tir.Range(point, tir_ops.make_const(1, point.dtype), span=self.ctx.span(index))
        if index.step is not None:
            raise self.ctx.fail("a buffer region has no step", index.step)
        low = exprs.value(index.lower) if index.lower is not None else 0
        high = exprs.value(index.upper) if index.upper is not None else dimension
        low, high = tir_ops.match_types(low, high)
        return tir.Range(low, tir_expr_queries.extent_between(low, high), span=self.ctx.span(index))

    def where(self, frame: BlockFrame, call: ast.Call, scope: Scope) -> None:
        if len(call.args) != 1 or call.keywords:
            raise self.ctx.fail("T.where takes one condition", call)
        frame.predicate = tir_ops.cast_bool(PrimExprParser(self.ctx, scope).parse(call.args[0]))

    def annotations(self, frame: BlockFrame, call: ast.Call, scope: Scope) -> None:
        if len(call.args) != 1 or call.keywords:
            raise self.ctx.fail("T.sblock_attr takes one dictionary", call)
        frame.annotations = FrozenDict({**frame.annotations, **parse_attr_dict(call.args[0], self.ctx, scope)})

    def match_buffer_region(self, frame: BlockFrame, buffer: tir.Buffer, source: ast.expr, scope: Scope) -> None:
        region = self.region(source, scope)
        frame.match_buffers.append(tir.MatchBufferRegion(buffer, region, span=self.ctx.span(source)))


def block_name(call: ast.Call, ctx: ParseContext) -> str:
    if not call.args:
        return ""
    node = call.args[0]
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        raise ctx.fail("a block name is a string", node)
    return node.value
