"""The register tile of a float32 matmul, and its cache blocking, derived from the CPU model.

A tile keeps `rows` x `vectors` accumulator vectors of C in registers. Each k step
loads `vectors` vectors of B and broadcasts `rows` elements of A (one register, reused
row after row), then does rows * vectors fused multiply-adds. The rule:

- registers: rows * vectors accumulators + vectors of B + 1 broadcast fit the
  target's vector registers (and one temporary more without FMA: the product);
- latency: at least `chains` (FMA latency x units) independent accumulators, and at
  most twice that: the FMA units are busy by then, and a bigger tile only leaves more
  rows over at M's edge and a wider B panel in L1 (shorter k blocks);
- vectors a power of two, so that the tile's width divides the power-of-two widths
  of layers and the panels of weights packed at build time (no ragged column edge);
- among those, the most FMAs per load, rows * vectors / (rows + vectors); on a tie,
  fewer vectors (a narrower panel of B in L1).

    16 registers (SSE, AVX2): 6 x 2 (12 FMAs per 8 loads)      4 x 2: 8 per 6
    32 registers (AVX-512, NEON, RVV): 4 x 4 (16 per 8)         8 x 2: 16 per 10

(riscv64 without V has 32 float registers of one lane: 4 x 4 scalars.)

so AVX2 gets BLIS's Haswell shape (6 x 16 floats) and AVX-512 4 x 64 floats. (Without
the upper bound 32 registers give 6 x 4, 24 per 10: on the 2-core AVX-512 Xeon it ran
the 64- and 128-row layers of the bench models about 5% slower than 4 x 4 and 8 x 2,
docs/tir-lowering.md.) A weight packed for another target (a `.vms` built without
--target) is read by the best tile whose width divides its panel width.

The blocking: a k block of the B panel (k steps x the tile's width) fills at most
L1_SHARE of L1, the rest left to A's broadcast rows and C's tile, where the tile reads
more of B per cycle of its FMAs than L2 would feed (AVX-512's 4 x 64: 32 bytes a cycle on
two FMA units). A tile that reads at most L2_PANEL_BYTES a cycle (AVX2's 6 x 16: 10.7)
runs as fast from L2: where it packs B per call, its k block is longer, the chunk's
panels (CHUNK_COLUMNS wide) in L2_PANEL_SHARE of L2, so that C is read and written and
the panels packed fewer times (panel_in_l2; a weight packed at build time keeps the L1
block, longer ones measured no faster there). A row
block of A (at most ROW_BLOCK_ROWS rows x k block) takes at most L2_SHARE of L2, so that
it stays there while the chunk's column tiles read it (one with AVX-512's 64-column
tiles, four with AVX2's).

    register_tile_shape(CpuInfo.for_level("x86-64-v3"))  ->  TileShape(rows=6, vectors=2, lanes=8)
"""

from __future__ import annotations

import math

from ...records import record

MAX_K_BLOCK = 256  # k steps per block of a panel in L1, at most: longer blocks measured no faster on AVX-512
MIN_K_BLOCK = 32
L1_SHARE = 2 / 3  # of L1 for the B panel's k block (48 KiB L1, 32 columns: 256 steps)
L2_PANEL_BYTES = 16  # B bytes a tile reads per cycle of its FMAs, at most, for its panel to stay in L2
L2_PANEL_SHARE = 1 / 2  # of L2 for a chunk's panels of one k block, when they stay in L2
MAX_L2_K_BLOCK = 1024  # k steps per block of a panel in L2, at most
ROW_BLOCK_ROWS = 256  # rows of A per row block, at most (1024 measured slower with a 2 MiB L2)
L2_SHARE = 1 / 2  # of L2 for the row block of A, at most


@record
class TileShape:
    rows: int
    vectors: int
    lanes: int

    @property
    def width(self) -> int:
        """Columns of C (and of a B panel) per tile."""
        return self.vectors * self.lanes

    def registers(self, fma: bool = True) -> int:
        """Vector registers the tile's k step keeps live."""
        return self.rows * self.vectors + self.vectors + 1 + (0 if fma else 1)


def register_tile_shape(cpu, panel_width: int | None = None) -> TileShape | None:
    """The tile for `cpu` (a cpu.CpuInfo); with `panel_width`, for B already packed in panels
    of that many columns: the tile's width must divide it (None when no tile fits)."""
    lanes = cpu.lanes if panel_width is None else math.gcd(cpu.lanes, panel_width)
    best, best_score = None, None
    vectors = 1
    while vectors * lanes <= (panel_width or vectors * lanes):
        rows = 1
        while (TileShape(rows + 1, vectors, lanes).registers(cpu.fma) <= cpu.vector_registers
               and (rows + 1) * vectors <= 2 * cpu.chains):
            rows += 1
        shape = TileShape(rows, vectors, lanes)
        score = (rows * vectors >= min(cpu.chains, cpu.vector_registers // 2), rows * vectors / (rows + vectors))
        fits = shape.registers(cpu.fma) <= cpu.vector_registers and (panel_width is None or panel_width % shape.width == 0)
        if fits and (best_score is None or score > best_score):
            best, best_score = shape, score
        vectors *= 2
        if TileShape(1, vectors, lanes).registers(cpu.fma) > cpu.vector_registers:
            break
    return best


@record
class Blocking:
    k_steps: int  # per k block, at most (K is cut into equal blocks)
    chunk_tiles: int  # column tiles per parallel chunk, at most
    row_block_tiles: int  # row tiles per row block


# Columns per parallel chunk, at most: one AVX-512 tile. Many small chunks let the pool's
# threads balance (a thread that shares its core takes fewer) and keep a chunk's columns of C
# in L2 across k blocks; A's row block is then read from L3 once per chunk, which costs
# little beside the tiles' FMAs (512 columns: 1-11% slower at 1024^3 on a 2-core Zen 4 whose
# second core was shared, docs/performance-notes.md).
CHUNK_COLUMNS = 64


def blocking(cpu, shape: TileShape, packed_per_call: bool = True, k_extent: int | None = None) -> Blocking:
    """The blocking of a matmul whose B panels are packed per call, or read in place from a
    weight packed at build time (`packed_per_call` False: its k blocks keep the panel in L1,
    longer ones measured no faster there). With a constant K (`k_extent`), K cut into equal
    blocks (784 -> 4 x 196, not 3 x 256 + 16), and the row block sized for the block that runs."""
    steps = k_block(cpu, shape, packed_per_call)
    if k_extent is not None:
        blocks = -(-k_extent // steps)
        steps = -(-k_extent // blocks)
    return Blocking(steps, chunk_tiles(shape), row_block_tiles(cpu, shape.rows, steps))


def chunk_tiles(shape: TileShape) -> int:
    """Column tiles per parallel chunk, at most: CHUNK_COLUMNS wide, at least one tile."""
    return max(1, CHUNK_COLUMNS // shape.width)


def panel_in_l2(cpu, shape: TileShape) -> bool:
    """Whether the tile's B panel may stay in L2: each k step reads width x 4 bytes of B and
    keeps the FMA units busy for rows x vectors / units cycles; at most L2_PANEL_BYTES a cycle,
    L2 feeds it as fast as L1 would."""
    return shape.width * 4 * cpu.fma_units <= L2_PANEL_BYTES * shape.rows * shape.vectors


def k_block(cpu, shape: TileShape, packed_per_call: bool = True) -> int:
    """k steps per block of the tile's B panel, a multiple of 8: the panel in L1_SHARE of L1, at
    most MAX_K_BLOCK; or, for panels packed per call that may stay in L2, the chunk's panels in
    L2_PANEL_SHARE of L2, at most MAX_L2_K_BLOCK."""
    if packed_per_call and panel_in_l2(cpu, shape):
        columns = chunk_tiles(shape) * shape.width
        steps, most = int(cpu.l2_bytes * L2_PANEL_SHARE) // (columns * 4), MAX_L2_K_BLOCK
    else:
        steps, most = int(cpu.l1d_bytes * L1_SHARE) // (shape.width * 4), MAX_K_BLOCK
    return max(MIN_K_BLOCK, min(most, steps // 8 * 8))


def row_block_tiles(cpu, rows: int, k_steps: int) -> int:
    """Row tiles of `rows` rows per row block: at most ROW_BLOCK_ROWS rows of A (k_steps each),
    in at most L2_SHARE of L2."""
    return max(1, min(ROW_BLOCK_ROWS, int(cpu.l2_bytes * L2_SHARE) // (k_steps * 4)) // rows)


__all__ = ["Blocking", "TileShape", "blocking", "k_block", "panel_in_l2", "register_tile_shape", "row_block_tiles"]
