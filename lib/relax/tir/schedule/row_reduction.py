"""Rule: a reduction over the innermost loops accumulates in a register, not in memory.

Sums, maxima, softmax and layer_norm statistics are legalized as
`B[i] = B[i] + A[i, k]` with k innermost: every step loads and stores B[i]. The
rule gives each output element a one-element local accumulator, which LLVM keeps
in a register and (floats carry `reassoc`) vectorizes into partial sums. The
order of the terms is the one of the plain nest.

    for i, k in T.grid(M, K):                 for i in range(M):
        with T.block("sum"):                      acc = T.alloc_buffer((1,), "local")
            ... init: B[vi] = 0          ->       acc[0] = 0
            B[vi] = B[vi] + A[vi, vk]             for k in range(K): acc[0] = acc[0] + A[i, k]
                                                  B[i] = acc[0]
"""

from __future__ import annotations

from ...ir import tir
from ..convert_blocks_to_loops import allocation
from .nest import Nest, fresh, loop
from .reduction_order import reduction_parts


def matches(nest: Nest, cpu=None) -> bool:
    parts = reduction_parts(nest)
    if parts is None:
        return False
    _, spatial, reduce = parts
    positions = {id(iv): nest.loops.index(nest.loop_of(iv)) for iv in spatial + reduce}
    return max((positions[id(iv)] for iv in spatial), default=-1) < min(positions[id(iv)] for iv in reduce)


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    store, spatial, reduce = reduction_parts(nest)
    loop_vars = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in spatial + reduce}
    zero = tir.IntImm("int64", 0)
    acc = tir.Buffer(f"{store.buffer.name}_acc", (tir.IntImm("int64", 1),), store.buffer.dtype,
                     tir.Var(f"{store.buffer.name}_acc", "handle"), scope="local")
    acc_load = tir.BufferLoad(acc, (zero,))
    init = nest.bound(nest.block.init, loop_vars)
    update = nest.bound(store.value.b, loop_vars)
    stmt = tir.BufferStore(acc, type(store.value)(acc_load, update), (zero,))
    for iv in reversed(reduce):
        stmt = loop(loop_vars[iv.var], nest.loop_of(iv).extent, stmt)
    output = nest.bound(store, loop_vars).with_fields(value=acc_load)
    stmt = allocation(acc, tir.SeqStmt((tir.BufferStore(acc, init.value, (zero,)), stmt, output)))
    for iv in reversed(spatial):
        stmt = loop(loop_vars[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt
