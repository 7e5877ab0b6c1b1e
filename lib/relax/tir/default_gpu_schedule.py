"""default-gpu-schedule: unscheduled loop nests get GPU threads (cuda targets only).

Each top-level loop nest of a function without thread bindings is scheduled on its
own. Its leading perfectly nested loops that feed only spatial (DataPar) block
iterators can run in any order, so they are fused into one index and split into
blockIdx.x x threadIdx.x, with a guard when the count does not divide; loops below
(reductions) stay serial inside each thread. A nest with no such loop, or a
statement outside any loop, runs in a single thread (a 1 x 1 launch): slow but
correct. Runs before convert-blocks-to-loops, because only blocks say which
iterators are spatial.
"""

from __future__ import annotations

from ..ir import tir
from .loop_nests import has_thread_bindings, spatial_prefix, top_level
from .rewrite import substitute


def _int(dtype: str, value: int) -> tir.IntImm:
    return tir.IntImm(dtype, value)


def _launch(body: tir.Stmt, blocks, threads, dtype: str, name: str):
    """for bx in thread_binding(blocks): for tx in thread_binding(threads): body(bx, tx)."""
    bx, tx = tir.Var(f"{name}_bx", dtype), tir.Var(f"{name}_tx", dtype)
    inner = body(bx, tx)
    return tir.For(bx, _int(dtype, 0), blocks, "thread_binding",
                   tir.For(tx, _int(dtype, 0), threads, "thread_binding", inner, thread_tag="threadIdx.x"),
                   thread_tag="blockIdx.x")


def schedule_nest(stmt: tir.Stmt, max_threads: int, name: str) -> tir.Stmt:
    spatial = spatial_prefix(stmt)
    if not spatial:
        return _launch(lambda bx, tx: stmt, _int("int32", 1), _int("int32", 1), "int32", name)
    dtype = spatial[0].loop_var.dtype
    total = spatial[0].extent
    for loop in spatial[1:]:
        total = tir.Mul(total, loop.extent) if loop.extent.dtype == total.dtype else tir.Mul(
            total, tir.Cast(total.dtype, loop.extent))
    body_below = spatial[-1].body
    known = total.value if isinstance(total, tir.IntImm) else _constant_product(spatial)

    def body(bx, tx):
        threads = min(max_threads, known) if known is not None else max_threads
        fused = tir.Add(tir.Mul(bx, _int(dtype, threads)), tx)
        mapping, rest = {}, fused
        for loop in reversed(spatial[1:]):
            extent = loop.extent if loop.extent.dtype == dtype else tir.Cast(dtype, loop.extent)
            mapping[loop.loop_var] = tir.Add(loop.min, tir.FloorMod(rest, extent))
            rest = tir.FloorDiv(rest, extent)
        # The outermost index needs no modulo: the guard (or an exact split) keeps it in range.
        mapping[spatial[0].loop_var] = tir.Add(spatial[0].min, rest)
        inner = substitute(body_below, mapping)
        if known is None or known % threads:
            inner = tir.IfThenElse(tir.LT(fused, total if total.dtype == dtype else tir.Cast(dtype, total)), inner)
        return inner

    threads = min(max_threads, known) if known is not None else max_threads
    if known is not None:
        blocks = _int(dtype, -(-known // threads))
    else:
        size = total if total.dtype == dtype else tir.Cast(dtype, total)
        blocks = tir.FloorDiv(tir.Add(size, _int(dtype, threads - 1)), _int(dtype, threads))
    return _launch(body, blocks, _int(dtype, threads), dtype, name)


def _constant_product(loops) -> int | None:
    product = 1
    for loop in loops:
        if not isinstance(loop.extent, tir.IntImm):
            return None
        product *= loop.extent.value
    return product


class DefaultGPUSchedule:
    """The pass object: `DefaultGPUSchedule(max_threads_per_block).run(func)`.

    Before:

        for i, j in T.grid(64, 1000):
            with T.block("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + B[vi, vj]

    After (max_threads_per_block = 1024):

        for bx in T.thread_binding(63, thread="blockIdx.x"):
            for tx in T.thread_binding(1024, thread="threadIdx.x"):
                if bx * 1024 + tx < 64000:
                    with T.block("add"):
                        vi = T.axis.spatial(64, (bx * 1024 + tx) // 1000)
                        vj = T.axis.spatial(1000, (bx * 1024 + tx) % 1000)
                        ...
    """

    name = "default-gpu-schedule"

    def __init__(self, max_threads_per_block: int = 1024):
        self.max_threads = max_threads_per_block

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        if has_thread_bindings(func):
            return func
        statements, rebuild = top_level(func.body)
        scheduled = [schedule_nest(stmt, self.max_threads, f"k{index}") for index, stmt in enumerate(statements)]
        return func.with_fields(body=rebuild(scheduled))
