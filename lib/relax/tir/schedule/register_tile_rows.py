"""Which rows of C a matmul's register tiles cover: the tile heights over M, and where the last tile may overlap.

M rows in tiles of `rows` (register_tile.py) leave M % rows over. Two ways to cover
them: tiles a row shorter at the end (row_parts: 64 = 9 x 6 + 2 x 5), or the last full
tile moved up to end at row M, recomputing a few rows the tile before it computed
(overlapping: 128 rows as 22 tiles of 6, the last from row 122). Each tile height is one
more copy of the tile's code, unrolled by LLVM (the transformer's matmuls: about a
quarter of their LLVM time), so the overlap is taken where it is correct (recomputable:
the tile starts from a constant and reads nothing it stores; in k blocks register_tile.py
stores the recomputed rows as they are) and cheap (at most M / OVERLAP_WASTE rows
recomputed).
"""

from __future__ import annotations

from ...ir import tir
from ..rewrite import collect
from .nest import Nest
from .register_tile_edges import uniform_init

OVERLAP_WASTE = 16  # an overlapping last tile recomputes at most M / OVERLAP_WASTE rows


def row_parts(m: int, rows: int) -> list[tuple[int, int, int]]:
    """(rows per tile, first row, tiles) covering M rows: tiles of `rows`, the last ones a row
    shorter where M is no multiple of it (64 = 9 x 6 + 2 x 5: no tile much shorter than the
    rest, whose registers would sit idle), or one shorter tile where M is too small for that
    (13 = 2 x 6 + 1)."""
    short = (rows - m % rows) % rows  # tiles of rows - 1
    full = (m - short * (rows - 1)) // rows
    if short and rows > 1 and full >= 0:
        return ([(rows, 0, full)] if full else []) + [(rows - 1, full * rows, short)]
    whole = m // rows * rows
    return [(rows, 0, m // rows)] + ([(m - whole, whole, 1)] if whole < m else [])


def overlapping(parts: list) -> list:
    """The rows of `parts` (row_parts') as tiles of the first part's height only, the last one
    moved up to end at M (128 rows: 22 tiles of 6, the last from row 122), where that
    recomputes at most 1 / OVERLAP_WASTE of M: one tile loop instead of two, each with its
    tile written out by LLVM's unrolling, for a few more multiply-adds. Else `parts`."""
    if len(parts) < 2:
        return parts
    rows, m = parts[0][0], sum(height * tiles for height, _, tiles in parts)
    tiles = -(-m // rows)
    return [(rows, 0, tiles)] if (tiles * rows - m) * OVERLAP_WASTE <= m else parts


def recomputable(nest: Nest, x, y, epilogues) -> bool:
    """Whether a row tile may be computed twice (overlapping) with the same result: its
    accumulators start from a constant (not from C) and no buffer it reads (A, B, the
    epilogues' other operands) is the one it stores to (a kernel updating a parameter in
    place). Where K is cut into k blocks, later blocks add their sums to C: register_tile.py
    keeps the recomputed rows' values there, so that they are not added twice."""
    if uniform_init(nest) is None:
        return False
    stored = epilogues[-1].buffer if epilogues else nest.block.body.buffer
    read = [x.buffer, y.buffer] + [load.buffer for stage in epilogues
                                   for load in collect(stage.store.value, tir.BufferLoad)
                                   if load.buffer is not stage.previous]
    return all(buffer is not stored for buffer in read)


def row_blocks(tiles: int, block_tiles: int, overlaps: bool) -> int:
    """Row blocks of `block_tiles` tiles over `tiles` row tiles; an overlapping last tile
    joins the last block rather than make one of its own."""
    return -(-(tiles - overlaps) // block_tiles)


def loop_count(total: int, per: int, outer: tir.Var, const) -> tir.PrimExpr:
    """The iterations of a loop over `total` items in groups of `per`, in group `outer` (a
    loop variable): `per`, fewer in the last group."""
    return const(per) if total % per == 0 else tir.Min(const(per), const(total) - outer * const(per))


def tiles_in_block(tiles: int, block_tiles: int, blocks: int, block: tir.Var, const) -> tir.PrimExpr:
    """The row tiles of row block `block` (a loop variable; none when `blocks` is 1):
    `block_tiles`, fewer in the last block (loop_count), or one more there (an overlapping
    last tile)."""
    if blocks == 1:
        return const(tiles)
    last = tiles - (blocks - 1) * block_tiles
    if last <= block_tiles:
        return loop_count(tiles, block_tiles, block, const)
    return tir.Select(tir.EQ(block, const(blocks - 1)), const(last), const(block_tiles))
