"""Elementwise producers inlined into their consumers: one pass over memory instead of many.

FuseTIR keeps every operator of a fused kernel as its own nest writing a
kernel-local buffer, so a GELU epilogue (add, divide, erf, add, multiply, multiply)
sweeps six 512 KiB intermediates one after the other. A producer is inlined when:

- its nest is spatial only (no reduction, no init) and writes a buffer allocated
  inside the kernel, at indices that are exactly its iterators in order;
- no other statement writes that buffer, and nothing it reads is written later;
- every block that reads it reads each element once per block instance (the load's
  indices use every iterator of the reading block with more than one value), so
  inlining never recomputes a producer element for each step of a reduction or each
  row of a broadcast; and
- it is cheap (loads, constants, arithmetic: no calls) or read at one place only,
  so an expensive erf or exp is never computed twice.

Each element still computes the same operations on the same values as the plain
nests (results agree up to LLVM contracting a multiply and an add into one fma).

    for i, j in T.grid(M, N):  T[i, j] = bias[j] + mm[i, j]        for i, j in T.grid(M, N):
    for i, j in T.grid(M, N):  E[i, j] = T.erf(T[i, j] * c)    ->      out[i, j] = (bias[j] + mm[i, j]) * (T.erf((bias[j] + mm[i, j]) * c) + 1)
    for i, j in T.grid(M, N):  out[i, j] = T[i, j] * (E[i, j] + 1)
"""

from __future__ import annotations

from ...ir import tir
from ..loop_nests import top_level, uses
from ..rewrite import Rewriter, collect, substitute
from .nest import Nest, match_nest


def _stored_buffers(stmt) -> set[int]:
    return {id(store.buffer) for store in collect(stmt, tir.BufferStore)}


def _producer(nest: Nest | None, locals_: set[int]) -> tir.BufferStore | None:
    """The elementwise store of `nest` when it can be inlined by its shape, else None."""
    if nest is None or nest.block.init is not None:
        return None
    block, store = nest.block, nest.block.body
    if any(iv.iter_type != "DataPar" for iv in block.iter_vars) or id(store.buffer) not in locals_:
        return None
    if len(store.indices) != len(block.iter_vars) or len(store.indices) != len(store.buffer.shape):
        return None
    if not all(index is iv.var for index, iv in zip(store.indices, block.iter_vars)):
        return None
    if any(load.buffer is store.buffer for load in collect(store.value, tir.BufferLoad)):
        return None
    return store


def _extent_above_one(iter_var: tir.IterVar) -> bool:
    extent = iter_var.dom.extent if iter_var.dom is not None else None
    return not (isinstance(extent, tir.IntImm) and extent.value <= 1)


def _reads_each_once(consumers, buffer: tir.Buffer) -> tuple[bool, int]:
    """(whether every block reading `buffer` reads each element once per instance, how many loads)."""
    count = 0
    for stmt in consumers:
        for realize in collect(stmt, tir.BlockRealize):
            block = realize.block
            own = [load for load in collect((block.body, block.init), tir.BufferLoad) if load.buffer is buffer]
            for load in own:
                if not all(uses(load.indices, iv.var) for iv in block.iter_vars if _extent_above_one(iv)):
                    return False, count
            count += len(own)
    all_loads = sum(1 for stmt in consumers for load in collect(stmt, tir.BufferLoad) if load.buffer is buffer)
    return all_loads == count, count  # a load outside any block (none today) keeps the producer


class _Inline(Rewriter):
    """Loads of one buffer replaced by the producer's value at their indices; reads updated."""

    def __init__(self, store: tir.BufferStore, iter_vars, reads):
        self.store, self.iter_vars, self.reads = store, iter_vars, reads

    def visit_BufferLoad(self, load):
        load = self.generic_visit(load)
        if load.buffer is not self.store.buffer:
            return load
        return substitute(self.store.value, {iv.var: index for iv, index in zip(self.iter_vars, load.indices)})

    def visit_Block(self, block):
        block = self.generic_visit(block)
        if not any(region.buffer is self.store.buffer for region in block.reads):
            return block
        kept = [region for region in block.reads if region.buffer is not self.store.buffer]
        known = {id(region.buffer) for region in kept}
        added = [region for region in self.reads if id(region.buffer) not in known]
        return block.with_fields(reads=tuple(kept + added))


class _DropAllocations(Rewriter):
    def __init__(self, dropped: set[int]):
        self.dropped = dropped

    def visit_Block(self, block):
        block = self.generic_visit(block)
        kept = tuple(b for b in block.alloc_buffers if id(b) not in self.dropped)
        return block if len(kept) == len(block.alloc_buffers) else block.with_fields(alloc_buffers=kept)


def _whole_regions(block: tir.Block) -> tuple:
    """The producer's read regions as whole buffers (its iterators mean nothing in the consumer)."""
    return tuple(tir.BufferRegion(region.buffer, tuple(
        tir.Range(tir.IntImm(d.dtype, 0), d) for d in region.buffer.shape))
        for region in block.reads)


def _try_inline(statements: list, position: int, locals_: set[int]):
    """The statements with statements[position] inlined into the later ones, or None."""
    nest = match_nest(statements[position])
    store = _producer(nest, locals_)
    if store is None:
        return None
    before, after = statements[:position], statements[position + 1:]
    if any(id(store.buffer) in _stored_buffers(stmt) for stmt in before + after):
        return None
    if any(load.buffer is store.buffer for stmt in before for load in collect(stmt, tir.BufferLoad)):
        return None
    read = {id(load.buffer) for load in collect(store.value, tir.BufferLoad)}
    if any(read & _stored_buffers(stmt) for stmt in after):
        return None
    once, count = _reads_each_once(after, store.buffer)
    if not once or count == 0:
        return None
    if count > 1 and collect(store.value, tir.Call):
        return None  # an erf or exp read twice is cheaper kept in memory than computed twice
    inline = _Inline(store, nest.block.iter_vars, _whole_regions(nest.block))
    return before + [inline.visit(stmt) for stmt in after], store.buffer


def inline_elementwise(func: tir.PrimFunc) -> tir.PrimFunc:
    """`func` with its inlinable elementwise nests folded into their consumers (see above)."""
    statements, rebuild = top_level(func.body)
    params = {id(buffer) for _, buffer in func.buffer_map}
    locals_ = {id(buffer) for block in collect(func.body, tir.Block) for buffer in block.alloc_buffers} - params
    dropped: set[int] = set()
    position = 0
    while position < len(statements):
        result = _try_inline(statements, position, locals_)
        if result is None:
            position += 1
            continue
        statements, buffer = result
        dropped.add(id(buffer))
    if not dropped:
        return func
    body = _DropAllocations(dropped).visit(rebuild(statements))
    return func.with_fields(body=body)
