"""Rule: a float32 matmul keeps a ROWS x (VECTORS * LANES) tile of C in vector registers.

`C[..., i, j] += A[..., i, k] * B[..., k, j]` (A's access free of j, B's access free
of i with j its last index, one reduction) with constant i and j extents; tiles have
fewer rows when C has fewer. The blocking is sized for a 48 KiB L1 and a 2 MiB L2 per
core:

- the parallel loop runs over column chunks (at most CHUNK_TILES tiles of 32 columns,
  at least MIN_CHUNKS chunks): each thread works on its own columns of B and C;
- K is cut into equal blocks of at most K_PANEL steps (784 -> 4 x 196);
- per chunk, row block (ROW_BLOCK_TILES row tiles) and k block, the block's rows of A
  (256 x 256 floats) and of C stay in L2 while every column tile of the chunk reads
  them (A is read in place: its block is in L2 already, so packing it only adds copies);
- per column tile, the B panel (k block x 32 floats, 32 KiB, in L1) is packed with
  whole-vector copies and read by every row tile of the block;
- per row tile, the accumulators start from the init value (first k block) or from C,
  each k step broadcasts ROWS elements of A and does ROWS * VECTORS vector
  fused multiply-adds against the panel, and the tile is stored once per k block.

Elementwise nests after the product (bias add, relu: the stages of gemv_epilogue.py,
found after inline.py and output_reuse.py have merged them and moved the product into
the output) are applied to the finished sums in registers: the last k block stores
their values instead of the sums, so no pass over C follows (fusable() says when:
constant K and init value, no j-innermost remainder loops; schedule/__init__.py takes
stages without calls only: GELU's erf in every tile slot would double the kernel's code
for no run-time gain).

The accumulators are a local buffer read and written only as whole vectors at
constant offsets, which LLVM keeps in registers. The last rows (M % ROWS) are one more
register tile with fewer rows. The last columns (N % 32, or all of them when N < 32)
are tiles of 16-lane vectors over one zero-padded panel of B's last columns (whole K),
stored element by element; where that panel would be too big (or K is symbolic) they
run j-innermost loops. Each element of C adds its terms in the order k = 0, 1, ...
as the plain nest does; the fused multiply-add rounds once per term instead of twice.

    for i, j, k in T.grid(M, N, K): C[i, j] += A[i, k] * B[k, j]
->
    for chunk in T.parallel(2):                                  # 16 column tiles each
        for block in range(4):                                   # 32 row tiles each
            for k_outer in range(4):
                for j_tile in range(16):
                    panel = T.alloc_local((256 * 32,))
                    for k: panel[k * 32:k * 32 + 32] = B[k0 + k, j0:j0 + 32]
                    for i_tile in range(32):
                        acc = T.alloc_local((256,))              # 8 rows x 2 vectors of 16
                        acc[0:16] = 0 if k_outer == 0 else C[i0, j0:j0 + 16] ...
                        for k in range(256):
                            acc[0:16] = T.fma(T.Broadcast(A[i0, k0 + k], 16), panel[k * 32:k * 32 + 16],
                                              acc[0:16]) ...
                        C[i0, j0:j0 + 16] = acc[0:16] ...
    <rows M // 8 * 8 .. M: one smaller tile; columns N // 32 * 32 .. N: 16-lane tiles over a padded panel>

Figures, and the tile shapes and blockings that did no better: docs/tir-lowering.md.
"""

from __future__ import annotations

from ...ir import tir
from ..convert_blocks_to_loops import allocation
from ..loop_nests import uses
from ..rewrite import collect
from . import reduction_order
from .matmul_operands import matmul_operands
from .nest import Nest, fresh, loop, seq

ROWS = 4  # rows of C per register tile: 4 x 2 accumulators, B and A vectors fit 16 registers
WIDE_ROWS = 8  # with 32 vector registers (AVX-512): 8 x 2 accumulators, each B vector used 8 times
LANES = 16  # float32 lanes of one vector (AVX-512; LLVM splits it where vectors are narrower)
VECTORS = 2  # vectors per row of the tile
PANEL_WIDTH = LANES * VECTORS  # columns of a B panel (and of a weight packed at build time)
K_PANEL = 256  # k steps per packed B panel (256 x 32 floats: 32 KiB, in L1)
CHUNK_TILES = 16  # column tiles per parallel chunk, at most (they share the row block of A in L2)
MIN_CHUNKS = 2  # chunks per matmul, at least (the 2 cores here): fewer tiles per chunk when N is small
ROW_BLOCK_TILES = 32  # row tiles per row block: its rows of A (256 x 256 k, 256 KiB) and of C (256 x 512
# columns, 512 KiB) stay in L2 across column tiles and k blocks
NARROW_PANEL_BYTES = 1 << 18  # largest zero-padded panel of B's last columns (whole K x 16 or 32 floats)


def _prepacked(nest: Nest) -> bool:
    """Whether the nest reads B in the panel layout (a weight packed at build time)."""
    return matmul_operands(nest) is None and matmul_operands(nest, PANEL_WIDTH) is not None


def matches(nest: Nest, cpu=None) -> bool:
    prepacked = _prepacked(nest)
    if matmul_operands(nest) is None and not prepacked:
        return False
    store = nest.block.body
    i_loop, j_loop = (nest.loop_of(_iter(nest, store.indices[p])) for p in (-2, -1))
    if not (isinstance(i_loop.extent, tir.IntImm) and isinstance(j_loop.extent, tir.IntImm) and i_loop.extent.value >= 1):
        return False
    if prepacked:  # whole panels only: no narrow or remainder columns read the packed layout
        return j_loop.extent.value % (LANES * VECTORS) == 0
    if j_loop.extent.value >= LANES * VECTORS:
        return True
    # Narrower than one tile (a classifier's 10 outputs): the narrow tiles alone, for several rows.
    k_iter = reduction_order.reduction_parts(nest)[2][0]
    return i_loop.extent.value >= 2 and _narrow_fits(nest, _iter(nest, store.indices[-1]), k_iter, 0)


def _rows(cpu, extent: int) -> int:
    """Rows per register tile: as many as the registers hold, at most the rows there are."""
    return min(extent, WIDE_ROWS if cpu is not None and cpu.wide_registers else ROWS)


def _iter(nest: Nest, var: tir.Var) -> tir.IterVar:
    return next(iv for iv in nest.block.iter_vars if iv.var is var)


def _ramp(base: tir.PrimExpr, lanes: int = LANES) -> tir.Ramp:
    return tir.Ramp(base, tir.IntImm(base.dtype, 1), lanes)


def _microkernel(nest: Nest, outer_values: dict, i_iter, j_iter, k_iter, x, y, rows_per_tile: int,
                 i_start: int = 0, row_tiles_count: int | None = None, epilogues=()) -> tir.Stmt:
    """Full register tiles: rows i_start .. i_start + row_tiles_count * rows_per_tile, columns 0 .. N // WIDTH * WIDTH.

    for chunk (parallel): [init C: a non-constant init or a symbolic K]; for row block: for k block:
        for column tile: [pack B]; for row tile: tile
    """
    store, width = nest.block.body, LANES * VECTORS
    i_loop, j_loop, k_loop = nest.loop_of(i_iter), nest.loop_of(j_iter), nest.loop_of(k_iter)
    index = i_loop.loop_var.dtype
    const = lambda value: tir.IntImm(index, value)  # noqa: E731
    if row_tiles_count is None:
        row_tiles_count = i_loop.extent.value // rows_per_tile
    column_tiles = j_loop.extent.value // width
    chunk_tiles = min(CHUNK_TILES, -(-column_tiles // MIN_CHUNKS))
    chunks = -(-column_tiles // chunk_tiles)
    block_tiles = min(row_tiles_count, ROW_BLOCK_TILES)
    row_blocks = -(-row_tiles_count // block_tiles)
    chunk, j_tile = fresh(j_loop.loop_var, "chunk"), fresh(j_loop.loop_var, "tile")
    row_block, i_tile = fresh(i_loop.loop_var, "block"), fresh(i_loop.loop_var, "tile")

    def count(total, per, outer):  # iterations of a tile loop: `per`, fewer in the last tile
        return const(per) if total % per == 0 else tir.Min(const(per), const(total) - outer * const(per))

    j0 = (chunk * const(chunk_tiles) + j_tile) * const(width)
    local_row = i_tile if row_blocks == 1 else row_block * const(block_tiles) + i_tile
    i0 = const(i_start) + local_row * const(rows_per_tile)
    k_tiles = reduction_order.Tiles(k_loop, _k_panel(k_loop.extent))

    at = _binder(nest, outer_values, i_iter, j_iter, k_iter, const)
    local = _local_buffers(store, const)

    # The B panel of this column tile and k block, packed row after row, when several
    # row tiles read it (a single row tile reads B where it is, once). A weight packed
    # at build time (packed_weights.py) is read where it is: its panels are contiguous.
    prepacked = _prepacked(nest)
    packed = row_tiles_count > 1 and not prepacked
    panel = local("panel", K_PANEL * width)
    pack = k_tiles.inner(lambda k: tir.SeqStmt(tuple(tir.BufferStore(  # whole-vector copies
        panel, at(y, i0, _ramp(j0 + const(v * LANES)), k), (_ramp(k_tiles.offset(k) * const(width) + const(v * LANES)),))
        for v in range(VECTORS))))

    # A is read where it is: the row block's rows (256 x k block, 256 KiB) stay in L2 while
    # the chunk's column tiles sweep them, so packing them (a transpose into each row
    # tile's k steps of 8 contiguous elements) would only add copies.
    def a_scalar(k, r):
        return at(x, i0 + const(r), j0, k)

    def b_vector(k, v):
        if packed:
            return tir.BufferLoad(panel, (_ramp(k_tiles.offset(k) * const(width) + const(v * LANES)),))
        if prepacked:  # packed[j0 // 32, k, 16 v .. 16 v + 15]
            return tir.BufferLoad(y.buffer, (chunk * const(chunk_tiles) + j_tile, at(y.indices[1], i0, j0, k),
                                             _ramp(const(v * LANES))))
        return at(y, i0, _ramp(j0 + const(v * LANES)), k)

    acc = local("tile", rows_per_tile * width)
    slots = [(r, v) for r in range(rows_per_tile) for v in range(VECTORS)]

    def slot(r, v):
        return (_ramp(const((r * VECTORS + v) * LANES)),)

    def c_row(r, v):
        return at(store, i0 + const(r), _ramp(j0 + const(v * LANES)))

    loads = tir.SeqStmt(tuple(tir.BufferStore(acc, tir.BufferLoad(store.buffer, c_row(r, v).indices), slot(r, v))
                              for r, v in slots))
    # The first k block starts from the init value, in registers (no pass over C before);
    # with a symbolic K, which may be 0 (no k block runs), C is initialized first instead.
    init_value = _uniform_init(nest) if isinstance(k_loop.extent, tir.IntImm) else None
    if init_value is not None:
        zeros = tir.SeqStmt(tuple(tir.BufferStore(acc, tir.Broadcast(init_value, LANES), slot(r, v)) for r, v in slots))
        loads = zeros if k_tiles.whole else tir.IfThenElse(
            tir.EQ(k_tiles.outer, tir.IntImm(k_tiles.outer.dtype, 0)), zeros, loads)

    def step(k):
        updates = []
        for r, v in slots:
            a = tir.Broadcast(a_scalar(k, r), LANES)
            b = b_vector(k, v)
            total = tir.Call(f"float32x{LANES}", "tir.fma", (a, b, tir.BufferLoad(acc, slot(r, v))))
            updates.append(tir.BufferStore(acc, total, slot(r, v)))
        return tir.SeqStmt(tuple(updates))

    saves = [c_row(r, v).with_fields(value=tir.BufferLoad(acc, slot(r, v))) for r, v in slots]
    if epilogues:  # the last k block stores the epilogues' values of the finished sums instead
        finals = [_finish(nest, outer_values, i_iter, j_iter, epilogues, tir.BufferLoad(acc, slot(r, v)),
                          i0 + const(r), j0 + const(v * LANES), LANES) for r, v in slots]
        if k_tiles.whole:
            saves = finals
        else:
            last = tir.IntImm(k_tiles.outer.dtype, (k_loop.extent.value - 1) // k_tiles.size)
            saves = [tir.IfThenElse(tir.EQ(k_tiles.outer, last), tir.SeqStmt(tuple(finals)), tir.SeqStmt(tuple(saves)))]
    tile = allocation(acc, tir.SeqStmt((loads, k_tiles.inner(step), *saves)))
    row_tiles = loop(i_tile, count(row_tiles_count, block_tiles, row_block), tile, independent=True)
    column_body = allocation(panel, tir.SeqStmt((pack, row_tiles))) if packed else row_tiles
    columns = loop(j_tile, count(column_tiles, chunk_tiles, chunk), column_body)
    row_block_body = k_tiles.wrap(columns)
    rows_loop = row_block_body if row_blocks == 1 else loop(row_block, const(row_blocks), row_block_body, independent=True)
    i_init, j_init = fresh(i_loop.loop_var, "init"), fresh(j_loop.loop_var, "init")
    chunk_width = count(column_tiles, chunk_tiles, chunk) * const(width) if column_tiles % chunk_tiles else const(chunk_tiles * width)
    init = loop(i_init, const(row_tiles_count * rows_per_tile), loop(j_init, chunk_width, at(
        nest.block.init, const(i_start) + i_init, chunk * const(chunk_tiles * width) + j_init)))
    body = rows_loop if init_value is not None else tir.SeqStmt((init, rows_loop))
    return loop(chunk, const(chunks), body, independent=True)


def _k_panel(extent) -> int:
    """k steps per block: K_PANEL, or K cut into equal blocks of at most K_PANEL (784 -> 4 x 196, not 3 x 256 + 16)."""
    if not isinstance(extent, tir.IntImm) or extent.value <= K_PANEL:
        return K_PANEL
    blocks = -(-extent.value // K_PANEL)
    return -(-extent.value // blocks)


def _uniform_init(nest: Nest):
    """The init value when it is the same for every element (a constant), else None."""
    value = nest.block.init.value
    if any(uses(value, iv.var) for iv in nest.block.iter_vars) or collect(value, tir.BufferLoad):
        return None
    return value


def _narrow(nest: Nest, outer_values: dict, i_iter, j_iter, k_iter, x, y, rows_per_tile: int, j_start: int,
            epilogues=()) -> tir.Stmt:
    """Columns j_start .. N (fewer than one tile) of every row in register tiles of 16-lane vectors.

    B's last columns are packed once, whole K, into a panel padded with zeros to whole
    vectors; each tile starts from the init value, runs every k step, and stores only
    the columns that exist, element by element (no masked stores needed).
    """
    store = nest.block.body
    i_loop, k_loop = nest.loop_of(i_iter), nest.loop_of(k_iter)
    index = i_loop.loop_var.dtype
    const = lambda value: tir.IntImm(index, value)  # noqa: E731
    columns = nest.loop_of(j_iter).extent.value - j_start
    vectors = -(-columns // LANES)
    width, depth, m = vectors * LANES, k_loop.extent.value, i_loop.extent.value
    init_value = _uniform_init(nest)

    at = _binder(nest, outer_values, i_iter, j_iter, k_iter, const)
    local = _local_buffers(store, const)

    panel = local("narrow_panel", depth * width)
    k, column = fresh(k_loop.loop_var, "pack"), fresh(nest.loop_of(j_iter).loop_var, "pack")
    copy = loop(column, const(columns), tir.BufferStore(panel, at(y, const(0), const(j_start) + column, k),
                                                        (k * const(width) + column,)))
    zero = loop(column, const(width - columns), tir.BufferStore(panel, tir.FloatImm("float32", 0.0),
                                                                (k * const(width) + const(columns) + column,)))
    pack = loop(k, const(depth), tir.SeqStmt((copy, zero)))

    def tile(i0, rows):
        acc = local("narrow_tile", rows * width)
        slots = [(r, v) for r in range(rows) for v in range(vectors)]

        def slot(r, v):
            return (_ramp(const((r * vectors + v) * LANES)),)

        step_k = fresh(k_loop.loop_var, "narrow")
        updates = []
        for r, v in slots:
            a = tir.Broadcast(at(x, i0 + const(r), const(j_start), step_k), LANES)
            b = tir.BufferLoad(panel, (_ramp(step_k * const(width) + const(v * LANES)),))
            total = tir.Call(f"float32x{LANES}", "tir.fma", (a, b, tir.BufferLoad(acc, slot(r, v))))
            updates.append(tir.BufferStore(acc, total, slot(r, v)))
        zeros = [tir.BufferStore(acc, tir.Broadcast(init_value, LANES), slot(r, v)) for r, v in slots]
        saves = [_finish(nest, outer_values, i_iter, j_iter, epilogues, tir.BufferLoad(acc, (const(r * width + c),)),
                         i0 + const(r), const(j_start + c), 1) if epilogues else
                 at(store, i0 + const(r), const(j_start + c)).with_fields(value=tir.BufferLoad(acc, (const(r * width + c),)))
                 for r in range(rows) for c in range(columns)]
        return allocation(acc, tir.SeqStmt((*zeros, loop(step_k, const(depth), tir.SeqStmt(tuple(updates))), *saves)))

    i_tile = fresh(i_loop.loop_var, "narrow")
    parts = [pack]
    if m // rows_per_tile:
        parts.append(loop(i_tile, const(m // rows_per_tile), tile(i_tile * const(rows_per_tile), rows_per_tile),
                          independent=True))
    if m % rows_per_tile:
        parts.append(tile(const(m // rows_per_tile * rows_per_tile), m % rows_per_tile))
    return allocation(panel, tir.SeqStmt(tuple(parts)))


def _narrow_fits(nest: Nest, j_iter, k_iter, j_start: int) -> bool:
    """Whether the last columns can take _narrow: constant K, a padded panel of at most NARROW_PANEL_BYTES, constant init."""
    k_extent = nest.loop_of(k_iter).extent
    columns = nest.loop_of(j_iter).extent.value - j_start
    if not isinstance(k_extent, tir.IntImm) or columns < 1 or _uniform_init(nest) is None:
        return False
    return k_extent.value * -(-columns // LANES) * LANES * 4 <= NARROW_PANEL_BYTES


def _remainder(nest: Nest, outer_values: dict, i_iter, j_iter, k_iter, rows, columns) -> tir.Stmt | None:
    """Rows [start, stop) x columns [start, stop) in j-innermost loops (None when empty)."""
    (i_start, i_stop), (j_start, j_stop) = rows, columns
    if i_stop <= i_start or j_stop <= j_start:
        return None
    i_loop, j_loop, k_loop = nest.loop_of(i_iter), nest.loop_of(j_iter), nest.loop_of(k_iter)
    index = i_loop.loop_var.dtype
    i, k = fresh(i_loop.loop_var, "rest"), fresh(k_loop.loop_var, "rest")

    def columns_loop(statement):
        j = fresh(j_loop.loop_var, "rest")
        values = {**outer_values, i_iter.var: i + tir.IntImm(index, i_start),
                  j_iter.var: j + tir.IntImm(index, j_start), k_iter.var: k}
        return loop(j, tir.IntImm(index, j_stop - j_start), nest.bound(statement, values))

    update = loop(k, k_loop.extent, columns_loop(nest.block.body))
    body = tir.SeqStmt((columns_loop(nest.block.init), update))
    return loop(i, tir.IntImm(index, i_stop - i_start), body, independent=True)


def fusable(nest: Nest, cpu=None) -> bool:
    """Whether apply can take elementwise stages after the nest (gemv_epilogue.py): every
    part of it is register tiles that hold finished sums at their last store (constant K
    and init value; no j-innermost remainder loops)."""
    if not matches(nest, cpu) or _uniform_init(nest) is None:
        return False
    store, _, reduce = reduction_order.reduction_parts(nest)
    if not isinstance(nest.loop_of(reduce[0]).extent, tir.IntImm):
        return False
    j_iter = _iter(nest, store.indices[-1])
    columns = nest.loop_of(j_iter).extent.value
    j_full = columns // (LANES * VECTORS) * (LANES * VECTORS)
    return j_full == columns or _narrow_fits(nest, j_iter, reduce[0], j_full)


def _finish(nest: Nest, outer_values: dict, i_iter, j_iter, epilogues, value, i, j, lanes: int) -> tir.BufferStore:
    """The store of `lanes` finished sums at row i, columns j.. through the epilogue stages."""
    position = tuple(i if index is i_iter.var else j if index is j_iter.var else outer_values[index]
                     for index in nest.block.body.indices)
    for stage in epilogues:
        value = stage.value(value, position, lanes)
    return epilogues[-1].store_at(value, position, lanes)


def apply(nest: Nest, cpu=None, epilogues=()) -> tir.Stmt:
    """The scheduled nest; `epilogues` (gemv_epilogue stages, when fusable) are applied to the
    finished sums in registers before their one store."""
    x, y = matmul_operands(nest) or matmul_operands(nest, PANEL_WIDTH)
    store, spatial, reduce = reduction_order.reduction_parts(nest)
    i_iter, j_iter = _iter(nest, store.indices[-2]), _iter(nest, store.indices[-1])
    outer = [iv for iv in spatial if iv is not i_iter and iv is not j_iter]
    outer_vars = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in outer}
    rows = _rows(cpu, nest.loop_of(i_iter).extent.value)
    i_full = nest.loop_of(i_iter).extent.value // rows * rows
    j_full = nest.loop_of(j_iter).extent.value // (LANES * VECTORS) * (LANES * VECTORS)
    i_end, j_end = nest.loop_of(i_iter).extent.value, nest.loop_of(j_iter).extent.value
    parts = [_microkernel(nest, outer_vars, i_iter, j_iter, reduce[0], x, y, rows, epilogues=epilogues)] if j_full else []
    if i_full < i_end and j_full:  # the last rows: one register tile with fewer rows
        parts.append(_microkernel(nest, outer_vars, i_iter, j_iter, reduce[0], x, y, i_end - i_full, i_full, 1,
                                  epilogues=epilogues))
    if j_full < j_end and _narrow_fits(nest, j_iter, reduce[0], j_full):
        parts.append(_narrow(nest, outer_vars, i_iter, j_iter, reduce[0], x, y, rows, j_full, epilogues))
    else:
        rest = _remainder(nest, outer_vars, i_iter, j_iter, reduce[0], (0, i_end), (j_full, j_end))
        if rest is not None:
            assert not epilogues, "fusable() admits no remainder loops"
            parts.append(rest)
    stmt = seq(parts)
    for iv in reversed(outer):
        stmt = loop(outer_vars[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt


def _binder(nest, outer_values: dict, i_iter, j_iter, k_iter, const):
    """at(expr, i, j, k=0): `expr` of the nest's body with its iterators bound to i, j, k."""

    def at(expr, i, j, k=None):
        values = {**outer_values, i_iter.var: i, j_iter.var: j, k_iter.var: k if k is not None else const(0)}
        return nest.bound(expr, values)

    return at


def _local_buffers(store, const):
    """local(name, size): a float32 register/stack buffer named after the output."""

    def local(name, size):
        return tir.Buffer(f"{store.buffer.name}_{name}", (const(size),), "float32",
                          tir.Var(f"{store.buffer.name}_{name}", "handle"), scope="local")

    return local
