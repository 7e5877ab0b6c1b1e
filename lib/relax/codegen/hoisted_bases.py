"""Base pointers of an unrolled loop's buffer accesses, computed once before the loop.

A register tile's loops over its slots are `unrolled` (tir/schedule/register_tile.py):
each slot reads and writes `buffer[row_base + f(slot)]`, where the row base (the tile's
position: `i * 1536 + j * 64 + ...`) is the same for every slot. Written out, every
copy of the body after LLVM unrolls it computes that base anew, and LLVM's
IndVarSimplify and InstCombine spend their time proving the copies equal, most of all
in an epilogue that reads a second 2-D buffer at C's offsets (a residual add; figures
in docs/performance-notes.md).

Here each access whose index is a sum with terms that do not depend on the loop (their
variables all bound before it) gets `&buffer[invariant terms]` once, before the loop,
and the body adds only the other terms. Only where the other terms are 0 at the loop's
first iteration, so that the hoisted pointer is an element the loop does access and
stays an in-bounds address.

The base of a scalar access (a tile's row of A, one element broadcast per slot) is
frozen: `freeze` gives the same address, but LLVM's scalar evolution takes it as a value
of its own. Otherwise loop strength reduction, in the code generator, sees each row as a
recurrence over every loop around the tile, and where one of those is a batch or a k
block, the rows' constant offsets sit inside those recurrences: six rows (twelve, k
unrolled twice) become as many unrelated uses, whose combinations it searches until its
budget runs out. Frozen, a row is one base plus constants. Vector accesses (B's panel,
C) are few and keep plain bases, which it reduces to one pointer.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ..ir import tir
from ..tir.arith.bounds import Interval, bound
from ..tir.rewrite import collect
from .codegen_expr import contiguous_ramp
from .llvm_types import memory_type


def _terms(expr: tir.PrimExpr) -> list[tir.PrimExpr]:
    """The operands of a chain of Adds, left to right."""
    if isinstance(expr, tir.Add):
        return _terms(expr.a) + _terms(expr.b)
    return [expr]


def _sum(terms: list[tir.PrimExpr]) -> tir.PrimExpr:
    total = terms[0]
    for term in terms[1:]:
        total = tir.Add(total, term)
    return total


def _start(index: tir.PrimExpr) -> tir.PrimExpr | None:
    """The scalar index of a scalar access, or the first element of a contiguous vector one."""
    if isinstance(index, tir.Ramp):
        return index.base if contiguous_ramp(index) else None
    return index


class HoistedBases:
    """A mixin of FunctionCodegen: `hoist_bases(loop)` before an unrolled loop's body,
    `hoisted_pointer` for each access inside it."""

    hoisted: dict

    def hoist_bases(self, loop: tir.For) -> list:
        """Emits, at the builder's position, the base pointer of every access in `loop`'s body
        that has one; returns the keys added to `self.hoisted` (the caller removes them)."""
        nodes = collect(loop.body, (tir.For, tir.LetStmt, tir.Let, tir.Allocate, tir.BufferLoad, tir.BufferStore))
        inner = {loop.loop_var}  # the variables the body binds: they vary
        inner.update(_bound_var(node) for node in nodes if not isinstance(node, (tir.BufferLoad, tir.BufferStore)))
        added = []
        for access in nodes:
            if not isinstance(access, (tir.BufferLoad, tir.BufferStore)):
                continue
            data = access.buffer.data
            if len(access.indices) != 1 or data in inner or data not in self.vars:
                continue
            start = _start(access.indices[0])
            key = (id(access.buffer), id(start))
            if start is None or key in self.hoisted:
                continue
            split = _split(start, loop, inner, self.vars)
            if split is None:
                continue
            invariant, rest = split
            pointer = self.index_pointer(access.buffer, invariant)
            scalar = not isinstance(access.indices[0], tir.Ramp)
            self.hoisted[key] = (_frozen(self.builder, pointer) if scalar else pointer, rest)
            added.append(key)
        return added

    def hoisted_pointer(self, buffer: tir.Buffer, start: tir.PrimExpr) -> ir.Value | None:
        """The address of `buffer[start]` from its hoisted base, or None when it has none."""
        found = self.hoisted.get((id(buffer), id(start)))
        if found is None:
            return None
        base, rest = found
        return self.pointer_at(base, memory_type(buffer.dtype), self._index64(self.emit(rest), rest.dtype))


def _frozen(builder: ir.IRBuilder, pointer: ir.Value) -> ir.Value:
    """`freeze` of `pointer`: the same address, which LLVM's scalar evolution takes as a
    value of its own rather than a sum over the loops around (llvmlite's builder has no
    freeze; its generic instruction prints as one)."""
    instruction = ir.instructions.Instruction(builder.block, pointer.type, "freeze", (pointer,))
    builder._insert(instruction)
    return instruction


def _bound_var(node) -> tir.Var:
    if isinstance(node, tir.For):
        return node.loop_var
    return node.buffer_var if isinstance(node, tir.Allocate) else node.var


def _split(start: tir.PrimExpr, loop: tir.For, inner: set, defined: dict):
    """(invariant terms' sum, the other terms' sum) of `start`, or None when it cannot be split:
    terms of another width, no non-constant invariant term, no term that varies, a term that
    loads or calls, a varying term over a variable other than the loop's own, or the varying
    part not 0 at the loop's first iteration."""
    invariant, varying, hoists_a_variable = [], [], False
    terms = _terms(start)
    if any(term.dtype != start.dtype for term in terms):
        return None  # regrouped, narrower terms would add up in their own width
    for term in terms:
        leaves = collect(term, (tir.Var, tir.BufferLoad, tir.Call))
        if any(not isinstance(leaf, tir.Var) for leaf in leaves):
            return None  # a loaded or computed term may change inside the loop
        if any(var in inner for var in leaves):
            if any(var is not loop.loop_var for var in leaves):
                return None
            varying.append(term)
        elif all(var in defined for var in leaves):
            invariant.append(term)
            hoists_a_variable = hoists_a_variable or bool(leaves)
        else:
            return None
    if not varying or not hoists_a_variable or not isinstance(loop.min, tir.IntImm):
        return None
    rest = _sum(varying)
    if bound(rest, {loop.loop_var: Interval(loop.min.value, loop.min.value)}) != Interval(0, 0):
        return None
    return _sum(invariant), rest

