"""Rule: a reduction over the innermost loops accumulates in registers, not in memory.

Sums, maxima, softmax and layer_norm statistics are legalized as
`B[i] = B[i] + A[i, k]` with k innermost: every step loads and stores B[i]. The
rule gives each output element a one-element local accumulator, which LLVM keeps
in a register. A single float32 sum/max/min over at least 2 * LANES contiguous terms
(loads whose last index is k) keeps LANES partial results in one vector instead and
combines them at the end, then the leftover terms: LLVM vectorizes sums by itself
(floats carry `reassoc`) but not maxima, which would otherwise take one element a
step. The terms are grouped by lane, as LLVM's own vectorized sums group them; a max
of a row holding NaN may differ from the sequential one (which depends on where the
NaN is).

    for i, k in T.grid(M, 1024):              for i in range(M):
        with T.block("max"):                      lanes = T.alloc_local((16,))
            ... init: B[vi] = -inf       ->       lanes[0:16] = T.Broadcast(-inf, 16)
            B[vi] = T.max(B[vi], A[vi, vk])       for k in range(64): lanes[0:16] = T.max(lanes[0:16], A[i, k*16:k*16+16])
                                                  acc[0] = -inf; for l in range(16): acc[0] = T.max(acc[0], lanes[l])
                                                  B[i] = acc[0]
"""

from __future__ import annotations

from ...ir import tir
from ..convert_blocks_to_loops import allocation
from ..loop_nests import uses
from .nest import Nest, fresh, loop
from .reduction_order import reduction_parts


def matches(nest: Nest, cpu=None) -> bool:
    parts = reduction_parts(nest)
    if parts is None:
        return False
    _, spatial, reduce = parts
    positions = {id(iv): nest.loops.index(nest.loop_of(iv)) for iv in spatial + reduce}
    return max((positions[id(iv)] for iv in spatial), default=-1) < min(positions[id(iv)] for iv in reduce)


LANES = 16  # partial results per row in the vector form
_ELEMENTWISE = (tir.Add, tir.Sub, tir.Mul, tir.Max, tir.Min)
_COMBINERS = (tir.Add, tir.Max, tir.Min)  # reductions whose terms may be grouped by lane


def _vectorizable(expr, k: tir.Var) -> bool:
    """Whether `expr` is loads whose last index is exactly `k`, combined elementwise."""
    if isinstance(expr, tir.BufferLoad):
        return bool(expr.indices) and expr.indices[-1] is k and not any(uses(i, k) for i in expr.indices[:-1])
    return isinstance(expr, _ELEMENTWISE) and _vectorizable(expr.a, k) and _vectorizable(expr.b, k)


def _vector_form(nest: Nest, store, reduce) -> bool:
    """A single float32 reduction over a constant extent of contiguous terms."""
    if len(reduce) != 1 or store.buffer.dtype != "float32" or not isinstance(store.value, _COMBINERS):
        return False
    extent = nest.loop_of(reduce[0]).extent
    return isinstance(extent, tir.IntImm) and extent.value >= 2 * LANES and _vectorizable(store.value.b, reduce[0].var)


def _vector_reduction(nest: Nest, store, reduce, loop_vars, acc, acc_load) -> tir.Stmt:
    """acc[0] combined with every term: LANES partial results over whole vectors, then the rest."""
    combine, k_iter = type(store.value), reduce[0]
    extent = nest.loop_of(k_iter).extent.value
    index = k_iter.var.dtype
    lanes = tir.Buffer(f"{acc.name}_lanes", (tir.IntImm(index, LANES),), "float32",
                       tir.Var(f"{acc.name}_lanes", "handle"), scope="local")
    whole = tir.Ramp(tir.IntImm(index, 0), tir.IntImm(index, 1), LANES)
    vector_k, lane, rest = fresh(loop_vars[k_iter.var], "vector"), fresh(loop_vars[k_iter.var], "lane"), \
        fresh(loop_vars[k_iter.var], "rest")
    start = tir.Ramp(vector_k * tir.IntImm(index, LANES), tir.IntImm(index, 1), LANES)
    term = nest.bound(store.value.b, {**loop_vars, k_iter.var: start})
    vectors = extent // LANES
    body = tir.SeqStmt((
        tir.BufferStore(lanes, tir.Broadcast(nest.bound(nest.block.init, loop_vars).value, LANES), (whole,)),
        loop(vector_k, tir.IntImm(index, vectors),
             tir.BufferStore(lanes, combine(tir.BufferLoad(lanes, (whole,)), term), (whole,))),
        loop(lane, tir.IntImm(index, LANES), tir.BufferStore(
            acc, combine(acc_load, tir.BufferLoad(lanes, (lane,))), acc_load.indices)),
        loop(rest, tir.IntImm(index, extent - vectors * LANES), tir.BufferStore(
            acc, combine(acc_load, nest.bound(store.value.b, {
                **loop_vars, k_iter.var: rest + tir.IntImm(index, vectors * LANES)})), acc_load.indices)),
    ))
    return allocation(lanes, body)


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    store, spatial, reduce = reduction_parts(nest)
    loop_vars = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in spatial + reduce}
    zero = tir.IntImm("int64", 0)
    acc = tir.Buffer(f"{store.buffer.name}_acc", (tir.IntImm("int64", 1),), store.buffer.dtype,
                     tir.Var(f"{store.buffer.name}_acc", "handle"), scope="local")
    acc_load = tir.BufferLoad(acc, (zero,))
    init = nest.bound(nest.block.init, loop_vars)
    update = nest.bound(store.value.b, loop_vars)
    if _vector_form(nest, store, reduce):
        stmt = _vector_reduction(nest, store, reduce, loop_vars, acc, acc_load)
    else:
        stmt = tir.BufferStore(acc, type(store.value)(acc_load, update), (zero,))
        for iv in reversed(reduce):
            stmt = loop(loop_vars[iv.var], nest.loop_of(iv).extent, stmt)
    output = nest.bound(store, loop_vars).with_fields(value=acc_load)
    stmt = allocation(acc, tir.SeqStmt((tir.BufferStore(acc, init.value, (zero,)), stmt, output)))
    for iv in reversed(spatial):
        stmt = loop(loop_vars[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt
