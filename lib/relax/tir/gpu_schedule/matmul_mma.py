"""Rule: float16 matmul on the tensor cores (`mma.sync` m16n8k16, sm_80 and newer), when asked.

Matches the nests the matmul rule matches (matmul.py's operands) when A, B and C are
float16, the summed term is the plain product of the two loads, the init is 0, the pass
config TENSOR_CORES_KEY is on and the target's arch is sm_80 or newer. A block of 4 warps
(threadIdx.x the lane, threadIdx.y the warp) computes a 64 x 64 tile of C, each warp a
32 x 32 quarter of it: 2 x 4 tiles of 16 x 8, each one `tir.ptx_mma` per 16 values of k.
For each K_STEP-wide slice of k the block copies A's 64 x K_STEP tile and B's K_STEP x 64
tile, transposed, to `__shared__` memory (zero outside the matrices, rows padded by PAD),
synchronizes, and each warp loads its fragments from there in the layout PTX defines for
m16n8k16 (with group g = lane / 4 and t = lane % 4):

    A, 16 x 16, row-major:  a[e] = A[g + 8 * (e // 2 % 2), 2t + e % 2 + 8 * (e // 4)]   e < 8
    B, 16 x 8, col-major:   b[e] = B[2t + e % 2 + 8 * (e // 2), g]                       e < 4
    C and D, 16 x 8:        c[e] = C[g + 8 * (e // 2), 2t + e % 2]                       e < 4

The accumulators are float16, as C is (R.matmul accumulates in its output dtype); each
mma rounds once where the scalar rule rounds at every k. Stores are guarded. Off by
default: the GPU simulator runs it (tir/gpu_simulator.py), no GPU has yet.
"""

from __future__ import annotations

import itertools
import re

from ...ir import tir
from .launch import allocate, ceildiv, imm, launch, scoped_buffer, seq, sync
from .matmul import MAX_GRID_Y, TileGrid, matmul_operands

TENSOR_CORES_KEY = "tir.gpu_tensor_cores"  # pass config: 1 lets float16 matmuls use mma.sync
F16 = "float16"
WARPS_M, WARPS_N = 2, 2  # warps of a block along rows and columns of C
M_TILES, N_TILES = 2, 4  # 16 x 8 tiles of a warp along rows and columns
TILE = 64  # rows and columns of C per block
K_STEP = 32  # k values per shared-memory tile
PAD = 8  # halves after each shared row: fewer bank conflicts, rows still 16-byte aligned
LANES = 32


def enabled(context, target) -> bool:
    """Whether the pass config of `context` turns the rule on and `target` has mma.sync m16n8k16."""
    value = context.get_config(TENSOR_CORES_KEY, False) if context is not None else False
    if str(value).strip().lower() in ("0", "false", "off", "no", ""):
        return False
    number = re.match(r"sm_(\d+)", str(getattr(target, "arch", "") or ""))
    return number is not None and int(number.group(1)) >= 80  # sm_90a, sm_100 too


def _zero(expr) -> bool:
    return isinstance(expr, (tir.FloatImm, tir.IntImm)) and expr.value == 0


def matches(nest, options) -> bool:
    if not options.tensor_cores or options.threads < WARPS_M * WARPS_N * LANES:
        return False
    operands = matmul_operands(nest)
    if operands is None:
        return False
    store, i, _, _, a_load, b_load, _ = operands
    if {store.buffer.dtype, a_load.buffer.dtype, b_load.buffer.dtype} != {F16}:
        return False
    term = store.value.b
    if not (isinstance(term, tir.Mul) and {id(term.a), id(term.b)} == {id(a_load), id(b_load)}):
        return False
    if not _zero(nest.block.init.value):
        return False
    rows = nest.loop_of(next(iv for iv in nest.block.iter_vars if iv.var is i)).extent
    return not (isinstance(rows, tir.IntImm) and -(-rows.value // TILE) > MAX_GRID_Y)


def a_fragment_at(e: int) -> tuple[int, int]:
    """(row offset from g, column offset from 2t) of element `e` of an A fragment."""
    return 8 * (e // 2 % 2), e % 2 + 8 * (e // 4)


def b_fragment_at(e: int) -> int:
    """The k offset from 2t of element `e` of a B fragment (its column is g)."""
    return e % 2 + 8 * (e // 2)


def c_fragment_at(e: int) -> tuple[int, int]:
    """(row offset from g, column offset from 2t) of element `e` of a C or D fragment."""
    return 8 * (e // 2), e % 2


def _sum(c, *terms):
    """The sum of expressions and ints (made index constants by `c`)."""
    total = terms[0]
    for term in terms[1:]:
        total = tir.Add(total, term if isinstance(term, tir.PrimExpr) else c(term))
    return total


class _Warp:
    """One warp's 32 x 32 quarter of the block's tile: where its lanes read their fragments
    in shared memory, its mmas, and where its accumulators go in C."""

    def __init__(self, c, lane, warp, buffers):
        self.c = c
        self.group, self.pair = tir.FloorDiv(lane, c(4)), tir.Mul(tir.FloorMod(lane, c(4)), c(2))
        self.row = tir.Mul(tir.FloorDiv(warp, c(WARPS_N)), c(M_TILES * 16))
        self.col = tir.Mul(tir.FloorMod(warp, c(WARPS_N)), c(N_TILES * 8))
        self.a_shared, self.b_shared, self.a_frag, self.b_frag, self.acc = buffers

    def k16_step(self, s: int) -> list:
        """The fragments of the s-th 16 values of k in the shared tiles, then the 8 mmas."""
        c, stmts = self.c, []
        for mi, e in itertools.product(range(M_TILES), range(8)):
            rows, cols = a_fragment_at(e)
            at = (_sum(c, self.row, mi * 16 + rows, self.group), _sum(c, self.pair, s * 16 + cols))
            stmts.append(tir.BufferStore(self.a_frag, tir.BufferLoad(self.a_shared, at), (c(mi * 8 + e),)))
        for ni, e in itertools.product(range(N_TILES), range(4)):
            at = (_sum(c, self.col, ni * 8, self.group), _sum(c, self.pair, s * 16 + b_fragment_at(e)))
            stmts.append(tir.BufferStore(self.b_frag, tir.BufferLoad(self.b_shared, at), (c(ni * 4 + e),)))
        for mi, ni in itertools.product(range(M_TILES), range(N_TILES)):
            stmts.append(tir.Evaluate(tir.Call("int32", "tir.ptx_mma", (
                *(tir.StringImm(word) for word in ("m16n8k16", "row", "col", "fp16", "fp16", "fp16")),
                self.a_frag.data, c(mi * 8), self.b_frag.data, c(ni * 4), self.acc.data,
                c((mi * N_TILES + ni) * 4), tir.const(False, "bool")))))
        return stmts

    def outputs(self, row0, col0):
        """(accumulator index, row of C, column of C) of each of this thread's 32 outputs."""
        c = self.c
        for mi, ni, e in itertools.product(range(M_TILES), range(N_TILES), range(4)):
            rows, cols = c_fragment_at(e)
            yield ((mi * N_TILES + ni) * 4 + e, _sum(c, row0, self.row, mi * 16 + rows, self.group),
                   _sum(c, col0, self.col, ni * 8 + cols, self.pair))


def apply(nest, options, name: str) -> tir.Stmt:
    operands = matmul_operands(nest)
    k, a_load, b_load = operands[3:6]
    blocks = TileGrid.of(nest, operands, TILE, name)
    index = blocks.index
    threads = WARPS_M * WARPS_N * LANES

    def c(value: int) -> tir.IntImm:
        return imm(index, value)

    def body(ix):
        lane, warp = ix["threadIdx.x"], ix["threadIdx.y"]
        block = blocks.block(ix)
        ko = tir.Var(f"{name}_ko", index)
        buffers = (scoped_buffer(f"{name}_A_shared", F16, (TILE, K_STEP + PAD), scope="shared"),
                   scoped_buffer(f"{name}_B_shared", F16, (TILE, K_STEP + PAD), scope="shared"),  # [column][k]
                   scoped_buffer(f"{name}_A_frag", F16, (M_TILES * 8,)),
                   scoped_buffer(f"{name}_B_frag", F16, (N_TILES * 4,)),
                   scoped_buffer(f"{name}_acc", F16, (M_TILES * N_TILES * 4,)))
        warp_tiles = _Warp(c, lane, warp, buffers)
        acc = buffers[4]
        thread, k0 = _sum(c, tir.Mul(warp, c(LANES)), lane), tir.Mul(ko, c(K_STEP))
        zero = [tir.BufferStore(acc, tir.const(0, F16), (c(e),)) for e in range(M_TILES * N_TILES * 4)]
        steps = tir.For(ko, c(0), ceildiv(blocks.extent[k], K_STEP, index), "serial", seq(
            block.copy(buffers[0], "A", k0, K_STEP, thread, threads),
            block.copy(buffers[1], "B", k0, K_STEP, thread, threads, transposed=True),
            sync(), *[stmt for s in range(K_STEP // 16) for stmt in warp_tiles.k16_step(s)], sync()))
        writes = [block.store(row, col, tir.BufferLoad(acc, (c(position),)))
                  for position, row, col in warp_tiles.outputs(block.row0, block.col0)]
        stmt = seq(*zero, steps, *writes)
        for buffer in buffers:
            stmt = allocate(buffer, stmt)
        return stmt
    return launch(index, name, blocks.grid(), {"x": c(LANES), "y": c(WARPS_M * WARPS_N)}, body)
