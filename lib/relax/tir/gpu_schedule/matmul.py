"""Rule: matmul, batched matmul and dense run tiled through shared memory.

Matches a one-axis sum `C[.., i, j] = C[.., i, j] + f(A-load, B-load)` where one load
uses i and k (not j) and the other k and j (not i), whatever their layout (dense's
transposed B included) and batch indices. Each block computes a TILE x TILE tile of
C (blockIdx.y row tiles; blockIdx.x the batch times the column tiles, x allowing
2^31 - 1 blocks where y and z allow 65535) with SIDE x SIDE threads,
each holding a REG x REG register tile (rows ty*REG + a, columns tx*REG + b). For each
K_STEP-wide slice of k the block copies the A and B tiles to `__shared__` memory
(zero outside the matrices, so sizes need not divide), synchronizes, accumulates,
and synchronizes again before the next copy. Stores are guarded. Epilogues (bias,
relu) are separate nests that the elementwise rule schedules.

The shape (SIDE, REG, K_STEP, layout) is a MatmulTile. The pass config TILE_KEY sets
it; without it an output of at least LARGE_FROM elements gets LARGE (16x8x32c, 128 x 128
per block) and a smaller or symbolic one SMALL (16x4x16c, 64 x 64), whose smaller
blocks keep more multiprocessors busy. A thread reads 2 * REG shared values per
REG * REG multiply-adds, so REG sets how far shared-memory bandwidth limits the
kernel. In this contiguous layout ("c") A's tile is stored transposed (its rows
padded by A_PAD against bank conflicts), so the values a thread reads at one kk are
adjacent and the compiler loads four at a time. A tile without "c" spreads a
thread's outputs SIDE apart (rows ty + SIDE*a) over an untransposed A tile, for
comparison. The kk loop is unrolled: the compiler then schedules the shared loads of
several steps ahead of their multiply-adds. The diagram shows SMALL:

    for i, j, k in T.grid(M, N, K):             for by, bx in blockIdx.y, blockIdx.x; ty, tx in threadIdx.y, x:
        with T.block("matmul"):          ->          acc[4 * 4] = 0
            C[vi, vj] += A[vi, vk] * B[vk, vj]       for ko in range(ceildiv(K, 16)):
                                                         A_shared[16, 68] (transposed), B_shared[16, 64] <- guarded copies; sync
                                                         for kk, a, b: acc[a*4+b] += A_shared[kk, 4ty+a] * B_shared[kk, 4tx+b]
                                                         sync
                                                     if in range: C[by*64+4ty+a, bx*64+4tx+b] = acc[a*4+b]
"""

from __future__ import annotations

import math

from ...diagnostics import UserError
from ...ir import dtype as dt
from ...ir import tir
from ...records import record
from ..loop_nests import uses
from ..rewrite import Rewriter, collect
from ..schedule.nest import Nest
from ..schedule.reduction_order import reduction_parts
from .launch import allocate, as_index, ceildiv, imm, launch, scoped_buffer, product, seq, split_index, sync

TILE_KEY = "tir.gpu_matmul_tile"  # pass config: "SIDExREGxK_STEP"
SHARED_BYTES = 48 * 1024  # static __shared__ memory a block may declare


@record
class MatmulTile:
    side: int  # threads per block along each of x and y
    reg: int  # register tile per thread: reg x reg outputs
    k_step: int  # k values per shared-memory tile
    contiguous: bool = False  # a thread's outputs adjacent (ty*reg + a), A transposed in shared memory

    @property
    def outputs(self) -> int:
        """Rows (and columns) of C per block."""
        return self.side * self.reg

    @staticmethod
    def parse(text: str) -> "MatmulTile":
        """"16x8x8" -> MatmulTile(16, 8, 8); a UserError naming TILE_KEY for anything else or a
        shape the kernel cannot take (each thread copies whole elements; shared memory bounded)."""
        parts = str(text).lower().split("x")
        contiguous = parts[-1].endswith("c")
        parts[-1] = parts[-1].removesuffix("c")
        try:
            tile = MatmulTile(*(int(part) for part in parts), contiguous) if len(parts) == 3 else None
        except ValueError:
            tile = None
        if tile and min(tile.side, tile.reg, tile.k_step) > 0 and tile.outputs * tile.k_step % tile.side ** 2 == 0:
            return tile
        raise UserError(f"pass config {TILE_KEY}: expected SIDExREGxK_STEP with SIDE*REG*K_STEP a multiple of "
                        f"SIDE*SIDE (e.g. 16x4x16), got '{text}'")

    def shared_bytes(self, dtype_bytes: int) -> int:
        return (2 * self.outputs + A_PAD * self.contiguous) * self.k_step * dtype_bytes


A_PAD = 4  # columns after each k row of a transposed A tile: fewer bank conflicts, rows still 16-byte aligned
SMALL = MatmulTile(16, 4, 16, contiguous=True)
LARGE = MatmulTile(16, 8, 32, contiguous=True)
LARGE_FROM = 2048 * 2048  # outputs from which LARGE still gives 256 blocks


def tile_of(context) -> MatmulTile | None:
    """The tile the pass config of `context` (a PassContext) asks for; None: chosen by size."""
    text = context.get_config(TILE_KEY) if context is not None else None
    return None if text is None else MatmulTile.parse(text)


def _tile(nest: Nest, operands, options) -> MatmulTile:
    """The configured tile, else LARGE for a static output of at least LARGE_FROM elements."""
    if options.matmul_tile is not None:
        return options.matmul_tile
    spatial = [operands[1], operands[2], *(iv.var for iv in operands[6])]
    iv_of = {iv.var: iv for iv in nest.block.iter_vars}
    extents = [nest.loop_of(iv_of[var]).extent for var in spatial]
    if all(isinstance(e, tir.IntImm) for e in extents) and math.prod(e.value for e in extents) >= LARGE_FROM:
        return LARGE
    return SMALL


def matmul_operands(nest: Nest):
    """(store, i, j, k, A-load, B-load, batch iters) when the nest is a matmul, else None."""
    parts = reduction_parts(nest)
    if parts is None:
        return None
    store, spatial, reduce = parts
    if len(reduce) != 1 or len(store.indices) < 2 or not isinstance(store.value, tir.Add):
        return None
    i, j, k = store.indices[-2], store.indices[-1], reduce[0].var
    loads = collect(store.value.b, tir.BufferLoad)
    if len(loads) != 2 or any(load.buffer is store.buffer for load in loads):
        return None
    a_loads = [ld for ld in loads if uses(ld, i) and uses(ld, k) and not uses(ld, j)]
    b_loads = [ld for ld in loads if uses(ld, j) and uses(ld, k) and not uses(ld, i)]
    if len(a_loads) != 1 or len(b_loads) != 1:
        return None
    batch = [iv for iv in spatial if iv.var is not i and iv.var is not j]
    return store, i, j, k, a_loads[0], b_loads[0], batch


MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y


def matches(nest: Nest, options) -> bool:
    operands = matmul_operands(nest)
    if operands is None:
        return False
    tile = _tile(nest, operands, options)
    if options.threads < tile.side * tile.side:
        return False
    dtype_bytes = max(dt.itemsize(load.buffer.dtype) for load in operands[4:6])
    if tile.shared_bytes(dtype_bytes) > SHARED_BYTES:
        return False
    rows = nest.loop_of(next(iv for iv in nest.block.iter_vars if iv.var is operands[1])).extent
    return not (isinstance(rows, tir.IntImm) and -(-rows.value // tile.outputs) > MAX_GRID_Y)


@record
class TileGrid:
    """The blocks of a tiled matmul `nest` (its `operands`): blockIdx.y over the row tiles,
    blockIdx.x over the batch times the column tiles (x allows 2^31 - 1 blocks where y
    allows 65535). Both GPU matmul rules (this one and matmul_mma.py) build on it."""

    nest: Nest
    operands: tuple  # matmul_operands(nest)
    name: str  # the kernel's name prefix for new variables
    extent: dict  # i, j and k -> their extents in the index dtype
    batch_extents: list
    column_tiles: tir.PrimExpr
    tile: int  # rows and columns of C per block
    index: str  # the index dtype

    @staticmethod
    def of(nest: Nest, operands, tile: int, name: str) -> "TileGrid":
        _, i, j, k, _, _, batch = operands
        index = nest.loops[0].loop_var.dtype
        iv_of = {iv.var: iv for iv in nest.block.iter_vars}
        extent = {var: as_index(nest.loop_of(iv_of[var]).extent, index) for var in (i, j, k)}
        batch_extents = [as_index(nest.loop_of(iv).extent, index) for iv in batch]
        return TileGrid(nest, operands, name, extent, batch_extents, ceildiv(extent[j], tile, index), tile, index)

    def grid(self) -> dict:
        return {"x": product([*self.batch_extents, self.column_tiles], self.index),
                "y": ceildiv(self.extent[self.operands[1]], self.tile, self.index)}

    def block(self, ix: dict) -> "TileBlock":
        """The block the thread-binding variables `ix` ("blockIdx.x", ...) name."""
        return TileBlock(self, ix)


class TileBlock:
    """One block of a TileGrid: the values of the matmul's iterators at its accesses, its
    copies of a slice of A or B to shared memory, and its guarded stores to C."""

    def __init__(self, grid: TileGrid, ix: dict):
        self.grid = grid
        batch = grid.operands[6]
        bx = tir.FloorMod(ix["blockIdx.x"], grid.column_tiles) if batch else ix["blockIdx.x"]
        self.batch_values = dict(zip((iv.var for iv in batch), split_index(
            tir.FloorDiv(ix["blockIdx.x"], grid.column_tiles), grid.batch_extents, grid.index))) if batch else {}
        tile = imm(grid.index, grid.tile)
        self.row0, self.col0 = tir.Mul(ix["blockIdx.y"], tile), tir.Mul(bx, tile)

    def at(self, chosen: dict) -> dict:
        """Iterator values for an access: `chosen` for i/j/k, this block's batch, 0 for the rest."""
        index = self.grid.index
        return {**{iv.var: imm(index, 0) for iv in self.grid.nest.block.iter_vars}, **self.batch_values, **chosen}

    def copy(self, shared, operand: str, k0, k_step: int, thread, threads: int, transposed=False) -> tir.Stmt:
        """shared[r, q] (shared[q, r] when `transposed`) = A[row0 + r, k0 + q] for operand "A" (a
        tile x k_step slice) or B[k0 + r, col0 + q] for "B" (k_step x tile), 0 outside the
        matrices. The block's `threads` threads (`thread` the linear id) copy several elements
        each, adjacent threads adjacent q, so that global reads coalesce."""
        grid = self.grid
        _, i, j, k, a_load, b_load, _ = grid.operands
        rows, cols = (grid.tile, k_step) if operand == "A" else (k_step, grid.tile)
        part = tir.Var(f"{grid.name}_{shared.name}_l", grid.index)
        flat = tir.Add(tir.Mul(part, imm(grid.index, threads)), thread)
        r, q = tir.FloorDiv(flat, imm(grid.index, cols)), tir.FloorMod(flat, imm(grid.index, cols))
        if operand == "A":
            load, (first, second) = a_load, ((i, tir.Add(self.row0, r)), (k, tir.Add(k0, q)))
        else:
            load, (first, second) = b_load, ((k, tir.Add(k0, r)), (j, tir.Add(self.col0, q)))
        inside = tir.And(tir.LT(first[1], grid.extent[first[0]]), tir.LT(second[1], grid.extent[second[0]]))
        loaded = grid.nest.bound(tir.Evaluate(load), self.at(dict((first, second)))).value
        where = (q, r) if transposed else (r, q)
        stmt = tir.IfThenElse(inside, tir.BufferStore(shared, loaded, where),
                              tir.BufferStore(shared, tir.const(0, shared.dtype), where))
        return tir.For(part, imm(grid.index, 0), imm(grid.index, rows * cols // threads), "unrolled", stmt)

    def store(self, row, col, value) -> tir.Stmt:
        """C[row, col] = value where (row, col) lies inside C."""
        grid = self.grid
        store, i, j = grid.operands[:3]
        return tir.IfThenElse(tir.And(tir.LT(row, grid.extent[i]), tir.LT(col, grid.extent[j])),
                              grid.nest.bound(store, self.at({i: row, j: col})).with_fields(value=value))


class _ReplaceLoads(Rewriter):
    def __init__(self, replacements: dict):
        self.replacements = replacements

    def visit_BufferLoad(self, load):
        return self.replacements.get(id(load), load)


def apply(nest: Nest, options, name: str) -> tir.Stmt:
    operands = matmul_operands(nest)
    store, i, j, k, a_load, b_load, _ = operands
    shape = _tile(nest, operands, options)
    side, reg, k_step, tile = shape.side, shape.reg, shape.k_step, shape.outputs
    contiguous = shape.contiguous
    blocks = TileGrid.of(nest, operands, tile, name)
    index, extent = blocks.index, blocks.extent

    def c(value: int) -> tir.IntImm:
        return imm(index, value)

    def own(thread, offset):
        """The row (column) of this thread's `offset`-th output within the block's tile."""
        if contiguous:
            return tir.Add(tir.Mul(thread, c(reg)), offset)
        return tir.Add(thread, tir.Mul(c(side), offset))

    def body(ix):
        tx, ty = ix["threadIdx.x"], ix["threadIdx.y"]
        block = blocks.block(ix)
        ko, kk = tir.Var(f"{name}_ko", index), tir.Var(f"{name}_kk", index)
        acc = scoped_buffer(f"{name}_acc", store.buffer.dtype, (reg * reg,))
        a_shape = (k_step, tile + A_PAD) if contiguous else (tile, k_step)
        a_shared = scoped_buffer(f"{name}_A_shared", a_load.buffer.dtype, a_shape, scope="shared")
        b_shared = scoped_buffer(f"{name}_B_shared", b_load.buffer.dtype, (k_step, tile), scope="shared")

        def register_tile(make_stmt) -> tir.Stmt:
            """for a, b in unrolled reg x reg: make_stmt(a, b, acc index, row of C, column of C)."""
            a, b = tir.Var(f"{name}_a", index), tir.Var(f"{name}_b", index)
            row, col = tir.Add(block.row0, own(ty, a)), tir.Add(block.col0, own(tx, b))
            stmt = make_stmt(a, b, tir.Add(tir.Mul(a, c(reg)), b), row, col)
            return tir.For(a, c(0), c(reg), "unrolled", tir.For(b, c(0), c(reg), "unrolled", stmt))

        def accumulate(a, b, acc_index, row, col):
            term = _ReplaceLoads({
                id(a_load): tir.BufferLoad(a_shared, (kk, own(ty, a)) if contiguous else (own(ty, a), kk)),
                id(b_load): tir.BufferLoad(b_shared, (kk, own(tx, b))),
            }).visit(store.value.b)
            return tir.BufferStore(acc, tir.Add(tir.BufferLoad(acc, (acc_index,)), term), (acc_index,))

        def initialize(a, b, acc_index, row, col):
            return tir.BufferStore(acc, nest.bound(nest.block.init, block.at({i: row, j: col})).value, (acc_index,))

        def write(a, b, acc_index, row, col):
            return block.store(row, col, tir.BufferLoad(acc, (acc_index,)))

        thread, k0 = tir.Add(tir.Mul(ty, c(side)), tx), tir.Mul(ko, c(k_step))
        steps = tir.For(ko, c(0), ceildiv(extent[k], k_step, index), "serial", seq(
            block.copy(a_shared, "A", k0, k_step, thread, side * side, transposed=contiguous),
            block.copy(b_shared, "B", k0, k_step, thread, side * side),
            sync(), tir.For(kk, c(0), c(k_step), "unrolled", register_tile(accumulate)), sync()))
        body = seq(register_tile(initialize), steps, register_tile(write))
        return allocate(a_shared, allocate(b_shared, allocate(acc, body)))
    return launch(index, name, blocks.grid(), {"x": c(side), "y": c(side)}, body)
