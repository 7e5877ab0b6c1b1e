"""Rule: a copy whose innermost loop reads with a large stride runs in 16 x 16 tiles.

A transpose (or a reshape + transpose, once inline.py has folded the reshape in)
writes its output row by row and reads its input down a column. The attention's
k^T (float32[128, 256] -> [4, 64, 128]) reads at a stride of 1 KiB: its 128 loads of
a row fall into 4 of L1's 64 sets and evict each other before the next column uses
them. In 16 x 16 tiles the 16 input lines a tile reads stay in L1 while all 16 of
their columns are used.

Matches a spatial nest with one load whose flattened address, simplified over the
loop ranges, is linear in the loop variables: the innermost loop strides by at
least STRIDE_ELEMENTS and another loop strides by 1 (the input's contiguous axis),
both with constant extents that are multiples of TILE. Each element is copied as
before; only the order changes.

    for h, d, s in T.grid(4, 64, 128):                  for h, d_tile, s_tile in T.grid(4, 4, 8):
        out[h, d, s] = k[s, h * 64 + d]         ->          for d_in, s_in in T.grid(16, 16):
                                                                out[h, d, s] = k[s, h * 64 + d]   (d, s from the tiles)
"""

from __future__ import annotations

from ...ir import tir
from ..arith.bounds import Interval
from ..arith.linear import from_expr
from ..arith.simplifier import simplify_expr
from ..rewrite import collect
from .nest import Nest, fresh, loop

TILE = 16
STRIDE_ELEMENTS = 64  # 256 bytes of float32: four loads of a row share no cache line


def _flat_address(load: tir.BufferLoad):
    address, stride = None, 1
    for index, extent in reversed(list(zip(load.indices, load.buffer.shape))):
        if not isinstance(extent, tir.IntImm):
            return None
        term = index * tir.IntImm(index.dtype, stride) if stride != 1 else index
        address = term if address is None else term + address
        stride *= extent.value
    return address


def _strides(nest: Nest, load: tir.BufferLoad) -> dict | None:
    """{loop position: element stride of the load along that loop}, or None when not linear."""
    address = _flat_address(load)
    if address is None or not all(isinstance(lp.extent, tir.IntImm) for lp in nest.loops):
        return None
    env = {iv.var: Interval(0, nest.loop_of(iv).extent.value - 1) for iv in nest.block.iter_vars}
    linear = from_expr(simplify_expr(address, env))
    positions = {id(iv.var): nest.loops.index(nest.loop_of(iv)) for iv in nest.block.iter_vars}
    strides = {}
    for atom, coefficient in linear.nonzero():
        if id(atom) not in positions:
            return None  # a division or modulo left: not linear in the loops
        strides[positions[id(atom)]] = coefficient
    return strides


def _plan(nest: Nest):
    """(position of the input-contiguous loop, of the innermost loop), or None."""
    block, store = nest.block, nest.block.body
    if block.init is not None or any(iv.iter_type != "DataPar" for iv in block.iter_vars):
        return None
    loads = collect(store.value, tir.BufferLoad)
    if len(loads) != 1 or not isinstance(store.value, tir.BufferLoad) or len(nest.loops) < 2:
        return None
    if loads[0].buffer is store.buffer:
        return None  # an in-place permutation depends on the order
    strides = _strides(nest, loads[0])
    inner = len(nest.loops) - 1
    if strides is None or abs(strides.get(inner, 0)) < STRIDE_ELEMENTS:
        return None
    contiguous = [p for p, s in strides.items() if s == 1 and p != inner]
    if not contiguous:
        return None
    extents = [nest.loops[p].extent.value for p in (contiguous[0], inner)]
    if any(extent % TILE for extent in extents):
        return None
    return contiguous[0], inner


def matches(nest: Nest, cpu=None) -> bool:
    return _plan(nest) is not None


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    across, inner = _plan(nest)
    loops = nest.loops
    index_dtype = loops[inner].loop_var.dtype
    const = lambda value: tir.IntImm(index_dtype, value)  # noqa: E731
    tiles = {p: (fresh(loops[p].loop_var, "tile"), fresh(loops[p].loop_var, "in")) for p in (across, inner)}
    values = {}
    for iv in nest.block.iter_vars:
        position = loops.index(nest.loop_of(iv))
        if position in tiles:
            tile, within = tiles[position]
            values[iv.var] = tile * const(TILE) + within
        else:
            values[iv.var] = fresh(loops[position].loop_var, "s")
    stmt = nest.bound(nest.block.body, values)
    stmt = loop(tiles[inner][1], const(TILE), stmt)
    stmt = loop(tiles[across][1], const(TILE), stmt)
    order = [p for p in range(len(loops)) if p not in tiles] + [across, inner]
    for position in reversed(order):
        if position in tiles:
            var, extent = tiles[position][0], const(loops[position].extent.value // TILE)
        else:
            var = values[next(iv.var for iv in nest.block.iter_vars if nest.loop_of(iv) is loops[position])]
            extent = loops[position].extent
        stmt = loop(var, extent, stmt, independent=True)
    return stmt
