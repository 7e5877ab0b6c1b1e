"""Rule: a copy whose innermost loop reads with a large stride runs in 16 x 16 tiles,
transposed in registers.

A transpose (or a reshape + transpose, once inline.py has folded the reshape in)
writes its output row by row and reads its input down a column. The attention's
k^T (float32[128, 256] -> [4, 64, 128]) reads at a stride of 1 KiB: its 128 loads of
a row fall into 4 of L1's 64 sets and evict each other before the next column uses
them. In 16 x 16 tiles the 16 input lines a tile reads stay in L1 while all 16 of
their columns are used.

Matches a spatial nest with one load whose flattened address, simplified over the
loop ranges, is linear in the loop variables: the innermost loop strides by at
least STRIDE_ELEMENTS and another loop strides by 1 (the input's contiguous axis),
both with constant extents that are multiples of TILE.

Each tile is copied in square blocks of a vector's lanes (16 float32 on AVX-512, 8 on
AVX2, 4 on SSE and NEON; block_lanes): the block's rows are loaded as vectors along
the input's contiguous axis, transposed by log2(lanes) rounds of two-vector shuffles,
and stored as vectors along the output's. For the 16 x 16 block that is 16 loads, 64
shuffles and 16 stores instead of 256 scalar loads and stores (k^T 14.5 -> 4.5 us on
Zen 4). Without a CPU model, or where the output is not contiguous along the innermost
loop, the tile is copied element by element. Every element is copied as before; only
the order and the width of the accesses change.

    for h, d, s in T.grid(4, 64, 128):                  for h, d_tile, s_tile in T.grid(4, 4, 8):
        out[h, d, s] = k[s, h * 64 + d]         ->          row0 = k[s0, h * 64 + d0 : +16] ... row15
                                                            swap0_0 = T.Shuffle([row0, row8], ...) ... (4 rounds)
                                                            out[h, d0 + c, s0 : s0 + 16] = swap3_c   (c < 16)
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir import tir
from ..arith.bounds import Interval
from ..arith.linear import from_expr
from ..arith.simplifier import simplify_expr
from ..loop_nests import uses
from ..rewrite import collect, substitute
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


def block_lanes(nest: Nest, cpu) -> int:
    """Lanes of the square blocks a tile is transposed in, in registers: a vector of the
    element type, at most TILE; 1 (element by element) without a CPU model, for other
    element types, or when the output is not contiguous along the innermost loop."""
    store = nest.block.body
    kind, bits, _ = dt.parse(store.buffer.dtype)
    if cpu is None or kind not in ("float", "int", "uint") or bits not in (16, 32, 64):
        return 1
    lanes = min(TILE, cpu.vector_bits // bits)
    if lanes < 2 or TILE % lanes or (_strides(nest, store) or {}).get(len(nest.loops) - 1) != 1:
        return 1
    return lanes


def transposed(rows: list, lanes: int) -> list[tuple]:
    """(variable, value) bindings that transpose the `lanes` x `lanes` block whose rows are
    `rows` (vector expressions), the last `lanes` variables its columns: log2(lanes) rounds
    of two-vector shuffles, round b exchanging the off-diagonal b x b sub-blocks of each
    2b x 2b block (the 16 x 16 block: 64 shuffles instead of 256 scalar loads and stores)."""
    bindings = []
    for r, row in enumerate(rows):
        bindings.append((tir.Var(f"row{r}", row.dtype), row))
    current = [var for var, _ in bindings]
    width, step = lanes // 2, 0
    while width:
        following = list(current)
        for i in range(lanes):
            if i & width:
                continue
            j = i + width
            low = [k if not k & width else lanes + k - width for k in range(lanes)]
            high = [k + width if not k & width else lanes + k for k in range(lanes)]
            for position, mask in ((i, low), (j, high)):
                value = tir.Shuffle((current[i], current[j]), tuple(tir.IntImm("int32", m) for m in mask))
                following[position] = tir.Var(f"swap{step}_{position}", value.dtype)
                bindings.append((following[position], value))
        current, width, step = following, width // 2, step + 1
    return bindings


def vectorized(access, offset: tir.Var, lanes: int, env: dict):
    """`access` (a BufferLoad or BufferStore whose indices use `offset`, 0 <= offset < lanes,
    simplified over `env`) for every offset at once: its last index `e + offset` becomes
    Ramp(e, 1, lanes). None when another index uses offset or the last is not of that form
    (the block would straddle a row)."""
    *leading, last = (simplify_expr(index, env) for index in access.indices)
    base = simplify_expr(tir.Sub(last, offset), env)
    if uses(base, offset) or any(uses(index, offset) for index in leading):
        return None
    return access.with_fields(indices=(*leading, tir.Ramp(base, tir.IntImm(base.dtype, 1), lanes)))


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    across, inner = _plan(nest)
    loops = nest.loops
    index_dtype = loops[inner].loop_var.dtype
    const = lambda value: tir.IntImm(index_dtype, value)  # noqa: E731
    position_of = {iv.var: loops.index(nest.loop_of(iv)) for iv in nest.block.iter_vars}
    others = {var: fresh(loops[p].loop_var, "s") for var, p in position_of.items() if p not in (across, inner)}
    lanes = block_lanes(nest, cpu)
    body = None
    if lanes > 1:
        tiles = {p: (fresh(loops[p].loop_var, "tile"), fresh(loops[p].loop_var, "block")) for p in (across, inner)}
        body = _block_body(nest, lanes, tiles, others, position_of, (across, inner), const)
    if body is None:  # element by element, in the tile's order
        lanes = 1
        tiles = {p: (fresh(loops[p].loop_var, "tile"), fresh(loops[p].loop_var, "in")) for p in (across, inner)}
        start = {p: tile * const(TILE) + within for p, (tile, within) in tiles.items()}
        body = _bound(nest, others, position_of, (across, inner), nest.block.body, start[across], start[inner])
    stmt = loop(tiles[inner][1], const(TILE // lanes), body)
    stmt = loop(tiles[across][1], const(TILE // lanes), stmt)
    order = [p for p in range(len(loops)) if p not in tiles] + [across, inner]
    for position in reversed(order):
        if position in tiles:
            var, extent = tiles[position][0], const(loops[position].extent.value // TILE)
        else:
            var = others[next(iv.var for iv in nest.block.iter_vars if nest.loop_of(iv) is loops[position])]
            extent = loops[position].extent
        stmt = loop(var, extent, stmt, independent=True)
    return stmt


def _block_body(nest: Nest, lanes: int, tiles: dict, others: dict, position_of: dict, axes, const):
    """One `lanes` x `lanes` block of a tile: its rows loaded as vectors along the input's
    contiguous axis, transposed in registers, stored as vectors along the output's; None
    when an access is not contiguous in the block (the element-by-element body then)."""
    across, inner = axes
    loops, store = nest.loops, nest.block.body
    offset = tir.Var("lane", loops[inner].loop_var.dtype)
    env = {offset: Interval(0, lanes - 1)}
    for p, (tile, block) in tiles.items():
        env[tile] = Interval(0, loops[p].extent.value // TILE - 1)
        env[block] = Interval(0, TILE // lanes - 1)
    for var, other in others.items():
        env[other] = Interval(0, loops[position_of[var]].extent.value - 1)
    start = {p: tile * const(TILE) + block * const(lanes) for p, (tile, block) in tiles.items()}

    def bound(stmt, across_value, inner_value):
        return _bound(nest, others, position_of, axes, stmt, across_value, inner_value)

    # Each access simplified once, for a symbolic row (column) of the block, then copied per row.
    row = tir.Var("row", offset.dtype)
    env[row] = Interval(0, lanes - 1)
    read = vectorized(bound(store.value, start[across] + offset, start[inner] + row), offset, lanes, env)
    write = vectorized(bound(store, start[across] + row, start[inner] + offset), offset, lanes, env)
    if read is None or write is None:
        return None
    bindings = transposed([substitute(read, {row: const(r)}) for r in range(lanes)], lanes)
    body = tir.SeqStmt(tuple(substitute(write, {row: const(c)}).with_fields(value=column)
                             for c, (column, _) in enumerate(bindings[-lanes:])))
    for var, value in reversed(bindings):
        body = tir.LetStmt(var, value, body)
    return body


def _bound(nest: Nest, others: dict, position_of: dict, axes, stmt, across_value, inner_value):
    """`stmt` of the nest's block with the iterators of the two tiled loops (`axes`: their
    positions) bound to the given values and every other iterator to its fresh variable."""
    values = dict(others)
    for var, position in position_of.items():
        if position in axes:
            values[var] = across_value if position == axes[0] else inner_value
    return nest.bound(stmt, values)
