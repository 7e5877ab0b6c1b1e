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

so AVX2 gets BLIS's Haswell shape (6 x 16 floats) and AVX-512 4 x 64 floats. (Without
the upper bound 32 registers give 6 x 4, 24 per 10: on the 2-core AVX-512 Xeon it ran
the 64- and 128-row layers of the bench models about 5% slower than 4 x 4 and 8 x 2,
docs/tir-lowering.md.) A weight packed for another target (a `.vms` built without
--target) is read by the best tile whose width divides its panel width.

The blocking: a k block of the B panel (k steps x the tile's width) fills at most
L1_SHARE of L1, the rest left to A's broadcast rows and C's tile; a row block of A
(at most ROW_BLOCK_ROWS rows x k block) at most L2_SHARE of L2, so that it stays there
while the chunk's column tiles read it
(one with AVX-512's 64-column tiles, four with AVX2's: CHUNK_COLUMNS).

    register_tile_shape(CpuInfo.for_level("x86-64-v3"))  ->  TileShape(rows=6, vectors=2, lanes=8)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_K_BLOCK = 256  # k steps per block, at most: longer blocks measured no faster (C reloads are rare already)
MIN_K_BLOCK = 32
L1_SHARE = 2 / 3  # of L1 for the B panel's k block (48 KiB L1, 32 columns: 256 steps)
ROW_BLOCK_ROWS = 256  # rows of A per row block, at most (1024 measured slower with a 2 MiB L2)
L2_SHARE = 1 / 2  # of L2 for the row block of A, at most


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


def blocking(cpu, shape: TileShape) -> Blocking:
    steps = k_block(cpu, shape.width)
    return Blocking(steps, max(1, CHUNK_COLUMNS // shape.width), row_block_tiles(cpu, shape.rows, steps))


def k_block(cpu, width: int) -> int:
    """k steps per block of a B panel `width` columns wide: L1_SHARE of L1, at most MAX_K_BLOCK,
    a multiple of 8."""
    steps = int(cpu.l1d_bytes * L1_SHARE) // (width * 4)
    return max(MIN_K_BLOCK, min(MAX_K_BLOCK, steps // 8 * 8))


def row_block_tiles(cpu, rows: int, k_steps: int) -> int:
    """Row tiles of `rows` rows per row block: at most ROW_BLOCK_ROWS rows of A (k_steps each),
    in at most L2_SHARE of L2."""
    return max(1, min(ROW_BLOCK_ROWS, int(cpu.l2_bytes * L2_SHARE) // (k_steps * 4)) // rows)


__all__ = ["Blocking", "TileShape", "blocking", "k_block", "register_tile_shape", "row_block_tiles"]
