"""Rule for every nest: its outermost independent loop runs on all cores when the nest is big.

    for i, j in T.grid(4096, 4096): ...   ->   for i in T.parallel(4096): for j in range(4096): ...

A nest that a rule rewrote starts with independent loops by construction (the
rules put only spatial loops and tiles of them outside the rest); a nest left in
block form finds them with loop_nests.spatial_prefix. Nests doing fewer than
MIN_PARALLEL_WORK innermost iterations stay serial: starting threads would cost
more than they save (the threshold default-cpu-schedule uses, measured there).
"""

from __future__ import annotations

from ...ir import tir
from ..default_cpu_schedule import MIN_PARALLEL_WORK, estimated_work
from ..loop_nests import spatial_prefix


def _leading_loops(stmt) -> list[tir.For]:
    loops = []
    while isinstance(stmt, tir.For) and stmt.kind == "serial":
        loops.append(stmt)
        stmt = stmt.body
    return loops


def _is_unit(loop: tir.For) -> bool:
    return isinstance(loop.extent, tir.IntImm) and loop.extent.value <= 1


def _mark(stmt, target_loop: tir.For) -> tir.Stmt:
    if stmt is target_loop:
        return stmt.with_fields(kind="parallel")
    return stmt.with_fields(body=_mark(stmt.body, target_loop))


def parallelize(original: tir.Stmt, scheduled: tir.Stmt, min_work: int = MIN_PARALLEL_WORK) -> tir.Stmt:
    """`scheduled` with its outer independent loop parallel when `original` is big enough."""
    if estimated_work(original) < min_work:
        return scheduled
    independent = _leading_loops(scheduled) if scheduled is not original else spatial_prefix(original)
    chosen = next((loop for loop in independent if not _is_unit(loop)), None)
    return scheduled if chosen is None else _mark(scheduled, chosen)
