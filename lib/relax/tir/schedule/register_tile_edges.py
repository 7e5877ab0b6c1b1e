"""The edges of a register-tiled matmul (register_tile.py), and the statement builders its tiles share.

The last columns (N % width, or all of them when N is narrower than one tile) are tiles
of the target's vectors over one panel of B's last columns (whole K, zero-padded to
whole vectors, at most NARROW_PANEL_BYTES), stored element by element: no masked stores
needed. Where that panel would be too big, or K is symbolic, they run j-innermost
loops instead.

    for k in range(K): narrow_panel[k * 16:k * 16 + 10] = B[k, 32:42]; narrow_panel[k * 16 + 10:...] = 0
    for i_tile in range(M // rows):                     # rows x 1 vector of the target's lanes
        for s in T.unroll(rows): acc[s * 16:...] = 0
        for k: for s in T.unroll(rows): acc[s * 16:...] = T.fma(T.Broadcast(A[i0 + s, k], lanes), narrow_panel[k * 16:...], acc[...])
        for e in T.unroll(rows * 10): C[i0 + e // 10, 32 + e % 10] = acc[e // 10 * 16 + e % 10]

(the loops of kind `unrolled`: one statement for each slot of the tile, as in register_tile.py)
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir import tir
from ..convert_blocks_to_loops import allocation
from ..loop_nests import uses
from ..rewrite import collect
from .nest import Nest, fresh, loop, unrolled
from .vector_exprs import broadcast, ramp

NARROW_PANEL_BYTES = 1 << 18  # largest zero-padded panel of B's last columns (whole K x the padded width)


def binder(nest, outer_values: dict, i_iter, j_iter, k_iter, const):
    """at(expr, i, j, k=0): `expr` of the nest's body with its iterators bound to i, j, k."""

    def at(expr, i, j, k=None):
        values = {**outer_values, i_iter.var: i, j_iter.var: j, k_iter.var: k if k is not None else const(0)}
        return nest.bound(expr, values)

    return at


def local_buffers(store, const):
    """local(name, size): a float32 register/stack buffer named after the output."""

    def local(name, size):
        return tir.Buffer(f"{store.buffer.name}_{name}", (const(size),), "float32",
                          tir.Var(f"{store.buffer.name}_{name}", "handle"), scope="local")

    return local


def slot_position(s: tir.Var, per_row: int, const) -> tuple[tir.PrimExpr, tir.PrimExpr]:
    """(row, place in the row) of slot `s` of a tile, `per_row` slots a row (its vectors, or
    its elements), the slots row after row."""
    if per_row == 1:
        return s, const(0)
    return tir.FloorDiv(s, const(per_row)), tir.FloorMod(s, const(per_row))


def uniform_init(nest: Nest):
    """The init value when it is the same for every element (a constant), else None."""
    value = nest.block.init.value
    if any(uses(value, iv.var) for iv in nest.block.iter_vars) or collect(value, tir.BufferLoad):
        return None
    return value


def finish(nest: Nest, outer_values: dict, i_iter, j_iter, epilogues, value, i, j, lanes: int) -> tir.BufferStore:
    """The store of `lanes` finished sums at row i, columns j.. through the epilogue stages."""
    position = tuple(i if index is i_iter.var else j if index is j_iter.var else outer_values[index]
                     for index in nest.block.body.indices)
    for stage in epilogues:
        value = stage.value(value, position, lanes)
    return epilogues[-1].store_at(value, position, lanes)


def narrow_fits(nest: Nest, j_iter, k_iter, j_start: int, lanes: int) -> bool:
    """Whether the last columns can take narrow(): constant K, a padded panel of at most
    NARROW_PANEL_BYTES, constant init."""
    k_extent = nest.loop_of(k_iter).extent
    columns = nest.loop_of(j_iter).extent.value - j_start
    if not isinstance(k_extent, tir.IntImm) or columns < 1 or uniform_init(nest) is None:
        return False
    return k_extent.value * -(-columns // lanes) * lanes * 4 <= NARROW_PANEL_BYTES


def narrow(nest: Nest, outer_values: dict, i_iter, j_iter, k_iter, x, y, rows_per_tile: int, j_start: int,
           lanes: int, epilogues=()) -> tir.Stmt:
    """Columns j_start .. N (fewer than one tile) of every row in register tiles of `lanes`-lane vectors.

    B's last columns are packed once, whole K, into a panel padded with zeros to whole
    vectors; each tile starts from the init value, runs every k step, and stores only
    the columns that exist, element by element (no masked stores needed).
    """
    store = nest.block.body
    i_loop, k_loop = nest.loop_of(i_iter), nest.loop_of(k_iter)
    index = i_loop.loop_var.dtype
    const = lambda value: tir.IntImm(index, value)  # noqa: E731
    columns = nest.loop_of(j_iter).extent.value - j_start
    vectors = -(-columns // lanes)
    width, depth, m = vectors * lanes, k_loop.extent.value, i_loop.extent.value
    init_value = uniform_init(nest)

    at = binder(nest, outer_values, i_iter, j_iter, k_iter, const)
    local = local_buffers(store, const)

    panel = local("narrow_panel", depth * width)
    k, column = fresh(k_loop.loop_var, "pack"), fresh(nest.loop_of(j_iter).loop_var, "pack")
    copy = loop(column, const(columns), tir.BufferStore(panel, at(y, const(0), const(j_start) + column, k),
                                                        (k * const(width) + column,)))
    zero = loop(column, const(width - columns), tir.BufferStore(panel, tir.FloatImm("float32", 0.0),
                                                                (k * const(width) + const(columns) + column,)))
    pack = loop(k, const(depth), tir.SeqStmt((copy, zero)))

    def tile(i0, rows):
        acc = local("narrow_tile", rows * width)
        s, e = fresh(i_loop.loop_var, "slot"), fresh(i_loop.loop_var, "element")
        r, v = slot_position(s, vectors, const)
        slot = (ramp(s * const(lanes), lanes),)
        step_k = fresh(k_loop.loop_var, "narrow")
        a = broadcast(at(x, i0 + r, const(j_start), step_k), lanes)
        b = tir.BufferLoad(panel, (ramp(step_k * const(width) + v * const(lanes), lanes),))
        total = tir.Call(dt.with_lanes("float32", lanes), "tir.fma", (a, b, tir.BufferLoad(acc, slot)))
        update = unrolled(s, rows * vectors, tir.BufferStore(acc, total, slot))
        zeros = unrolled(s, rows * vectors, tir.BufferStore(acc, broadcast(init_value, lanes), slot))
        row, column = slot_position(e, columns, const)  # element e of the columns that exist
        value = tir.BufferLoad(acc, (row * const(width) + column,))
        save = (finish(nest, outer_values, i_iter, j_iter, epilogues, value, i0 + row, const(j_start) + column, 1)
                if epilogues else store.with_fields(value=value, indices=at(store.indices, i0 + row, const(j_start) + column)))
        saves = unrolled(e, rows * columns, save)
        return allocation(acc, tir.SeqStmt((zeros, loop(step_k, const(depth), update), saves)))

    i_tile = fresh(i_loop.loop_var, "narrow")
    parts = [pack]
    if m // rows_per_tile:
        parts.append(loop(i_tile, const(m // rows_per_tile), tile(i_tile * const(rows_per_tile), rows_per_tile),
                          independent=True))
    if m % rows_per_tile:
        parts.append(tile(const(m // rows_per_tile * rows_per_tile), m % rows_per_tile))
    return allocation(panel, tir.SeqStmt(tuple(parts)))


def remainder(nest: Nest, outer_values: dict, i_iter, j_iter, k_iter, rows, columns) -> tir.Stmt | None:
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


__all__ = ["NARROW_PANEL_BYTES", "binder", "finish", "local_buffers", "narrow", "narrow_fits", "remainder",
           "slot_position", "uniform_init"]
