"""Rule: a float32 matmul keeps a rows x (vectors * lanes) tile of C in vector registers.

`C[..., i, j] += A[..., i, k] * B[..., k, j]` (A's access free of j, B's access free
of i with j its last index, one reduction) with constant i and j extents; tiles have
fewer rows when C has fewer. The tile's shape and the blocking come from the target's
CPU model (cpu.py, tile_shape.py): 6 x 2 vectors with 16 vector registers (AVX2: 6 x 16
floats), 4 x 4 with 32 (AVX-512: 4 x 64), the lanes of the target's vectors. The
blocking (figures for a 48 KiB L1, a 2 MiB L2 and the AVX2 tile, 16 columns wide):

- the parallel loop runs over column chunks (at most CHUNK_COLUMNS columns, at least
  MIN_CHUNKS chunks): each thread works on its own columns of B and C, and many small
  chunks let a thread that has its core to itself take more of them;
- K is cut into equal blocks of at most the k block (784 -> 4 x 196);
- per chunk, row block and k block, the block's rows of A (256 x 256 floats) and of C
  stay in L2 while every column tile of the chunk reads them (A is read in place: its
  block is in L2 already, so packing it only adds copies);
- per column tile, the B panel (k block x width floats, 2/3 of L1) is packed with
  whole-vector copies and read by every row tile of the block; with several column
  tiles per chunk (AVX2), the chunk's panels of a k block are packed once, before its
  row blocks, each row of B read across the chunk's width (_chunk_panels);
- per row tile, the accumulators start from the init value (first k block) or from zero
  (the others: one broadcast value, so that the k loop is entered one way), each k step
  broadcasts `rows` elements of A and does rows * vectors vector fused multiply-adds
  against the panel, and the tile is stored once per k block (a later block's sums
  added to C).

Elementwise nests after the product (bias add, relu: the stages of gemv_epilogue.py,
found after inline.py and output_reuse.py have merged them and moved the product into
the output) are applied to the finished sums in registers: the last k block stores
their values instead of the sums, so no pass over C follows (fusable() says when:
constant K and init value, no j-innermost remainder loops; schedule/__init__.py takes
stages without calls only: GELU's erf in every tile slot would double the kernel's code
for no run-time gain).

Each of the tile's statements (start, multiply-add, store) is written once, in a loop of
kind `unrolled` over the tile's slots (rows x vectors: row s // vectors, vector s %
vectors), which LLVM unrolls fully: the lowering passes and the code generator walk one
statement where the tile has 12 (AVX2) or 16 (AVX-512). Unrolled, the accumulators are a
local buffer read and written only as whole vectors at constant offsets, which LLVM keeps
in registers. Where M is no multiple of the rows, the last tile
ends at row M, overlapping the one before, if no read buffer is stored to (in k blocks
it stores the rows it recomputes as they are, or C would add their sums twice); else the
last rows are a few tiles a row shorter, run in the last row block from the same panels
(register_tile_rows.py). The last columns (N %
width) are register_tile_edges.py's.
Within a k block each element of C adds its terms in the order k = 0, 1, ... as the
plain nest does, the fused multiply-add rounding once per term instead of twice; the
blocks' sums are then added in block order (terms grouped by k block, within float32
tolerance).

    for i, j, k in T.grid(M, N, K): C[i, j] += A[i, k] * B[k, j]
->  (AVX2: 6 rows x 2 vectors of 8 lanes)
    for chunk in T.parallel(16):                                 # 4 column tiles each
        for k_outer in range(4):
            panels = T.alloc_local((4 * 256 * 16,))              # the chunk's 4 panels
            for k, j_pack: panels[(j_pack * 256 + k) * 16:...] = B[k0 + k, j0(j_pack):j0(j_pack) + 16]
            for block in range(5):                               # 42 row tiles (252 rows) each
                for j_tile in range(4):
                    for i_tile in range(42):
                        acc = T.alloc_local((96,))               # 6 rows x 2 vectors of 8
                        for s in T.unroll(12): acc[s * 8:s * 8 + 8] = T.Broadcast(0, 8)
                        for k in range(256):
                            for s in T.unroll(12):               # row s // 2, vector s % 2
                                acc[s * 8:...] = T.fma(T.Broadcast(A[i0 + s // 2, k0 + k], 8),
                                                       panels[(j_tile * 256 + k) * 16 + s % 2 * 8:...], acc[s * 8:...])
                        for s in T.unroll(12):
                            C[i0 + s // 2, j0 + s % 2 * 8:...] = acc[s * 8:...] if k_outer == 0 else C[...] + acc[s * 8:...]
                    if block == 4:                               # 1024 rows = 169 x 6 + 2 x 5
                        for i_short in range(2): <the tile of 5 rows i0 .. i0 + 5>
    <columns N // 16 * 16 .. N: register_tile_edges.py>

Figures, and the tile shapes and blockings that did no better: docs/tir-lowering.md.
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir import tir
from ...records import record
from ..convert_blocks_to_loops import allocation
from . import reduction_order, register_tile_rows
from .cpu import CpuInfo
from .matmul_operands import matmul_operands, packed_width
from .nest import Nest, fresh, loop, seq, unrolled
from .register_tile_edges import (
    binder, finish, local_buffers, narrow, narrow_fits, remainder, slot_position, uniform_init,
)
from .tile_shape import TileShape, blocking, register_tile_shape
from .vector_exprs import broadcast, ramp

MIN_CHUNKS = 2  # chunks per matmul, at least (the 2 cores here): fewer tiles per chunk when N is small


def _shape(nest: Nest, cpu) -> TileShape | None:
    """The register tile for `cpu` (tile_shape.py); for a weight packed at build time, one
    whose width divides the panel width."""
    return register_tile_shape(cpu if cpu is not None else CpuInfo(), _prepacked(nest))


def _prepacked(nest: Nest) -> int | None:
    """The panel width when the nest reads B in the panel layout (a weight packed at build time), else None."""
    return packed_width(nest) if matmul_operands(nest) is None else None


def matches(nest: Nest, cpu=None) -> bool:
    prepacked = _prepacked(nest)
    if matmul_operands(nest) is None and not prepacked:
        return False
    shape = _shape(nest, cpu)
    store = nest.block.body
    i_loop, j_loop = (nest.loop_of(_iter(nest, store.indices[p])) for p in (-2, -1))
    if shape is None or not (isinstance(i_loop.extent, tir.IntImm) and isinstance(j_loop.extent, tir.IntImm)
                             and i_loop.extent.value >= 1):
        return False
    if prepacked:  # whole panels only: no narrow or remainder columns read the packed layout
        return j_loop.extent.value % prepacked == 0
    if j_loop.extent.value >= shape.width:
        return True
    # Narrower than one tile (a classifier's 10 outputs): the narrow tiles alone, for several rows.
    k_iter = reduction_order.reduction_parts(nest)[2][0]
    return i_loop.extent.value >= 2 and narrow_fits(nest, _iter(nest, store.indices[-1]), k_iter, 0, shape.lanes)


def _iter(nest: Nest, var: tir.Var) -> tir.IterVar:
    return next(iv for iv in nest.block.iter_vars if iv.var is var)


def _tiles(nest: Nest, cpu, shape: TileShape, operands: tuple, row_parts: list, epilogues=()) -> tir.Stmt:
    """Full register tiles over columns 0 .. N // width * width, in parallel column chunks; in
    each chunk, every part of the rows (rows per tile, first row, row tiles): the full tiles,
    then the last rows' smaller tiles, so that one parallel loop does both."""
    prepacked = _prepacked(nest)
    k_extent = nest.loop_of(operands[3]).extent
    sizes = blocking(cpu if cpu is not None else CpuInfo(), shape, packed_per_call=not prepacked,
                     k_extent=k_extent.value if isinstance(k_extent, tir.IntImm) else None)
    if isinstance(k_extent, tir.IntImm) and register_tile_rows.recomputable(nest, *operands[4:], epilogues):
        row_parts = register_tile_rows.overlapping(row_parts)
    j_loop = nest.loop_of(operands[2])
    column_tiles = j_loop.extent.value // shape.width
    chunk_tiles = min(sizes.chunk_tiles, -(-column_tiles // MIN_CHUNKS))
    chunks = (fresh(j_loop.loop_var, "chunk"), chunk_tiles, column_tiles)
    body = _microkernel(nest, sizes, shape, chunks, *operands, row_parts, prepacked, epilogues=epilogues)
    return loop(chunks[0], tir.IntImm(j_loop.loop_var.dtype, -(-column_tiles // chunk_tiles)), body,
                independent=True)


def _microkernel(nest: Nest, sizes, shape: TileShape, chunks: tuple, outer_values: dict, i_iter, j_iter, k_iter, x, y,
                 row_parts: list, prepacked: int | None, epilogues=()) -> tir.Stmt:
    """One chunk's tiles of every part of the rows (rows per tile, first row, tiles: register_tile_rows.py):
    the first part's in row blocks, the others' (a few shorter tiles) after the last block,
    from the same packed B panels.

    [init C: a non-constant init or a symbolic K]; for row block: for k block:
        for column tile: [pack B]; for row tile: tile
    """
    store, width, lanes, vectors = nest.block.body, shape.width, shape.lanes, shape.vectors
    i_loop, j_loop, k_loop = nest.loop_of(i_iter), nest.loop_of(j_iter), nest.loop_of(k_iter)
    index = i_loop.loop_var.dtype
    const = lambda value: tir.IntImm(index, value)  # noqa: E731
    chunk, chunk_tiles, column_tiles = chunks
    main_tiles = row_parts[0][2]
    block_tiles = min(main_tiles, sizes.row_block_tiles)
    overlaps = row_parts[0][0] * main_tiles > i_loop.extent.value  # an overlapping last tile
    row_blocks = register_tile_rows.row_blocks(main_tiles, block_tiles, overlaps)
    j_tile, row_block = fresh(j_loop.loop_var, "tile"), fresh(i_loop.loop_var, "block")

    in_matrix = lambda tile: chunk * const(chunk_tiles) + tile  # noqa: E731 - a column tile of the chunk, of C
    column_tile = in_matrix(j_tile)
    j0 = column_tile * const(width)
    k_tiles = reduction_order.Tiles(k_loop, sizes.k_steps)

    at = binder(nest, outer_values, i_iter, j_iter, k_iter, const)
    local = local_buffers(store, const)

    # The B panel of this column tile and k block, packed row after row, when several
    # row tiles read it (a single row tile reads B where it is, once). A weight packed
    # at build time (`prepacked`: its panel width, packed_weights.py) is read where it is:
    # its panels are contiguous.
    packed = sum(tiles for _, _, tiles in row_parts) > 1 and not prepacked
    panels = _chunk_panels(packed, chunk_tiles, column_tiles)
    shared_panels = panels > 1
    panel = local("panel", panels * sizes.k_steps * width)

    # vector v of k step k in the panel of column tile `tile` (0: the only panel)
    panel_at = lambda tile, k, v: (ramp((tile * const(sizes.k_steps) + k_tiles.offset(k)) * const(width)  # noqa: E731
                                        + _times(v, lanes, const), lanes),)
    # whole-vector copies of B's k-th row (free of i), from `first_column` on, into the panel of `tile`
    copies = lambda tile, first_column, k: tir.SeqStmt(tuple(tir.BufferStore(  # noqa: E731
        panel, at(y, const(0), ramp(first_column + const(v * lanes), lanes), k), panel_at(tile, k, v))
        for v in range(vectors)))

    def b_vector(k, v):
        if packed:
            return tir.BufferLoad(panel, panel_at(j_tile if shared_panels else const(0), k, v))
        if prepacked:  # packed[j0 // W, k, j0 % W + lanes v ..]: the tile is one panel, or part of one
            tile, offset = ((column_tile, const(0)) if prepacked == width else
                            (tir.FloorDiv(j0, const(prepacked)), tir.FloorMod(j0, const(prepacked))))
            return tir.BufferLoad(y.buffer, (tile, at(y.indices[1], const(0), j0, k), ramp(offset + _times(v, lanes, const), lanes)))
        return at(y, const(0), ramp(j0 + _times(v, lanes, const), lanes), k)

    # With a constant init value the first k block starts from it in registers, the others
    # from zero (their sums are added to C at their end): one broadcast value, so the tile
    # enters its k loop one way only. Starting later blocks from C instead (a branch into the
    # loop) made LLVM spill an accumulator in some tiles. With a symbolic K, which may be 0
    # (no k block runs), C is initialized first instead and every block starts from it.
    init_value = uniform_init(nest) if isinstance(k_loop.extent, tir.IntImm) else None
    blocks_add = init_value is not None and not k_tiles.whole  # later blocks add their sums to C
    start_value = _start_value(init_value, k_tiles) if blocks_add else init_value

    def tile(rows_per_tile, i0, skipped=None):
        """The register tile of rows i0 .. i0 + rows_per_tile: its k loop and its stores; its
        first `skipped` rows (an expression) keep the values they have."""
        acc = local("tile", rows_per_tile * width)
        s = fresh(i_loop.loop_var, "slot")
        r, v = slot_position(s, vectors, const)
        slot = (ramp(s * const(lanes), lanes),)
        # C's indices at row r, vector v (the indices alone: the whole store would be rewritten too)
        c_row = at(store.indices, i0 + r, ramp(j0 + v * const(lanes), lanes))

        def slots(stmt):  # stmt for every vector of every row
            return unrolled(s, rows_per_tile * vectors, stmt)

        # A is read where it is: the row block's rows (256 x k block, 256 KiB) stay in L2 while
        # the chunk's column tiles sweep them, so packing them (a transpose into each row
        # tile's k steps of 8 contiguous elements) would only add copies.
        a_scalar = lambda k: at(x, i0 + r, j0, k)  # noqa: E731
        start = slots(tir.BufferStore(acc, tir.BufferLoad(store.buffer, c_row)
                                      if start_value is None else broadcast(start_value, lanes), slot))

        def step(k):
            a = broadcast(a_scalar(k), lanes)
            total = tir.Call(dt.with_lanes("float32", lanes), "tir.fma", (a, b_vector(k, v), tir.BufferLoad(acc, slot)))
            return slots(tir.BufferStore(acc, total, slot))

        def saves(first: bool, last: bool) -> tir.Stmt:
            value = tir.BufferLoad(acc, slot)
            if blocks_add and not first:
                value = tir.Add(tir.BufferLoad(store.buffer, c_row), value)
            stored = (finish(nest, outer_values, i_iter, j_iter, epilogues, value, i0 + r, j0 + v * const(lanes), lanes)
                      if last and epilogues else store.with_fields(value=value, indices=c_row))
            if skipped is not None:  # the skipped rows' elements stored again as they are
                stored = stored.with_fields(value=tir.Select(tir.GE(r, skipped), stored.value,
                                                             tir.BufferLoad(stored.buffer, stored.indices)))
            return slots(stored)

        ends = _block_ends(k_tiles, k_loop.extent, blocks_add, bool(epilogues), saves)
        return allocation(acc, tir.SeqStmt((start, k_tiles.inner(step), ends)))

    def row_tiles(rows_per_tile, i_start, tiles, blocked):
        """A part's row tiles: in the row block `blocked`, the first part's; else all of them."""
        i_tile = fresh(i_loop.loop_var, "tile")
        local_row = row_block * const(block_tiles) + i_tile if blocked and row_blocks > 1 else i_tile
        extent = (register_tile_rows.tiles_in_block(tiles, block_tiles, row_blocks, row_block, const)
                  if blocked else const(tiles))
        i0 = first = const(i_start) + local_row * const(rows_per_tile)
        skipped = None
        if overlaps and blocked:  # the last tile ends at row M
            i0 = tir.Min(first, const(i_loop.extent.value - rows_per_tile))
            # In k blocks, C += each block's sums: the rows it recomputes would be added twice, so
            # it stores them as they are (a select on the row, no branch; the other tiles skip none).
            skipped = None if k_tiles.whole else first - i0
        return loop(i_tile, extent, tile(rows_per_tile, i0, skipped), independent=True)

    # The shorter tiles run in the last row block, after the full ones, from the same panels.
    shorter = [row_tiles(*part, False) for part in row_parts[1:]]
    if shorter and row_blocks > 1:
        shorter = [tir.IfThenElse(tir.EQ(row_block, const(row_blocks - 1)), seq(shorter), None)]
    block_body = seq([row_tiles(*row_parts[0], True)] + shorter)
    chunk_columns = register_tile_rows.loop_count(column_tiles, chunk_tiles, chunk, const)
    blocks = _RowBlocks(row_block, const(row_blocks), j_tile, chunk_columns)
    if shared_panels:  # k block: pack the chunk's panels; row blocks: column tiles: row tiles
        j_pack = fresh(j_loop.loop_var, "pack")
        packs = k_tiles.inner(lambda k: loop(j_pack, chunk_columns, copies(j_pack, in_matrix(j_pack) * const(width), k)))
        rows_loop = k_tiles.wrap(allocation(panel, tir.SeqStmt((packs, blocks.around(blocks.columns(block_body))))))
    else:  # row blocks: k block: column tiles: [pack the tile's panel]; row tiles
        packed_tiles = allocation(panel, tir.SeqStmt((k_tiles.inner(lambda k: copies(const(0), j0, k)), block_body)))
        rows_loop = blocks.around(k_tiles.wrap(blocks.columns(packed_tiles if packed else block_body)))
    i_init, j_init = fresh(i_loop.loop_var, "init"), fresh(j_loop.loop_var, "init")
    rows = sum(rows_per_tile * tiles for rows_per_tile, _, tiles in row_parts)
    init = loop(i_init, const(rows), loop(j_init, chunk_columns * const(width), at(
        nest.block.init, const(row_parts[0][1]) + i_init, chunk * const(chunk_tiles * width) + j_init)))
    return rows_loop if init_value is not None else tir.SeqStmt((init, rows_loop))


def _times(v, lanes: int, const) -> tir.PrimExpr:
    """The offset of vector `v` (a number, or a tile slot's expression) in lanes."""
    return const(v * lanes) if isinstance(v, int) else v * const(lanes)


def _chunk_panels(packed: bool, chunk_tiles: int, column_tiles: int) -> int:
    """B panels a chunk keeps per k block: with several column tiles, all of its column tiles'
    (packed once per k block before the row blocks, each row of B read across the chunk's
    width), else one (packed per column tile in each row block). Packing reads B a row at a
    time, N floats apart (a new page for every row when N is a multiple of 1024): a row of
    the chunk's width is 4 cache lines, a tile's 1, and B is read once per call instead of
    once per row block. Shared only where the chunk loop is the parallel one (several
    chunks): the row blocks then run in order, after the panels are written."""
    shared = packed and chunk_tiles > 1 and -(-column_tiles // chunk_tiles) > 1
    return chunk_tiles if shared else 1


@record
class _RowBlocks:
    """A chunk's loops over its row blocks and its column tiles."""

    var: tir.Var
    count: tir.IntImm
    column_var: tir.Var
    column_count: tir.PrimExpr

    def around(self, body: tir.Stmt) -> tir.Stmt:
        return body if self.count.value == 1 else loop(self.var, self.count, body, independent=True)

    def columns(self, body: tir.Stmt) -> tir.Stmt:
        return loop(self.column_var, self.column_count, body)


def _narrow_rows(cpu, shape: TileShape, columns: int) -> int:
    """Rows per tile of the last `columns` columns: the tile's rows, more where their vectors
    (one or two) would give fewer than the model's chains of accumulators (10 columns on
    AVX-512: 8 rows of one vector), as far as the registers allow."""
    vectors = -(-columns // shape.lanes)
    rows = max(shape.rows, -(-cpu.chains // vectors))
    while rows > shape.rows and TileShape(rows, vectors, shape.lanes).registers(cpu.fma) > cpu.vector_registers:
        rows -= 1
    return rows


def _start_value(init_value, k_tiles) -> tir.PrimExpr:
    """What the accumulators of a k block start from when blocks add their sums to C: the init
    value in the first block, zero in the others (one scalar, broadcast)."""
    zero = tir.FloatImm(init_value.dtype, 0.0)
    if isinstance(init_value, tir.FloatImm) and init_value.value == 0.0:
        return zero
    return tir.Select(tir.EQ(k_tiles.outer, tir.IntImm(k_tiles.outer.dtype, 0)), init_value, zero)


def _block_ends(k_tiles, k_extent, blocks_add: bool, epilogues: bool, saves) -> tir.Stmt:
    """The tile's stores after its k loop, saves(first, last) for the k block it is in: the
    first block stores its sums alone when blocks add theirs to C, the last one through the
    epilogues."""
    if k_tiles.whole:
        return saves(True, True)

    def block_is(index):
        return tir.EQ(k_tiles.outer, tir.IntImm(k_tiles.outer.dtype, index))

    ends = saves(False, False)
    if epilogues:  # constant K (fusable): the last k block stores the epilogues' values instead
        ends = tir.IfThenElse(block_is((k_extent.value - 1) // k_tiles.size), saves(False, True), ends)
    if blocks_add:
        ends = tir.IfThenElse(block_is(0), saves(True, False), ends)
    return ends


def fusable(nest: Nest, cpu=None) -> bool:
    """Whether apply can take elementwise stages after the nest (gemv_epilogue.py): every
    part of it is register tiles that hold finished sums at their last store (constant K
    and init value; no j-innermost remainder loops)."""
    if not matches(nest, cpu) or uniform_init(nest) is None:
        return False
    store, _, reduce = reduction_order.reduction_parts(nest)
    if not isinstance(nest.loop_of(reduce[0]).extent, tir.IntImm):
        return False
    shape = _shape(nest, cpu)
    j_iter = _iter(nest, store.indices[-1])
    columns = nest.loop_of(j_iter).extent.value
    j_full = columns // shape.width * shape.width
    return j_full == columns or narrow_fits(nest, j_iter, reduce[0], j_full, shape.lanes)


def apply(nest: Nest, cpu=None, epilogues=()) -> tir.Stmt:
    """The scheduled nest; `epilogues` (gemv_epilogue stages, when fusable) are applied to the
    finished sums in registers before their one store."""
    shape = _shape(nest, cpu)
    x, y = matmul_operands(nest) or matmul_operands(nest, _prepacked(nest))
    store, spatial, reduce = reduction_order.reduction_parts(nest)
    i_iter, j_iter = _iter(nest, store.indices[-2]), _iter(nest, store.indices[-1])
    outer = [iv for iv in spatial if iv is not i_iter and iv is not j_iter]
    outer_vars = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in outer}
    i_end, j_end = nest.loop_of(i_iter).extent.value, nest.loop_of(j_iter).extent.value
    rows = min(i_end, shape.rows)
    j_full = j_end // shape.width * shape.width
    operands = (outer_vars, i_iter, j_iter, reduce[0], x, y)
    row_parts = register_tile_rows.row_parts(i_end, rows)
    parts = [_tiles(nest, cpu, shape, operands, row_parts, epilogues)] if j_full else []
    if j_full < j_end and narrow_fits(nest, j_iter, reduce[0], j_full, shape.lanes):
        narrow_rows = min(i_end, _narrow_rows(cpu if cpu is not None else CpuInfo(), shape, j_end - j_full))
        parts.append(narrow(nest, *operands, narrow_rows, j_full, shape.lanes, epilogues))
    else:
        rest = remainder(nest, outer_vars, i_iter, j_iter, reduce[0], (0, i_end), (j_full, j_end))
        if rest is not None:
            assert not epilogues, "fusable() admits no remainder loops"
            parts.append(rest)
    stmt = seq(parts)
    for iv in reversed(outer):
        stmt = loop(outer_vars[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt
