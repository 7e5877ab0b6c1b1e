"""Loop-nest analysis shared by the default schedules (before blocks are lowered).

A function body is a list of top-level statements (under the root block and any
allocations); each is scheduled on its own. `spatial_prefix` finds the leading
perfectly nested serial loops whose iterations are independent: each loop's
variable feeds a spatial (DataPar) iterator of every block below it and no other
kind of iterator, so different iterations touch different block instances. Only
blocks carry that fact, which is why the schedules run before
convert-blocks-to-loops.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.node import Node
from .rewrite import Rewriter, collect, node_fields, statements


def uses(node, var) -> bool:
    """Whether `var` occurs in `node` (buffers' shapes included); stops at the first occurrence."""
    stack = [node]
    seen_buffers: set[int] = set()
    while stack:
        current = stack.pop()
        if current is var:
            return True
        if isinstance(current, tuple):
            stack.extend(current)
        elif isinstance(current, Node):
            if isinstance(current, tir.Buffer):
                if id(current) in seen_buffers:
                    continue
                seen_buffers.add(id(current))
            stack.extend(getattr(current, name) for name in node_fields(type(current)))
    return False


def perfect_loops(stmt) -> tuple[list[tir.For], tir.Stmt]:
    """The serial loops nested directly in one another from `stmt` down, and what is below."""
    loops = []
    while isinstance(stmt, tir.For) and stmt.kind == "serial":
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


class _CutBlocks(Rewriter):
    def visit_BlockRealize(self, realize):
        return tir.Evaluate(tir.IntImm("int32", 0))


def is_spatial(loop: tir.For) -> bool:
    """Whether the loop's iterations are independent (see the module docstring)."""
    realizes = collect(loop.body, tir.BlockRealize)
    if not realizes or collect(_CutBlocks().visit(loop.body), tir.BufferStore):
        return False
    for realize in realizes:
        feeds_spatial = False
        for iter_var, value in zip(realize.block.iter_vars, realize.iter_values):
            if uses(value, loop.loop_var):
                if iter_var.iter_type != "DataPar":
                    return False
                feeds_spatial = True
        if not feeds_spatial:  # every iteration would run the same block instance
            return False
    return True


def spatial_prefix(stmt) -> list[tir.For]:
    """The leading loops of `stmt` that may run in any order (outermost first)."""
    loops, _ = perfect_loops(stmt)
    spatial: list[tir.For] = []
    for loop in loops:
        depends = any(uses(loop.extent, outer.loop_var) or uses(loop.min, outer.loop_var) for outer in spatial)
        if depends or not is_spatial(loop):
            break
        spatial.append(loop)
    return spatial


def top_level(stmt):
    """(statements, rebuild): the body's top-level statements and how to put them back."""
    if isinstance(stmt, tir.BlockRealize) and not stmt.block.iter_vars:
        inner, rebuild = top_level(stmt.block.body)
        return inner, lambda seq: stmt.with_fields(block=stmt.block.with_fields(body=rebuild(seq)))
    if isinstance(stmt, (tir.Allocate, tir.DeclBuffer, tir.LetStmt)):
        inner, rebuild = top_level(stmt.body)
        return inner, lambda seq: stmt.with_fields(body=rebuild(seq))
    if isinstance(stmt, tir.SeqStmt):
        return list(stmt.seq), lambda seq: tir.SeqStmt(tuple(seq)) if len(seq) > 1 else seq[0]
    return [stmt], lambda seq: seq[0] if len(seq) == 1 else tir.SeqStmt(tuple(seq))


def any_loop(stmt: tir.Stmt, predicate) -> bool:
    """Whether a For under `stmt` satisfies `predicate`; stops at the first."""
    return any(isinstance(node, tir.For) and predicate(node) for node in statements(stmt))


def has_thread_bindings(func: tir.PrimFunc) -> bool:
    """Whether a loop is bound to a thread or an AttrStmt sets a thread extent (both are
    statements); stops at the first."""
    for node in statements(func.body):
        if isinstance(node, tir.For) and node.kind == "thread_binding":
            return True
        if isinstance(node, tir.AttrStmt) and node.attr_key == "thread_extent":
            return True
    return False
