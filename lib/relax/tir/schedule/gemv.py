"""Rule: a float32 matrix-vector product (one row of C) streams B once, its result in registers.

`C[..., 0, j] += A[..., 0, k] * B[..., k, j]` with a single row (mlp_b1's
784 -> 512 -> 512 -> 10 layers at batch 1, the CNN's 2048 -> 10, B the row-major
K x N weight that fold-constant leaves) is bound by reading B once, not by
arithmetic. The columns are cut into strips of strip_vectors() vectors of the target's
lanes (half its vector registers: 16 x 16 floats with AVX-512, 8 x 8 with AVX2; the
CPU model, cpu.py), each summed over all of k in vector registers: every k step reads
a contiguous strip-wide piece of B's row k, GROUP_ROWS rows per loop iteration (four
row streams in flight), and does one independent fused multiply-add per vector and
row. The strips are the parallel loop: contiguous column ranges, so a thread that
keeps its chunks of the loop keeps its part of B in its core's cache. Each element
adds its terms in the order k = 0, 1, ... as the plain nest does; the fused
multiply-add rounds once per term instead of twice.

A strip with fewer vectors than the model's chains (FMA latency x units: 8; the
columns left after the whole strips, or all of them: the 2048 x 10 and 512 x 10
layers have one vector of 10 lanes with AVX-512) would wait on the fma latency with
one dependent chain per vector, so k is dealt round
SPLIT = ceil(chains / vectors) accumulator sets (k = s, s + SPLIT, ...) summed
pairwise at the end: its terms are grouped by k modulo SPLIT (within the tolerance
of float32 sums, like the row-reduction rule's lanes).

A big product (K_SPLIT_MIN_BYTES of B or more, K a multiple of K_BLOCKS) is cut the
other way for the threads: K_BLOCKS blocks of whole rows of B are the parallel loop,
each summing its rows by strips into its own row of partial sums, and one vector pass
adds the partial rows and applies the epilogue (_k_blocks says why: column strips of
power-of-two rows fill only part of the L2's sets).

A weight packed at build time (packed_weights.py: `packed[j // W, k, j % W]`, W the
strip width, after `--params`) keeps the column strips as the parallel loop: each
strip is one contiguous panel, so no thread reads part of every row (figures:
docs/performance-notes.md).

Elementwise nests after the product (bias add, relu, GELU: gemv_epilogue.py) are
applied to the result vectors in registers before their one store (fuse_epilogues):
the intermediate is never written.

    for i, j, k in T.grid(1, N, K): C[i, j] += A[i, k] * B[k, j]
    for i, j in T.grid(1, N):       out[i, j] = T.max(C[0, j] + bias[j], 0)
->  (AVX-512: 16 vectors of 16 lanes)
    for strip in range(N // 256):                   # independent: parallel when big
        acc = T.alloc_local((256,))                  # 16 vectors of 16
        acc[0:16] = T.Broadcast(0, 16) ...
        for g in range(K // 4):                      # 4 rows of B per iteration
            acc[0:16] = T.fma(T.Broadcast(A[0, 4g], 16), B[4g, j0:j0 + 16], acc[0:16]) ...  # x 16 x 4
        <K % 4 rows>
        out[0, j0:j0 + 16] = T.max(acc[0:16] + bias[j0:j0 + 16], T.Broadcast(0, 16)) ...
    <one strip for the columns left, the last N % 16 as a shorter vector; k split when it is narrow>
"""

from __future__ import annotations

import math

from ...ir import dtype as dt
from ...ir import tir
from ..convert_blocks_to_loops import allocation
from . import gemv_epilogue
from .cpu import CpuInfo
from .matmul_operands import matmul_operands, packed_width
from .nest import Nest, fresh, loop, seq
from .vector_exprs import broadcast, ramp

MIN_TERMS = 256  # multiply-adds per row below which the plain nest is kept
GROUP_ROWS = 4  # rows of B per k-loop iteration: four row streams in flight
K_BLOCKS = 4  # row blocks of a big gemv (_k_blocks): the parallel loop, whole rows per thread
K_SPLIT_MIN_BYTES = 512 * 1024  # of B: below, the column strips (B fits a core's L2 either way)
K_SPLIT_MAX_PARTIAL_BYTES = 64 * 1024  # the partial sums live on the stack


def strip_vectors(cpu) -> int:
    """Accumulator vectors per strip: half the vector registers (16 of AVX-512's 32, 8 of
    AVX2's 16), the B vectors and A's broadcast beside them. A weight packed at build time
    for a gemv comes in strips of this many vectors (packed_weights.py)."""
    return cpu.vector_registers // 2


def _lanes(cpu, panel: int | None) -> int:
    """Lanes per vector: the target's, fewer where a packed panel is narrower (a vector stays in its panel)."""
    return cpu.lanes if panel is None else math.gcd(cpu.lanes, panel)


def operands(nest: Nest):
    """(A load, B load, panel width) of the product: B row-major (width None) or packed in
    panels (packed_weights.py); (None, None, None) when the nest is not a product."""
    found = matmul_operands(nest)
    if found is not None:
        return (*found, None)
    width = packed_width(nest)
    return (*matmul_operands(nest, width), width) if width is not None else (None, None, None)


def _iter(nest: Nest, var) -> tir.IterVar | None:
    return next((iv for iv in nest.block.iter_vars if iv.var is var), None)


def _extent(nest: Nest, var) -> int | None:
    iv = _iter(nest, var)
    extent = nest.loop_of(iv).extent if iv is not None else None
    return extent.value if isinstance(extent, tir.IntImm) else None


def matches(nest: Nest, cpu=None) -> bool:
    x, y, panel = operands(nest)
    if x is None:
        return False
    store = nest.block.body
    init = nest.block.init
    if not isinstance(init.value, tir.FloatImm):  # the accumulators start from a constant
        return False
    if any(not isinstance(index, tir.Var) or _iter(nest, index) is None for index in store.indices[-2:]):
        return False
    columns = _extent(nest, store.indices[-1])  # constant: the vector pieces are fixed
    if _extent(nest, store.indices[-2]) != 1 or columns is None or columns < 1:
        return False
    if panel is not None and columns % panel:  # a packed weight comes in whole panels
        return False
    # Small products keep the plain nest: strips and split accumulators do not pay below
    # MIN_TERMS multiply-adds per row (a symbolic K may be large: the rule applies).
    depth = [_extent(nest, iv.var) for iv in nest.block.iter_vars if iv.iter_type == "CommReduce"]
    return None in depth or columns * math.prod(depth) >= MIN_TERMS


def _pieces(count: int, lanes: int) -> list[int]:
    """Lanes of the vectors that cover `count` columns: whole vectors, then the rest."""
    return [min(lanes, count - start) for start in range(0, count, lanes)]


class _Gemv:
    """The pieces of one matched nest: its iterators, operands and the values bound to outer iterators."""

    def __init__(self, nest: Nest, outer_values: dict, epilogues=()):
        self.nest, self.outer_values, self.epilogues = nest, outer_values, epilogues
        self.x, self.y, self.panel = operands(nest)
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
        return ramp(j, lanes)

    def term(self, acc, j, lanes: int, k):
        """acc + A[k] * B[k, j:j + lanes], rounded once."""
        a = self.at(self.x, j, k)
        b = self.b_vector(j, lanes, k)
        return tir.Call(dt.with_lanes("float32", lanes), "tir.fma", (broadcast(a, lanes), b, acc))

    def b_vector(self, j, lanes: int, k):
        """B[k, j:j + lanes]; from a packed weight, packed[j // width, k, j % width:...] (j is a
        multiple of the lanes and panels are whole vectors, so the lanes stay in one panel)."""
        if self.panel is None:
            return self.at(self.y, self.columns(j, lanes), k)
        width = self.const(self.panel)
        return tir.BufferLoad(self.y.buffer, (tir.FloorDiv(j, width), self.at(self.y.indices[1], j, k),
                                              self.columns(tir.FloorMod(j, width), lanes)))

    def result(self, value, j, lanes: int) -> tir.BufferStore:
        """The one store of a finished vector of C: through the epilogues when there are any."""
        if not self.epilogues:
            return self.at(self.store, self.columns(j, lanes)).with_fields(value=value)
        position = tuple(self.outer_values.get(index, self.const(0)) if index is not self.j_iter.var else j
                         for index in self.store.indices)
        for stage in self.epilogues:
            value = stage.value(value, position, lanes)
        return self.epilogues[-1].store_at(value, position, lanes)

    def k_steps(self, step: int, make, rows: "tuple | None" = None) -> list:
        """make(k, rows) over [0, K) (or rows = (first, count)): a loop of whole steps of `step`
        rows, then the rest one row at a time."""
        first, extent = rows if rows is not None else (self.const(0), self.k_loop.extent)
        known = extent.value if isinstance(extent, tir.IntImm) else None
        parts = []
        if known is None or known >= step:
            group = fresh(self.k_loop.loop_var, f"g{step}")
            whole = self.const(known // step) if known is not None else tir.FloorDiv(extent, self.const(step))
            parts.append(loop(group, whole, make(first + group * self.const(step), step)))
        if known is None or known % step:
            rest = fresh(self.k_loop.loop_var, "rest")
            start = (self.const(known // step * step) if known is not None
                     else tir.FloorDiv(extent, self.const(step)) * self.const(step))
            count = self.const(known % step) if known is not None else tir.FloorMod(extent, self.const(step))
            parts.append(loop(rest, count, make(first + start + rest, 1)))
        return parts

    def strip(self, start, lanes: list[int], split: int, rows=None, sink=None) -> tir.Stmt:
        """Columns start .. start + sum(lanes) in vectors of `lanes`, summed over k (or over
        rows = (first, count) of it) in `split` sets of registers (row r of a step goes to
        set r % split), then stored: sink(value, j, lanes), by default the result."""
        name = f"{self.store.buffer.name}_gemv"
        width = sum(lanes)
        acc = tir.Buffer(name, (self.const(split * width),), "float32", tir.Var(name, "handle"), scope="local")
        offsets = [sum(lanes[:p]) for p in range(len(lanes))]
        zero = tir.FloatImm("float32", 0.0)

        def slot(s, p):
            return (self.columns(self.const(s * width + offsets[p]), lanes[p]),)

        def j_of(p):
            return start + self.const(offsets[p])

        starts = [tir.BufferStore(acc, broadcast(self.init if s == 0 else zero, lanes[p]), slot(s, p))
                  for s in range(split) for p in range(len(lanes))]

        k_rows = rows

        def rows_of(k0, count):
            updates = []
            for row in range(count):
                for p in range(len(lanes)):
                    value = self.term(tir.BufferLoad(acc, slot(row % split, p)), j_of(p), lanes[p], k0 + self.const(row))
                    updates.append(tir.BufferStore(acc, value, slot(row % split, p)))
            return tir.SeqStmt(tuple(updates))

        saves = []
        for p in range(len(lanes)):
            sums = [tir.BufferLoad(acc, slot(s, p)) for s in range(split)]
            while len(sums) > 1:  # pairwise: log2(split) dependent adds
                sums = [tir.Add(sums[i], sums[i + 1]) if i + 1 < len(sums) else sums[i] for i in range(0, len(sums), 2)]
            saves.append((sink or self.result)(sums[0], j_of(p), lanes[p]))
        step = split if split > 1 else GROUP_ROWS
        return allocation(acc, tir.SeqStmt((*starts, *self.k_steps(step, rows_of, k_rows), *saves)))


def _split(gemv: _Gemv, vectors: int, chains: int) -> int:
    """Accumulator sets for a strip of `vectors`: enough independent chains, at most one per k."""
    split = 1 if vectors >= chains else -(-chains // vectors)
    extent = gemv.k_loop.extent
    return max(1, min(split, extent.value)) if isinstance(extent, tir.IntImm) else split


def apply(nest: Nest, cpu=None, epilogues=()) -> tir.Stmt:
    """The scheduled nest; `epilogues` (gemv_epilogue stages, from fuse_epilogues) are applied to each result vector."""
    store = nest.block.body
    spatial = nest.iters("DataPar")
    parts_of = _Gemv(nest, {})
    outer = [iv for iv in spatial if iv is not parts_of.i_iter and iv is not parts_of.j_iter]
    outer_values = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in outer}
    gemv = _Gemv(nest, outer_values, tuple(epilogues))
    cpu = cpu if cpu is not None else CpuInfo()
    chains, vectors, lanes = cpu.chains, strip_vectors(cpu), _lanes(cpu, gemv.panel)
    pieces = _pieces(_extent(nest, store.indices[-1]), lanes)
    strips, left = divmod(len(pieces), vectors)
    if pieces[-1] < lanes and strips and not left:  # the short last vector goes with the columns left
        strips, left = strips - 1, vectors
    blocks = _k_blocks(gemv, outer, strips)
    if blocks:
        return _k_split(gemv, nest, blocks, strips, vectors, pieces, chains, lanes)
    parts = []
    if strips:
        strip = fresh(nest.loop_of(parts_of.j_iter).loop_var, "strip")
        body = gemv.strip(strip * gemv.const(vectors * lanes), [lanes] * vectors, _split(gemv, vectors, chains))
        parts.append(loop(strip, gemv.const(strips), body, independent=True))
    if left:
        rest = pieces[strips * vectors:]
        parts.append(gemv.strip(gemv.const(strips * vectors * lanes), rest, _split(gemv, len(rest), chains)))
    stmt = seq(parts)
    for iv in reversed(outer):
        stmt = loop(outer_values[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt


def _k_blocks(gemv: _Gemv, outer: list, strips: int) -> int:
    """Row blocks of B for the k-split form (0: keep the column-strip form).

    Threads that split a gemv by column strips each read part of every row of B: with
    rows of a power-of-two size (mlp_b1's 2 KB) that part always has the same low
    address bits, so it lands in a fixed half (or less) of the L2's sets, and two layers'
    halves of B (1.3 MB for mlp_b1 on two cores) no longer stay in a 2 MB L2: each layer
    evicts the next one's weights. A thread given whole rows uses
    every set. So a big gemv (K_SPLIT_MIN_BYTES of B or more) is split into K_BLOCKS
    blocks of rows, the parallel loop: each sums its rows for every column into a row of
    partial sums, and one vector pass adds the partial rows (in block order) and applies
    the epilogue. Its terms are grouped by row block (within float32 sum tolerance).
    """
    extent = gemv.k_loop.extent
    columns = _extent(gemv.nest, gemv.store.indices[-1])
    if outer or not strips or not isinstance(extent, tir.IntImm) or columns is None:
        return 0
    if gemv.panel is not None:  # a packed weight: each strip reads its own contiguous panel
        return 0
    if extent.value * columns * 4 < K_SPLIT_MIN_BYTES or K_BLOCKS * columns * 4 > K_SPLIT_MAX_PARTIAL_BYTES:
        return 0
    return K_BLOCKS if extent.value % K_BLOCKS == 0 and extent.value // K_BLOCKS >= GROUP_ROWS else 0


def _k_split(gemv: _Gemv, nest: Nest, blocks: int, strips: int, vectors: int, pieces: list, chains: int,
             lanes: int) -> tir.Stmt:
    """for block in range(blocks) (parallel): partial[block, :] = its rows' sums by strips;
    then C[0, :] = epilogue(partial[0, :] + partial[1, :] + ...) a vector at a time."""
    columns = sum(pieces)
    rows = gemv.k_loop.extent.value // blocks
    name = f"{gemv.store.buffer.name}_partial"
    partial = tir.Buffer(name, (gemv.const(blocks * columns),), "float32", tir.Var(name, "handle"), scope="global")
    block = fresh(gemv.k_loop.loop_var, "block")
    first = block * gemv.const(rows)

    def sink(value, j, lanes):
        return tir.BufferStore(partial, value, (gemv.columns(block * gemv.const(columns) + j, lanes),))

    body = []
    strip = fresh(nest.loop_of(gemv.j_iter).loop_var, "strip")
    body.append(loop(strip, gemv.const(strips), gemv.strip(strip * gemv.const(vectors * lanes), [lanes] * vectors,
                                                         _split(gemv, vectors, chains), (first, gemv.const(rows)), sink)))
    rest = pieces[strips * vectors:]
    if rest:
        body.append(gemv.strip(gemv.const(strips * vectors * lanes), rest, _split(gemv, len(rest), chains),
                               (first, gemv.const(rows)), sink))

    def total(j, lanes):
        value = None
        for b in range(blocks):
            piece = tir.BufferLoad(partial, (gemv.columns(gemv.const(b * columns) + j, lanes),))
            value = piece if value is None else tir.Add(value, piece)
        return gemv.result(value, j, lanes)

    whole, tail = divmod(columns, lanes)
    vector = fresh(nest.loop_of(gemv.j_iter).loop_var, "sum")
    finish = [loop(vector, gemv.const(whole), total(vector * gemv.const(lanes), lanes))] if whole else []
    if tail:
        finish.append(total(gemv.const(whole * lanes), tail))
    return allocation(partial, tir.SeqStmt((loop(block, gemv.const(blocks), seq(body), independent=True), *finish)))


def fuse_epilogues(statements: list, fused: set, func: tir.PrimFunc, cpu=None, parallel: bool = True):
    """(statements, scheduled ids): each gemv nest followed by elementwise nests over its output
    (bias add, relu, GELU) becomes one scheduled statement that applies them to its result
    vectors; the intermediate outputs are then never written (gemv_epilogue.fuse_following)."""
    return gemv_epilogue.fuse_following(statements, fused, func, cpu, parallel, matches, apply)
