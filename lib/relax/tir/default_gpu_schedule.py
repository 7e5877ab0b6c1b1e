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
from .rewrite import Rewriter, collect, substitute, walk


def _int(dtype: str, value: int) -> tir.IntImm:
    return tir.IntImm(dtype, value)


def _uses(node, var) -> bool:
    found = []
    walk(node, lambda n: found.append(True) if n is var else None)
    return bool(found)


def _perfect_loops(stmt) -> tuple[list[tir.For], tir.Stmt]:
    loops = []
    while isinstance(stmt, tir.For) and stmt.kind == "serial":
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def _is_spatial(loop: tir.For, body: tir.Stmt) -> bool:
    """Whether the loop's variable feeds a spatial iterator of every block below it and
    no other iterator: then its iterations touch disjoint block instances."""
    realizes = collect(body, tir.BlockRealize)
    if not realizes or collect(_outside_blocks(body), tir.BufferStore):
        return False
    for realize in realizes:
        feeds_spatial = False
        for iter_var, value in zip(realize.block.iter_vars, realize.iter_values):
            if _uses(value, loop.loop_var):
                if iter_var.iter_type != "DataPar":
                    return False
                feeds_spatial = True
        if not feeds_spatial:  # every iteration would run the same block instance
            return False
    return True


class _CutBlocks(Rewriter):
    def visit_BlockRealize(self, realize):
        return tir.Evaluate(tir.IntImm("int32", 0))


def _outside_blocks(stmt):
    """`stmt` with every BlockRealize replaced by a no-op (to find stores outside blocks)."""
    return _CutBlocks().visit(stmt)


def _launch(body: tir.Stmt, blocks, threads, dtype: str, name: str):
    """for bx in thread_binding(blocks): for tx in thread_binding(threads): body(bx, tx)."""
    bx, tx = tir.Var(f"{name}_bx", dtype), tir.Var(f"{name}_tx", dtype)
    inner = body(bx, tx)
    return tir.For(bx, _int(dtype, 0), blocks, "thread_binding",
                   tir.For(tx, _int(dtype, 0), threads, "thread_binding", inner, thread_tag="threadIdx.x"),
                   thread_tag="blockIdx.x")


def _schedule_nest(stmt: tir.Stmt, max_threads: int, name: str) -> tir.Stmt:
    loops, innermost = _perfect_loops(stmt)
    spatial = []
    for loop in loops:
        if not _is_spatial(loop, loop.body) or any(
            _uses(loop.extent, outer.loop_var) or _uses(loop.min, outer.loop_var) for outer in spatial
        ):
            break
        spatial.append(loop)
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


def _top_level(stmt):
    """The statements of a body to schedule one by one, and how to put them back."""
    if isinstance(stmt, tir.BlockRealize) and not stmt.block.iter_vars:
        inner, rebuild = _top_level(stmt.block.body)
        return inner, lambda seq: stmt.with_fields(block=stmt.block.with_fields(body=rebuild(seq)))
    if isinstance(stmt, (tir.Allocate, tir.DeclBuffer, tir.LetStmt)):
        inner, rebuild = _top_level(stmt.body)
        return inner, lambda seq: stmt.with_fields(body=rebuild(seq))
    if isinstance(stmt, tir.SeqStmt):
        return list(stmt.seq), lambda seq: tir.SeqStmt(tuple(seq)) if len(seq) > 1 else seq[0]
    return [stmt], lambda seq: seq[0] if len(seq) == 1 else tir.SeqStmt(tuple(seq))


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
        if any(f.kind == "thread_binding" for f in collect(func.body, tir.For)) or any(
            a.attr_key == "thread_extent" for a in collect(func.body, tir.AttrStmt)
        ):
            return func
        statements, rebuild = _top_level(func.body)
        scheduled = [_schedule_nest(stmt, self.max_threads, f"k{index}") for index, stmt in enumerate(statements)]
        return func.with_fields(body=rebuild(scheduled))
