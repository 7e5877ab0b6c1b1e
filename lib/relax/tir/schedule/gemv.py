"""Rule: a float32 matrix-vector product (one row of C) streams B row after row, at memory speed.

`C[..., 0, j] += A[..., 0, k] * B[..., k, j]` with a single row (mlp_b1's
784 -> 512 -> 512 -> 10 layers at batch 1, the CNN's 2048 -> 10, B the row-major
K x N weight that fold-constant leaves) is bound by reading B once, not by
arithmetic. Two shapes of schedule, by the number of 16-lane column vectors:

Wide (at least CHAINS vectors, mlp's 512 columns): the row of C is the accumulator,
kept in L1 (it is the product's own output buffer, 2 KiB there); each pass over the
columns adds GROUP_ROWS rows of B, so B is read as GROUP_ROWS contiguous row streams
that the hardware prefetchers follow, and each vector of C is loaded once, takes
GROUP_ROWS fused multiply-adds in a register and is stored once per pass. Strips of
8 x 16 columns held in registers for the whole of k (the former rule) read 512 bytes
of each row then jumped 2 KiB: 71 -> 63 us for mlp's three layers from L3 measured in
C beside it, 79 -> 67 us with the weights 16 bytes off a cache line (see
docs/tir-lowering.md). Columns are cut into chunks of CHUNK_VECTORS vectors, each a
complete product over its columns: the chunk loop is the parallel one, and its
chunks are contiguous column ranges, so a thread that keeps its chunks keeps its part
of B in its core's cache. Each element adds its terms in the order k = 0, 1, ... as
the plain nest does; the fused multiply-add rounds once per term instead of twice.

Narrow (fewer vectors than CHAINS, N < 128 with AVX-512: the 2048 x 10 and 512 x 10
layers): one vector chain per column vector would wait on the fma latency, so k is
dealt round SPLIT accumulator sets in registers (k = s, s + SPLIT, ...), summed
pairwise at the end: the terms are grouped by k modulo SPLIT (within the tolerance
of float32 sums, like the row-reduction rule's lanes).

Elementwise nests after the product (bias add, relu, GELU: gemv_epilogue.py) are
applied to each result vector in registers before its one store (fuse_epilogues).

    for i, j, k in T.grid(1, N, K): C[i, j] += A[i, k] * B[k, j]
    for i, j in T.grid(1, N):       out[i, j] = T.max(C[0, j] + bias[j], 0)
->  (wide)
    for chunk in range(N // 256):                      # independent: parallel when big
        C[0, j0:j0 + 256] = 0                           # 16 vector stores
        for g in range(K // 4):                         # 4 rows of B per pass
            for block in range(8):                      # 2 vectors of C in registers
                C[0, j:j + 16] = T.fma(T.Broadcast(A[0, 4g + 3], 16), B[4g + 3, j:j + 16],
                                 T.fma(... T.fma(T.Broadcast(A[0, 4g], 16), B[4g, j:j + 16], C[0, j:j + 16])))
                C[0, j + 16:j + 32] = ...
        <K % 4 rows one at a time>
        out[0, j:j + 16] = T.max(C[0, j:j + 16] + bias[j:j + 16], T.Broadcast(0, 16)) ...
    <columns after the last whole chunk the same way, the last N % 16 as a shorter vector>
"""

from __future__ import annotations

from ...ir import tir
from ..convert_blocks_to_loops import allocation
from . import gemv_epilogue, register_tile
from .nest import Nest, fresh, loop, match_nest
from .parallel import parallelize, strip_marks

LANES = 16  # float32 lanes of one vector (AVX-512; LLVM splits it where vectors are narrower)
CHAINS = 4  # independent accumulator vectors that cover the fma latency (16 vector registers)
WIDE_CHAINS = 8  # with 32 vector registers (AVX-512)
GROUP_ROWS = 4  # rows of B added per pass over the columns (wide)
BLOCK_VECTORS = 2  # vectors of C in registers at once within a pass (wide)
CHUNK_VECTORS = 16  # column vectors per chunk, the unit of the parallel loop (wide)


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
    if any(_extent(nest, iv.var) is None for iv in nest.iters("DataPar")):
        return False  # constant columns (and outer extents): the vector pieces are fixed
    return _extent(nest, store.indices[-2]) == 1 and _extent(nest, store.indices[-1]) >= 1


def _chains(cpu) -> int:
    return WIDE_CHAINS if cpu is not None and cpu.wide_registers else CHAINS


def _vector(lanes: int) -> str:
    return "float32" if lanes == 1 else f"float32x{lanes}"


def _pieces(count: int) -> list[int]:
    """Lanes of the vectors that cover `count` columns: whole vectors, then the rest."""
    return [min(LANES, count - start) for start in range(0, count, LANES)]


class _Gemv:
    """The pieces of one matched nest: its iterators, operands and the values bound to outer iterators."""

    def __init__(self, nest: Nest, outer_values: dict, epilogues=()):
        self.nest, self.outer_values, self.epilogues = nest, outer_values, epilogues
        self.x, self.y = register_tile._operands(nest)
        self.store = nest.block.body
        self.i_iter, self.j_iter = _iter(nest, self.store.indices[-2]), _iter(nest, self.store.indices[-1])
        self.k_iter = nest.iters("CommReduce")[0]
        self.k_loop = nest.loop_of(self.k_iter)
        self.index = nest.loop_of(self.j_iter).loop_var.dtype
        self.init = nest.block.init.value

    def const(self, value: int) -> tir.IntImm:
        return tir.IntImm(self.index, value)

    def at(self, expr, j, k=None):
        values = {**self.outer_values, self.i_iter.var: self.const(0), self.j_iter.var: j,
                  self.k_iter.var: k if k is not None else self.const(0)}
        return self.nest.bound(expr, values)

    def columns(self, j, lanes: int):
        return j if lanes == 1 else tir.Ramp(j, self.const(1), lanes)

    def c_load(self, j, lanes: int) -> tir.BufferLoad:
        return self.at(self.store.value.a, self.columns(j, lanes))

    def c_store(self, value, j, lanes: int) -> tir.BufferStore:
        return self.at(self.store, self.columns(j, lanes)).with_fields(value=value)

    def term(self, acc, j, lanes: int, k):
        """acc + A[k] * B[k, j:j + lanes], rounded once."""
        a = self.at(self.x, j, k)
        b = self.at(self.y, self.columns(j, lanes), k)
        return tir.Call(_vector(lanes), "tir.fma", (a if lanes == 1 else tir.Broadcast(a, lanes), b, acc))

    def result(self, value, j, lanes: int) -> tir.BufferStore:
        """The store of a finished vector of C: through the epilogues when there are any."""
        if not self.epilogues:
            return self.c_store(value, j, lanes)
        position = tuple(self.outer_values.get(index, self.const(0)) if index is not self.j_iter.var else j
                         for index in self.store.indices)
        for stage in self.epilogues:
            value = stage.value(value, position, lanes)
        return self.epilogues[-1].store_at(value, position, lanes)

    def k_steps(self, step: int, make) -> list:
        """make(k, rows) for rows k .. k + rows of [0, K): a loop of whole steps, then the rest one by one."""
        extent = self.k_loop.extent
        known = extent.value if isinstance(extent, tir.IntImm) else None
        parts = []
        if known is None or known >= step:
            group = fresh(self.k_loop.loop_var, f"g{step}")
            whole = self.const(known // step) if known is not None else tir.FloorDiv(extent, self.const(step))
            parts.append(loop(group, whole, make(group * self.const(step), step)))
        if known is None or known % step:
            rest = fresh(self.k_loop.loop_var, "rest")
            start = self.const(known // step * step) if known is not None else tir.FloorDiv(extent, self.const(step)) * self.const(step)
            count = self.const(known % step) if known is not None else tir.FloorMod(extent, self.const(step))
            parts.append(loop(rest, count, make(start + rest, 1)))
        return parts

    # -- wide: the row of C in L1, GROUP_ROWS rows of B per pass --------------------------------

    def wide(self, start, vectors: int, tail: int) -> tir.Stmt:
        """Columns start .. start + vectors * LANES + tail, their whole product (and epilogue)."""
        blocks, single = divmod(vectors, BLOCK_VECTORS)
        width = BLOCK_VECTORS * LANES
        pieces = [(start + self.const(blocks * width + v * LANES), LANES) for v in range(single)]
        if tail:
            pieces.append((start + self.const(vectors * LANES), tail))

        def over_columns(statement_at) -> list:
            """statement_at(j, lanes) for every vector of the range: a loop of blocks, then the pieces."""
            parts = []
            if blocks:
                block = fresh(self.nest.loop_of(self.j_iter).loop_var, "block")
                j0 = start + block * self.const(width)
                body = [statement_at(j0 + self.const(v * LANES), LANES) for v in range(BLOCK_VECTORS)]
                parts.append(loop(block, self.const(blocks), tir.SeqStmt(tuple(body))))
            parts.extend(statement_at(j, lanes) for j, lanes in pieces)
            return parts

        def init(j, lanes):
            return self.c_store(self.init if lanes == 1 else tir.Broadcast(self.init, lanes), j, lanes)

        def rows(k0, count):
            def update(j, lanes):
                value = self.c_load(j, lanes)
                for row in range(count):
                    value = self.term(value, j, lanes, k0 + self.const(row))
                return self.c_store(value, j, lanes)
            return _seq(over_columns(update))

        parts = over_columns(init) + self.k_steps(GROUP_ROWS, rows)
        if self.epilogues:
            parts += over_columns(lambda j, lanes: self.result(self.c_load(j, lanes), j, lanes))
        return _seq(parts)

    # -- narrow: k dealt round SPLIT accumulator sets in registers ------------------------------

    def narrow(self, columns: int, split: int) -> tir.Stmt:
        pieces = _pieces(columns)
        name = f"{self.store.buffer.name}_gemv"
        size = split * columns
        acc = tir.Buffer(name, (self.const(size),), "float32", tir.Var(name, "handle"), scope="local")
        zero = tir.FloatImm("float32", 0.0)

        def slot(s, p):
            offset, lanes = s * columns + p * LANES, pieces[p]
            return (self.columns(self.const(offset), lanes),), lanes

        def j_of(p):
            return self.const(p * LANES)

        starts = []
        for s in range(split):
            for p in range(len(pieces)):
                index, lanes = slot(s, p)
                value = self.init if s == 0 else zero
                starts.append(tir.BufferStore(acc, value if lanes == 1 else tir.Broadcast(value, lanes), index))

        def rows(k0, count):
            updates = []
            for s in range(count):
                for p in range(len(pieces)):
                    index, lanes = slot(s, p)
                    value = self.term(tir.BufferLoad(acc, index), j_of(p), lanes, k0 + self.const(s))
                    updates.append(tir.BufferStore(acc, value, index))
            return tir.SeqStmt(tuple(updates))

        saves = []
        for p in range(len(pieces)):
            sums = [tir.BufferLoad(acc, slot(s, p)[0]) for s in range(split)]
            while len(sums) > 1:  # pairwise: log2(split) dependent adds
                sums = [tir.Add(sums[i], sums[i + 1]) if i + 1 < len(sums) else sums[i] for i in range(0, len(sums), 2)]
            saves.append(self.result(sums[0], j_of(p), pieces[p]))
        body = tir.SeqStmt((*starts, *self.k_steps(split, rows), *saves))
        return allocation(acc, body)


def _seq(parts: list) -> tir.Stmt:
    return parts[0] if len(parts) == 1 else tir.SeqStmt(tuple(parts))


def apply(nest: Nest, cpu=None, epilogues=()) -> tir.Stmt:
    """The scheduled nest; `epilogues` (gemv_epilogue stages, from fuse_epilogues) are applied to each result vector."""
    store = nest.block.body
    spatial = nest.iters("DataPar")
    parts_of = _Gemv(nest, {})
    outer = [iv for iv in spatial if iv is not parts_of.i_iter and iv is not parts_of.j_iter]
    outer_values = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in outer}
    gemv = _Gemv(nest, outer_values, tuple(epilogues))
    columns, chains = _extent(nest, store.indices[-1]), _chains(cpu)
    vectors = -(-columns // LANES)
    if vectors < chains:
        k_extent = gemv.k_loop.extent
        split = -(-chains // vectors)
        if isinstance(k_extent, tir.IntImm):
            split = max(1, min(split, k_extent.value))
        stmt = gemv.narrow(columns, split)
    else:
        whole, tail = divmod(columns, LANES)
        chunks, left = divmod(whole, CHUNK_VECTORS)
        parts = []
        if chunks:
            chunk = fresh(nest.loop_of(parts_of.j_iter).loop_var, "chunk")
            body = gemv.wide(chunk * gemv.const(CHUNK_VECTORS * LANES), CHUNK_VECTORS, 0)
            parts.append(loop(chunk, gemv.const(chunks), body, independent=True))
        if left or tail:
            parts.append(gemv.wide(gemv.const(chunks * CHUNK_VECTORS * LANES), left, tail))
        stmt = _seq(parts)
    for iv in reversed(outer):
        stmt = loop(outer_values[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt


def fuse_epilogues(statements: list, fused: set, func: tir.PrimFunc, cpu=None, parallel: bool = True):
    """(statements, scheduled ids): each gemv nest followed by elementwise nests over its output
    (bias add, relu, GELU) becomes one scheduled statement that applies them to its result
    vectors; the intermediate outputs are then never written. Others are unchanged; `fused`
    (ids of statements already scheduled, by conv2d's fusion) are passed over."""
    params = {id(buffer) for _, buffer in func.buffer_map}
    result, done, index = [], set(fused), 0
    while index < len(statements):
        stmt = statements[index]
        nest = match_nest(stmt) if id(stmt) not in done else None
        stages = []
        if nest is not None and matches(nest, cpu):
            stages = gemv_epilogue.chain(statements, index, nest.block.body.buffer, params)
        if stages:
            scheduled = apply(nest, cpu, stages)
            scheduled = parallelize(stmt, scheduled) if parallel else strip_marks(scheduled)
            result.append(scheduled)
            done.add(id(scheduled))
            index += 1 + len(stages)
        else:
            result.append(stmt)
            index += 1
    return result, done
