"""Rule for every nest: its outermost independent loop runs on all cores when the nest is big.

    for i, j in T.grid(4096, 4096): ...   ->   for i in T.parallel(4096): for j in range(4096): ...

A rule that rewrites a nest marks the loops whose iterations are independent with
the annotation INDEPENDENT (spatial loops and tiles of them); the first marked loop
with more than one iteration on each path from the top becomes parallel when the
work below it is big, and the marks are removed. A nest left in block form finds its
independent loops with loop_nests.spatial_prefix. Nests doing fewer than
MIN_PARALLEL_WORK innermost iterations stay serial: starting threads would cost
more than they save (the threshold default-cpu-schedule uses). An iteration that
calls a transcendental function (exp, erf, tanh ...) counts as 1 + CALL_WEIGHT
iterations: such a call costs several simple operations, so a GELU over 128 x 1024
elements gains from a second core where an add over as many elements stays serial.
"""

from __future__ import annotations

from ...ir import tir
from ...ir.node import FrozenDict
from ..default_cpu_schedule import MIN_PARALLEL_WORK, estimated_work
from ..loop_nests import spatial_prefix
from ..rewrite import Rewriter, collect

INDEPENDENT = "relax.schedule.independent"
# Calls costing several simple operations each (a vectorized exp or erf takes about
# as long as six to seven adds: docs/performance-notes.md).
EXPENSIVE_CALLS = frozenset(f"tir.{name}" for name in (
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "erf", "tanh", "sigmoid",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "pow", "cbrt"))
CALL_WEIGHT = 8


def iteration_weight(stmt: tir.Stmt) -> int:
    """How many simple iterations one innermost iteration of `stmt` stands for (its expensive calls)."""
    return 1 + CALL_WEIGHT * sum(1 for call in collect(stmt, tir.Call) if call.op in EXPENSIVE_CALLS)


def _is_unit(loop: tir.For) -> bool:
    return isinstance(loop.extent, tir.IntImm) and loop.extent.value <= 1


class _Unmark(Rewriter):
    statements_only = True

    def visit_For(self, loop):
        loop = self.generic_visit(loop)
        if INDEPENDENT in loop.annotations:
            loop = loop.with_fields(annotations=FrozenDict(
                {k: v for k, v in loop.annotations.items() if k != INDEPENDENT}))
        return loop


def _mark_marked(stmt, min_work: float, scale: float):
    if isinstance(stmt, tir.For) and INDEPENDENT in stmt.annotations:
        if not _is_unit(stmt) and estimated_work(stmt) * scale >= min_work:
            return stmt.with_fields(kind="parallel")
        return stmt.with_fields(body=_mark_marked(stmt.body, min_work, scale))
    if isinstance(stmt, tir.SeqStmt):
        return tir.SeqStmt(tuple(_mark_marked(child, min_work, scale) for child in stmt.seq))
    if isinstance(stmt, (tir.Allocate, tir.DeclBuffer, tir.LetStmt)):
        return stmt.with_fields(body=_mark_marked(stmt.body, min_work, scale))
    return stmt


def _mark_loop(stmt, target_loop: tir.For):
    if stmt is target_loop:
        return stmt.with_fields(kind="parallel")
    return stmt.with_fields(body=_mark_loop(stmt.body, target_loop))


def parallelize(original: tir.Stmt, scheduled: tir.Stmt, min_work: int = MIN_PARALLEL_WORK) -> tir.Stmt:
    """`scheduled` with its outer independent loops parallel where the work is big enough."""
    if scheduled is not original:
        # Work is counted in the plain nest's innermost iterations (a vector statement
        # of the scheduled nest stands for many): scale the scheduled nest's counts.
        scale = estimated_work(original) * iteration_weight(original) / max(1, estimated_work(scheduled))
        return _Unmark().visit(_mark_marked(scheduled, min_work, scale))
    if not big_enough(original, min_work):
        return original
    chosen = next((loop for loop in spatial_prefix(original) if not _is_unit(loop)), None)
    return original if chosen is None else _mark_loop(original, chosen)


def big_enough(original: tir.Stmt, min_work: int = MIN_PARALLEL_WORK) -> bool:
    """Whether the plain nest `original` does enough work for its outer loop to run in parallel."""
    return estimated_work(original) * iteration_weight(original) >= min_work


def strip_marks(stmt: tir.Stmt) -> tir.Stmt:
    return _Unmark().visit(stmt)
