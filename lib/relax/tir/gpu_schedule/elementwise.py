"""Rule: an elementwise/injective nest runs flattened, several elements per thread.

A nest of spatial loops around one block without reduction writes each element
once, so its iterations are numbered 0..total-1 and split over blockIdx.x x
threadIdx.x. When the total is large (or unknown), each thread handles ELEMENTS
elements in an unrolled loop, a block's threads touching consecutive elements at
each step (coalesced); a guard skips indices past the end when the total does not
divide.

    for i, j in T.grid(M, N):                 for bx in T.thread_binding(ceildiv(M*N, 1024), "blockIdx.x"):
        with T.block("add"):          ->          for tx in T.thread_binding(256, "threadIdx.x"):
            C[vi, vj] = A[vi, vj] + 1                 for e in T.unroll(4):
                                                          if (bx*4 + e)*256 + tx < M*N:
                                                              C[f // N, f % N] = A[f // N, f % N] + 1
"""

from __future__ import annotations

from ...ir import tir
from ..rewrite import substitute
from ..schedule.nest import Nest
from .launch import as_index, ceildiv, imm, launch, product, split_index

THREADS = 256
ELEMENTS = 4  # elements per thread once the total fills THREADS * ELEMENTS


def matches(nest: Nest, options) -> bool:
    return nest.block.init is None and all(iv.iter_type == "DataPar" for iv in nest.block.iter_vars)


def apply(nest: Nest, options, name: str) -> tir.Stmt:
    iters = [iv for iv in nest.block.iter_vars]
    iters.sort(key=lambda iv: nest.loops.index(nest.loop_of(iv)))
    index = nest.loops[0].loop_var.dtype
    extents = [as_index(nest.loop_of(iv).extent, index) for iv in iters]
    total = product(extents, index)
    threads = min(options.threads, THREADS)
    known = total.value if isinstance(total, tir.IntImm) else None
    if known is not None and known <= threads:
        threads = max(known, 1)
    elements = ELEMENTS if known is None or known >= threads * ELEMENTS else 1
    blocks = ceildiv(total, threads * elements, index)

    def body(ix):
        bx, tx = ix["blockIdx.x"], ix["threadIdx.x"]
        step = tir.Var(f"{name}_e", index)
        flat = tir.Add(tir.Mul(tir.Add(tir.Mul(bx, imm(index, elements)), step), imm(index, threads)), tx)
        values = dict(zip((iv.var for iv in iters), split_index(flat, extents, index)))
        stmt = nest.bound(nest.block.body, values)
        if known is None or known % (threads * elements):
            stmt = tir.IfThenElse(tir.LT(flat, total), stmt)
        if elements == 1:
            return substitute(stmt, {step: imm(index, 0)})
        return tir.For(step, imm(index, 0), imm(index, elements), "unrolled", stmt)

    return launch(index, name, {"x": blocks}, {"x": imm(index, threads)}, body)
