"""Rule: a float32 matrix-vector product (one row of C) keeps a long strip of C in vector registers.

`C[..., 0, j] += A[..., 0, k] * B[..., k, j]` with a single row (mlp_b1's
784 -> 512 -> 512 layers at batch 1, B the row-major K x N weight that fold-constant
leaves) is bound by streaming B once, not by arithmetic. The register-tile rule would
give it 1 x 2 vectors per tile: two dependent fused multiply-add chains, stalled on
their latency. This rule keeps VECTORS (8 with 32 vector registers, 4 otherwise)
independent accumulators per column strip instead, so each k step reads a
contiguous VECTORS * 16-float piece of B's row k and issues VECTORS independent
fused multiply-adds. Columns left over after the wide strips go in 16-column
strips, then a j-innermost loop (which LLVM vectorizes). Each element of C adds its
terms in the order k = 0, 1, ... as the plain nest does; the fused multiply-add
rounds once per term instead of twice.

    for i, j, k in T.grid(1, N, K): C[i, j] += A[i, k] * B[k, j]
->
    for j_strip in range(N // 128):                  # independent: parallel when big
        acc = T.alloc_local((128,))                   # 8 vectors of 16
        acc[0:16] = T.Broadcast(0, 16) ...
        for k in range(K):
            acc[0:16] = T.fma(T.Broadcast(A[0, k], 16), B[k, j0:j0 + 16], acc[0:16]) ...  # x 8
        C[0, j0:j0 + 16] = acc[0:16] ...
    <16-column strips, then the last N % 16 columns>
"""

from __future__ import annotations

from ...ir import tir
from ..convert_blocks_to_loops import allocation
from . import register_tile
from .nest import Nest, fresh, loop

LANES = 16  # float32 lanes of one vector (AVX-512; LLVM splits it where vectors are narrower)
VECTORS = 4  # accumulator vectors per strip: 4 x 16 lanes = 8 AVX2 registers
WIDE_VECTORS = 8  # with 32 vector registers (AVX-512): 8 independent chains cover the FMA latency


def _iter(nest: Nest, var) -> tir.IterVar | None:
    return next((iv for iv in nest.block.iter_vars if iv.var is var), None)


def _extent(nest: Nest, var) -> int | None:
    iv = _iter(nest, var)
    extent = nest.loop_of(iv).extent if iv is not None else None
    return extent.value if isinstance(extent, tir.IntImm) else None


def matches(nest: Nest, cpu=None) -> bool:
    operands = register_tile._operands(nest)
    if operands is None:
        return False
    store = nest.block.body
    init = nest.block.init
    if not isinstance(init.value, tir.FloatImm):  # the accumulators start from a constant
        return False
    if any(not isinstance(index, tir.Var) or _iter(nest, index) is None for index in store.indices[-2:]):
        return False
    return _extent(nest, store.indices[-2]) == 1 and (_extent(nest, store.indices[-1]) or 0) >= LANES


def _vectors(cpu) -> int:
    return WIDE_VECTORS if cpu is not None and cpu.wide_registers else VECTORS


def _ramp(base: tir.PrimExpr, lanes: int = LANES) -> tir.Ramp:
    return tir.Ramp(base, tir.IntImm(base.dtype, 1), lanes)


class _Gemv:
    """The pieces of one matched nest: its iterators, operands and the values bound to outer iterators."""

    def __init__(self, nest: Nest, outer_values: dict):
        self.nest, self.outer_values = nest, outer_values
        self.x, self.y = register_tile._operands(nest)
        self.store = nest.block.body
        self.i_iter, self.j_iter = _iter(nest, self.store.indices[-2]), _iter(nest, self.store.indices[-1])
        self.k_iter = nest.iters("CommReduce")[0]
        self.index = nest.loop_of(self.j_iter).loop_var.dtype

    def const(self, value: int) -> tir.IntImm:
        return tir.IntImm(self.index, value)

    def at(self, expr, j, k=None):
        values = {**self.outer_values, self.i_iter.var: self.const(0), self.j_iter.var: j,
                  self.k_iter.var: k if k is not None else self.const(0)}
        return self.nest.bound(expr, values)

    def strips(self, start: int, count: int, vectors: int) -> tir.Stmt:
        """`count` strips of `vectors` * LANES columns from column `start`, each summed in registers."""
        width = vectors * LANES
        j_loop, k_loop = self.nest.loop_of(self.j_iter), self.nest.loop_of(self.k_iter)
        strip, k = fresh(j_loop.loop_var, f"strip{width}"), fresh(k_loop.loop_var, f"v{width}")
        j0 = strip * self.const(width) + self.const(start)
        name = f"{self.store.buffer.name}_gemv{width}"
        acc = tir.Buffer(name, (self.const(width),), "float32", tir.Var(name, "handle"), scope="local")

        def slot(v):
            return (_ramp(self.const(v * LANES)),)

        zero = tir.Broadcast(self.nest.block.init.value, LANES)
        starts = [tir.BufferStore(acc, zero, slot(v)) for v in range(vectors)]
        updates = []
        for v in range(vectors):
            a = tir.Broadcast(self.at(self.x, j0, k), LANES)
            b = self.at(self.y, _ramp(j0 + self.const(v * LANES)), k)
            total = tir.Call(f"float32x{LANES}", "tir.fma", (a, b, tir.BufferLoad(acc, slot(v))))
            updates.append(tir.BufferStore(acc, total, slot(v)))
        saves = [self.at(self.store, _ramp(j0 + self.const(v * LANES))).with_fields(value=tir.BufferLoad(acc, slot(v)))
                 for v in range(vectors)]
        body = allocation(acc, tir.SeqStmt((*starts, loop(k, k_loop.extent, tir.SeqStmt(tuple(updates))), *saves)))
        return loop(strip, self.const(count), body, independent=True)

    def rest(self, start: int, stop: int) -> tir.Stmt:
        """Columns [start, stop) with k outside j: B's row pieces read contiguously."""
        j_loop, k_loop = self.nest.loop_of(self.j_iter), self.nest.loop_of(self.k_iter)
        k = fresh(k_loop.loop_var, "rest")

        def columns(statement, k_value=None):
            j = fresh(j_loop.loop_var, "rest")
            return loop(j, self.const(stop - start), self.at(statement, j + self.const(start), k_value))

        return tir.SeqStmt((columns(self.nest.block.init), loop(k, k_loop.extent, columns(self.store, k))))


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    store = nest.block.body
    spatial = nest.iters("DataPar")
    parts_of = _Gemv(nest, {})
    outer = [iv for iv in spatial if iv is not parts_of.i_iter and iv is not parts_of.j_iter]
    outer_values = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in outer}
    gemv = _Gemv(nest, outer_values)
    columns, vectors = _extent(nest, store.indices[-1]), _vectors(cpu)
    wide = columns // (vectors * LANES)
    narrow = (columns - wide * vectors * LANES) // LANES
    done = wide * vectors * LANES + narrow * LANES
    parts = []
    if wide:
        parts.append(gemv.strips(0, wide, vectors))
    if narrow:
        parts.append(gemv.strips(wide * vectors * LANES, narrow, 1))
    if done < columns:
        parts.append(gemv.rest(done, columns))
    stmt = parts[0] if len(parts) == 1 else tir.SeqStmt(tuple(parts))
    for iv in reversed(outer):
        stmt = loop(outer_values[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt
