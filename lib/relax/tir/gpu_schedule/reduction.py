"""Rule: a reduction over the innermost axes runs one block per output element (a "row").

Sums, maxima and minima (and so softmax's max/sum stages, mean's sum, layer_norm and
rms_norm statistics, as lib/relax/op legalizes them) are `B[s] = B[s] op f(s, k)`
with the reduction loops innermost. Each block computes one B[s]:

1. every thread accumulates the terms k = tx, tx + T, tx + 2T, ... in a local
   accumulator that starts at the init value (coalesced loads of the row);
2. each warp combines its 32 accumulators with `tvm_warp_shuffle_down` (offsets
   16, 8, 4, 2, 1), lane 0 holding the warp's result;
3. lane 0 of every warp writes its result to a `__shared__` array; after a
   `tvm_storage_sync` the first warp loads them (the init value past the last warp)
   and combines them with shuffles again; thread 0 writes B[s].

The terms are combined in another order than the serial nest: float results may
differ in the last bits (sum) but max/min are exact.

    for i, k in T.grid(M, N):                  for bx in T.thread_binding(M, "blockIdx.x"):
        with T.block("sum"):             ->        for tx in T.thread_binding(256, "threadIdx.x"):
            init: B[vi] = 0                            acc = 0; for r in range(ceildiv(N, 256)): if r*256+tx < N: acc += A[bx, r*256+tx]
            B[vi] = B[vi] + A[vi, vk]                  acc += shfl_down(acc, 16) ... ; partial[warp] = acc; sync
                                                       if tx < 32: acc = partial[tx] or 0; shfl_down ...; if tx == 0: B[bx] = acc
"""

from __future__ import annotations

from ...ir import tir
from ..schedule.nest import Nest
from ..schedule.reduction_order import reduction_parts
from .launch import (allocate, as_index, ceildiv, imm, launch, scoped_buffer, product, seq, shuffle_down,
                     split_index, sync)

WARP = 32
COMBINERS = (tir.Add, tir.Max, tir.Min)  # associative and commutative: the terms may be regrouped


def matches(nest: Nest, options) -> bool:
    if options.threads < WARP:
        return False
    parts = reduction_parts(nest)
    if parts is None:
        return False
    store, spatial, reduce = parts
    if type(store.value) not in COMBINERS or store.value.a.dtype != store.buffer.dtype:
        return False
    positions = {id(iv): nest.loops.index(nest.loop_of(iv)) for iv in spatial + reduce}
    return max((positions[id(iv)] for iv in spatial), default=-1) < min(positions[id(iv)] for iv in reduce)


def _threads(extent, limit: int) -> int:
    """Threads per block: a multiple of the warp, no more than the row needs (when known)."""
    limit = max(WARP, limit - limit % WARP)
    if isinstance(extent, tir.IntImm):
        needed = -(-max(extent.value, 1) // WARP) * WARP
        return min(limit, needed)
    return limit


def _warp_combine(combine, acc: tir.Buffer, zero) -> list[tir.Stmt]:
    load = tir.BufferLoad(acc, (zero,))
    return [tir.BufferStore(acc, combine(load, shuffle_down(load, offset)), (zero,))
            for offset in (16, 8, 4, 2, 1)]


def apply(nest: Nest, options, name: str) -> tir.Stmt:
    store, spatial, reduce = reduction_parts(nest)
    combine = type(store.value)
    index = nest.loops[0].loop_var.dtype
    rows_extents = [as_index(nest.loop_of(iv).extent, index) for iv in spatial]
    reduce_extents = [as_index(nest.loop_of(iv).extent, index) for iv in reduce]
    rows, length = product(rows_extents, index), product(reduce_extents, index)
    threads = _threads(length, min(options.threads, 1024))
    warps = threads // WARP
    dtype = store.buffer.dtype
    zero = imm("int64", 0)

    def body(ix):
        bx, tx = ix["blockIdx.x"], ix["threadIdx.x"]
        row = dict(zip((iv.var for iv in spatial), split_index(bx, rows_extents, index) if spatial else []))
        init_value = nest.bound(nest.block.init, {**row, **{iv.var: imm(index, 0) for iv in reduce}}).value
        acc = scoped_buffer(f"{name}_acc", dtype, (1,))
        partial = scoped_buffer(f"{name}_partial", dtype, (warps,), scope="shared")
        acc_load = tir.BufferLoad(acc, (zero,))
        step = tir.Var(f"{name}_r", index)
        k = tir.Add(tir.Mul(step, imm(index, threads)), tx)
        terms = dict(zip((iv.var for iv in reduce), split_index(k, reduce_extents, index)))
        term = nest.bound(tir.Evaluate(store.value.b), {**row, **terms}).value
        accumulate = tir.For(step, imm(index, 0), ceildiv(length, threads, index), "serial", tir.IfThenElse(
            tir.LT(k, length), tir.BufferStore(acc, combine(acc_load, term), (zero,))))
        lane, warp = tir.FloorMod(tx, imm(index, WARP)), tir.FloorDiv(tx, imm(index, WARP))
        output = nest.bound(store, {**row, **{iv.var: imm(index, 0) for iv in reduce}})
        write = tir.IfThenElse(tir.EQ(tx, imm(index, 0)), output.with_fields(value=acc_load))
        stmts = [tir.BufferStore(acc, init_value, (zero,)), accumulate, *_warp_combine(combine, acc, zero)]
        if warps == 1:
            return allocate(acc, seq(*stmts, write))
        gather = tir.IfThenElse(
            tir.LT(tx, imm(index, warps)), tir.BufferStore(acc, tir.BufferLoad(partial, (tx,)), (zero,)),
            tir.BufferStore(acc, init_value, (zero,)))
        second = tir.IfThenElse(tir.LT(tx, imm(index, WARP)), seq(
            gather, *_warp_combine(combine, acc, zero), write))
        stmts += [tir.IfThenElse(tir.EQ(lane, imm(index, 0)), tir.BufferStore(
            partial, acc_load, (warp,))), sync(), second]
        return allocate(partial, allocate(acc, seq(*stmts)))

    return launch(index, name, {"x": rows}, {"x": imm(index, threads)}, body)
