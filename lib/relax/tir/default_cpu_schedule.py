"""default-cpu-schedule: big unscheduled loop nests run their outer loop on all cores.

For each top-level loop nest of a function that has no parallel or thread-bound loop
yet, the first loop of its independent prefix (loop_nests.spatial_prefix) whose
extent is not 1 becomes a "parallel" loop, which the code generator runs in chunks on
the target's cores, when the nest does at least MIN_PARALLEL_WORK innermost
iterations; smaller nests stay serial, where starting threads would cost more than
it saves. Reductions are never split: a reduction loop is never in the prefix. Runs
before convert-blocks-to-loops, because only blocks say which loops are independent.
"""

from __future__ import annotations

from ..ir import tir
from .loop_nests import any_loop, has_thread_bindings, spatial_prefix, top_level
from .rewrite import Rewriter

MIN_PARALLEL_WORK = 1 << 18  # below this, starting threads costs about what they save
SYMBOLIC_EXTENT_GUESS = 64  # how many iterations a loop of unknown extent is taken to run


def estimated_work(stmt) -> int:
    """Innermost iterations of `stmt`: loop extents multiply, sequences add."""
    if isinstance(stmt, tir.For):
        extent = stmt.extent.value if isinstance(stmt.extent, tir.IntImm) else SYMBOLIC_EXTENT_GUESS
        return max(extent, 0) * estimated_work(stmt.body)
    if isinstance(stmt, tir.SeqStmt):
        return sum(estimated_work(child) for child in stmt.seq)
    if isinstance(stmt, tir.BlockRealize):
        return estimated_work(stmt.block.body)
    if isinstance(stmt, (tir.IfThenElse,)):
        return max(estimated_work(stmt.then_case), estimated_work(stmt.else_case) if stmt.else_case else 0)
    if isinstance(stmt, (tir.LetStmt, tir.Allocate, tir.DeclBuffer, tir.AttrStmt, tir.AssertStmt)):
        return estimated_work(stmt.body)
    return 1


def _parallel_loop(stmt, min_work: int) -> tir.For | None:
    if estimated_work(stmt) < min_work:
        return None
    for loop in spatial_prefix(stmt):
        if not (isinstance(loop.extent, tir.IntImm) and loop.extent.value <= 1):
            return loop
    return None


class _MarkParallel(Rewriter):
    def __init__(self, loop: tir.For):
        self.loop = loop

    def visit_For(self, loop):
        if loop is self.loop:
            return loop.with_fields(kind="parallel")
        return self.generic_visit(loop)


class DefaultCPUSchedule:
    """The pass object: `DefaultCPUSchedule(min_work).run(func)`.

    Before:

        for i, j, k in T.grid(512, 512, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                ...

    After:

        for i in T.parallel(512):
            for j, k in T.grid(512, 64):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    ...
    """

    name = "default-cpu-schedule"

    def __init__(self, min_work: int = MIN_PARALLEL_WORK):
        self.min_work = min_work

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        if has_thread_bindings(func) or any_loop(func.body, lambda loop: loop.kind == "parallel"):
            return func
        statements, rebuild = top_level(func.body)
        scheduled = []
        for stmt in statements:
            loop = _parallel_loop(stmt, self.min_work)
            scheduled.append(_MarkParallel(loop).visit(stmt) if loop is not None else stmt)
        if all(a is b for a, b in zip(scheduled, statements)):
            return func
        return func.with_fields(body=rebuild(scheduled))
