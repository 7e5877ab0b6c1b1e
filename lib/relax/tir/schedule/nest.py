"""A top-level loop nest seen as one block: the shape every schedule rule matches.

    for i, j, k in T.grid(M, N, K):            Nest(loops=[i, j, k],
        with T.block("C"):                  ->      iters=[vi: S, vj: S, vk: R],
            vi, vj, vk = T.axis.remap(...)          loop_of={vi: i, vj: j, vk: k},
            ...                                     block=C)

A nest matches when its serial loops are perfectly nested around a single
BlockRealize whose iterators are each bound to a distinct loop variable (the
`T.axis.remap` form legalization and FuseTIR write), its predicate is true and it
declares no buffers of its own. `emit` writes plain loops (no block) back in any
loop order: the rules only choose the order, the tiles and the loop kinds.
"""

from __future__ import annotations

from ...ir import tir
from ...ir.node import FrozenDict
from ...records import record
from ..loop_nests import perfect_loops, uses
from ..rewrite import substitute


@record
class Nest:
    loops: tuple[tir.For, ...]
    realize: tir.BlockRealize

    @property
    def block(self) -> tir.Block:
        return self.realize.block

    def loop_of(self, iter_var: tir.IterVar) -> tir.For:
        value = self.realize.iter_values[self.block.iter_vars.index(iter_var)]
        return next(loop for loop in self.loops if loop.loop_var is value)

    def iters(self, iter_type: str) -> list[tir.IterVar]:
        """The block's iterators of one type, in loop order."""
        chosen = [iv for iv in self.block.iter_vars if iv.iter_type == iter_type]
        return sorted(chosen, key=lambda iv: self.loops.index(self.loop_of(iv)))

    def bound(self, body: tir.Stmt, values: dict) -> tir.Stmt:
        """`body` (a block statement) with each iterator replaced by its value in `values`."""
        return substitute(body, {iv.var: values[iv.var] for iv in self.block.iter_vars})


def _is_true(expr) -> bool:
    return isinstance(expr, tir.IntImm) and expr.value == 1


def match_nest(stmt) -> Nest | None:
    """The Nest `stmt` is, or None when it has another shape."""
    loops, inner = perfect_loops(stmt)
    if not loops or not isinstance(inner, tir.BlockRealize):
        return None
    block = inner.block
    if (not _is_true(inner.predicate) or block.alloc_buffers or block.match_buffers
            or not isinstance(block.body, tir.BufferStore)
            or not (block.init is None or isinstance(block.init, tir.BufferStore))):
        return None
    loop_vars = [loop.loop_var for loop in loops]
    values = list(inner.iter_values)
    if len(values) != len(loops) or any(v not in loop_vars for v in values) or len(set(map(id, values))) != len(values):
        return None
    for loop in loops:
        if not (isinstance(loop.min, tir.IntImm) and loop.min.value == 0):
            return None
        if not isinstance(loop.extent, tir.IntImm) and any(uses(loop.extent, other.loop_var) for other in loops):
            return None
    if any(iv.iter_type not in ("DataPar", "CommReduce") for iv in block.iter_vars):
        return None
    for iv, loop in zip(block.iter_vars, [next(lp for lp in loops if lp.loop_var is v) for v in values]):
        if not (isinstance(iv.dom.min, tir.IntImm) and iv.dom.min.value == 0):
            return None
    return Nest(tuple(loops), inner)


def loop(var: tir.Var, extent, body: tir.Stmt, independent: bool = False) -> tir.For:
    """A serial loop from 0; `independent` marks it for parallel.py (its iterations may run in any order)."""
    annotations = FrozenDict({"relax.schedule.independent": True}) if independent else FrozenDict()
    return tir.For(var, tir.IntImm(var.dtype, 0), extent, "serial", body, annotations=annotations)


def unrolled(var: tir.Var, extent: int, body: tir.Stmt) -> tir.For:
    """A loop from 0 that LLVM unrolls fully (`llvm.loop.unroll.full`): a register tile's
    statement for each of its vectors, kept one statement for the TIR passes to walk."""
    return tir.For(var, tir.IntImm(var.dtype, 0), tir.IntImm(var.dtype, extent), "unrolled", body)


def fresh(like: tir.Var, suffix: str) -> tir.Var:
    return tir.Var(f"{like.name}_{suffix}", like.dtype)


def seq(stmts) -> tir.Stmt:
    """The statements in order: the statement itself when there is one, else a SeqStmt."""
    return stmts[0] if len(stmts) == 1 else tir.SeqStmt(tuple(stmts))
