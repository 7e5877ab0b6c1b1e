"""Rule: a reduction whose output's last axis is read contiguously runs that axis innermost.

Matmul, batched matmul and conv2d are legalized with the reduction innermost, so
the B operand is read with a stride and nothing vectorizes. When some operand's
last index uses the output's last spatial iterator j, the rule moves the
reductions outside j: every output element still sums its terms in the same
order (results are bit for bit those of the plain nest), while the j loop reads
B and C rows contiguously and LLVM vectorizes it. The init is hoisted into its
own j loop, and j is cut into tiles of J_TILE so a row of C stays in L1 while the
reduction sweeps over it.

    for i, j, k in T.grid(M, N, K):           for i in range(M):
        with T.block("C"):                        for jo in range(ceildiv(N, 256)):
            ... init: C[vi, vj] = 0      ->           for ji in range(min(256, N - jo*256)): C[i, j] = 0
            C[vi, vj] += A[vi, vk] * B[vk, vj]       for k in range(K):
                                                          for ji in ...: C[i, j] += A[i, k] * B[k, j]
"""

from __future__ import annotations

from ...ir import tir
from ..loop_nests import uses
from ..rewrite import collect
from .nest import Nest, fresh, loop

J_TILE = 256  # columns of C (and of a B panel) per tile
I_TILE = 32  # rows of C that reuse one B panel from cache
K_TILE = 256  # reduction steps per B panel (256 x 256 floats: 256 KiB, in L2)


def _same_access(load, store: tir.BufferStore) -> bool:
    return (isinstance(load, tir.BufferLoad) and load.buffer is store.buffer
            and len(load.indices) == len(store.indices)
            and all(a is b for a, b in zip(load.indices, store.indices)))


def reduction_parts(nest: Nest):
    """(store, spatial iters, reduce iters) when the block is `C[s] = C[s] op f(...)`, else None."""
    block, store = nest.block, nest.block.body
    spatial, reduce = nest.iters("DataPar"), nest.iters("CommReduce")
    if not reduce or block.init is None or block.init.buffer is not store.buffer:
        return None
    if not all(a is b for a, b in zip(block.init.indices, store.indices)):
        return None
    if sorted(map(id, store.indices)) != sorted(id(iv.var) for iv in spatial):
        return None
    if not (isinstance(store.value, tir.BinaryOp) and _same_access(store.value.a, store)):
        return None
    if any(_same_access(load, store) is False and load.buffer is store.buffer
           for load in collect(store.value.b, tir.BufferLoad)):
        return None
    return store, spatial, reduce


def matches(nest: Nest, cpu=None) -> bool:
    parts = reduction_parts(nest)
    if parts is None:
        return False
    store, _, reduce = parts
    if not store.indices or len(reduce) != 1:
        # conv2d (three reductions) keeps the plain order: with its output width
        # innermost it runs slower (docs/performance-notes.md).
        return False
    j = store.indices[-1]
    loads = collect(store.value.b, tir.BufferLoad)
    return any(load.indices and uses(load.indices[-1], j) for load in loads)


class Tiles:
    """One loop cut into tiles of `size`: `wrap` puts the tile loop around a statement,
    `inner(make_body)` is one loop over a tile (the whole axis when it fits one tile)."""

    def __init__(self, original: tir.For, size: int, independent: bool = False):
        self.independent = independent
        self.var, self.extent, self.size = original.loop_var, original.extent, size
        self.whole = isinstance(self.extent, tir.IntImm) and self.extent.value <= size
        self.outer = None if self.whole else fresh(self.var, "outer")

    def inner(self, make_body) -> tir.For:
        inner = fresh(self.var, "inner")
        if self.whole:
            return loop(inner, self.extent, make_body(inner))
        tile = tir.IntImm(self.extent.dtype, self.size)
        divides = isinstance(self.extent, tir.IntImm) and self.extent.value % self.size == 0
        remaining = tile if divides else tir.Min(tile, self.extent - self.outer * tile)
        return loop(inner, remaining, make_body(self.outer * tile + inner))

    def offset(self, value: tir.PrimExpr) -> tir.PrimExpr:
        """The position inside its tile of `value`, an index `inner` passed to make_body."""
        if self.whole:
            return value
        return value - self.outer * tir.IntImm(self.extent.dtype, self.size)

    def wrap(self, stmt: tir.Stmt) -> tir.Stmt:
        if self.whole:
            return stmt
        if isinstance(self.extent, tir.IntImm):
            count = tir.IntImm(self.extent.dtype, -(-self.extent.value // self.size))
        else:
            count = tir.FloorDiv(self.extent + (self.size - 1), tir.IntImm(self.extent.dtype, self.size))
        return loop(self.outer, count, stmt, independent=self.independent)


class _Whole:
    """An axis left untiled, with the interface of Tiles."""

    def __init__(self, var: tir.Var | None = None):
        self.var = var

    def inner(self, make_body) -> tir.Stmt:
        return make_body(self.var)

    def wrap(self, stmt: tir.Stmt) -> tir.Stmt:
        return stmt


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    """for s..., io, jo: (for ii, ji: init); for ko: for ii: for k: for ji: update."""
    store, spatial, reduce = reduction_parts(nest)
    j_iter = next(iv for iv in spatial if iv.var is store.indices[-1])
    outer_spatial = [iv for iv in spatial if iv is not j_iter]
    i_iter = outer_spatial.pop() if outer_spatial else None
    loop_vars = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in outer_spatial + reduce}
    j_tiles = Tiles(nest.loop_of(j_iter), J_TILE, independent=True)
    i_tiles = Tiles(nest.loop_of(i_iter), I_TILE, independent=True) if i_iter is not None else _Whole()
    k_tiles = Tiles(nest.loop_of(reduce[0]), K_TILE) if len(reduce) == 1 else None

    def at(statement, i, j, k=None):
        values = {**loop_vars, j_iter.var: j}
        if i_iter is not None:
            values[i_iter.var] = i
        if k is not None:
            values[reduce[0].var] = k
        return nest.bound(statement, values)

    init = i_tiles.inner(lambda i: j_tiles.inner(lambda j: at(nest.block.init, i, j)))
    if k_tiles is not None:
        update = k_tiles.wrap(i_tiles.inner(lambda i: k_tiles.inner(
            lambda k: j_tiles.inner(lambda j: at(store, i, j, k)))))
    else:
        def reductions(i):
            stmt = j_tiles.inner(lambda j: at(store, i, j))
            for iv in reversed(reduce):
                stmt = loop(loop_vars[iv.var], nest.loop_of(iv).extent, stmt)
            return stmt
        update = i_tiles.inner(reductions)
    stmt = i_tiles.wrap(j_tiles.wrap(tir.SeqStmt((init, update))))
    for iv in reversed(outer_spatial):
        stmt = loop(loop_vars[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt
