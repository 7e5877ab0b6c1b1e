"""A kernel's last intermediate stored in its output buffer: no workspace, one buffer less in cache.

A fused matmul + epilogue kernel computes the matmul into a kernel-local buffer
and the epilogue (bias, GELU) from it into the output; softmax keeps its
exponentials in a local buffer that the last nest divides into the output. Local
buffers are carved out of the caller's workspace (fresh memory on each call of the
interpreter's kernels: 512 KiB for the transformer's FFN, whose page faults cost as
much as the epilogue). When the last nest writing the output reads the intermediate
only at the very index it writes, the intermediate can live in the output itself:
each element is read before it is overwritten, by the same block instance.

Conditions: the intermediate is local, has the output's shape and dtype; the output
is written by one statement only, the last one that touches the intermediate, and
read nowhere else; in that statement every load of the intermediate is at the
store's indices.

    for i, j, k in T.grid(M, N, K): mm[i, j] += A[i, k] * B[k, j]        for i, j, k in ...: out[i, j] += A[i, k] * B[k, j]
    for i, j in T.grid(M, N): out[i, j] = mm[i, j] + bias[j]       ->    for i, j in ...: out[i, j] = out[i, j] + bias[j]
"""

from __future__ import annotations

from ...ir import tir
from ..loop_nests import top_level
from ..rewrite import Rewriter, collect
from .nest import match_nest


def _same_shape(a: tir.Buffer, b: tir.Buffer) -> bool:
    if a.dtype != b.dtype or len(a.shape) != len(b.shape):
        return False
    for x, y in zip(a.shape, b.shape):
        if isinstance(x, tir.IntImm) and isinstance(y, tir.IntImm):
            if x.value != y.value:
                return False
        elif x is not y:
            return False
    return True


def _stores(stmt, buffer) -> list:
    return [store for store in collect(stmt, tir.BufferStore) if store.buffer is buffer]


def _loads(stmt, buffer) -> list:
    return [load for load in collect(stmt, tir.BufferLoad) if load.buffer is buffer]


def _same_indices(a, b, unit: set[int]) -> bool:
    """Whether two index tuples name one element; `unit` holds the ids of iterators with one value (0)."""
    def zero(x):
        return id(x) in unit or (isinstance(x, tir.IntImm) and x.value == 0)
    return len(a) == len(b) and all(x is y or (zero(x) and zero(y)) for x, y in zip(a, b))


class _Rename(Rewriter):
    """Every access and region of one buffer moved to another; its allocation dropped."""

    def __init__(self, old: tir.Buffer, new: tir.Buffer):
        self.old, self.new = old, new

    def visit_Buffer(self, buffer):
        return self.new if buffer is self.old else buffer

    def visit_Block(self, block):
        if any(b is self.old for b in block.alloc_buffers):
            block = block.with_fields(alloc_buffers=tuple(b for b in block.alloc_buffers if b is not self.old))
        return self.generic_visit(block)


def _candidate(statements: list, output: tir.Buffer, locals_: dict):
    """The local buffer the output can hold, or None."""
    writers = [index for index, stmt in enumerate(statements) if _stores(stmt, output)]
    if len(writers) != 1 or any(_loads(stmt, output) for stmt in statements):
        return None
    nest = match_nest(statements[writers[0]])
    if nest is None or nest.block.init is not None or any(iv.iter_type != "DataPar" for iv in nest.block.iter_vars):
        return None  # a reduction would overwrite an element it reads again
    store, later = nest.block.body, statements[writers[0] + 1:]
    unit = {id(iv.var) for iv in nest.block.iter_vars
            if iv.dom is not None and isinstance(iv.dom.extent, tir.IntImm) and iv.dom.extent.value == 1}
    if store.buffer is not output:
        return None
    for buffer in locals_.values():
        loads = _loads(store.value, buffer)
        if (loads and _same_shape(buffer, output) and all(_same_indices(load.indices, store.indices, unit) for load in loads)
                and not any(_stores(stmt, buffer) or _loads(stmt, buffer) for stmt in later)):
            return buffer
    return None


def reuse_output(func: tir.PrimFunc) -> tir.PrimFunc:
    """`func` with an intermediate moved into each output buffer that can hold it (see above)."""
    statements, _ = top_level(func.body)
    params = {id(buffer) for _, buffer in func.buffer_map}
    locals_ = {id(b): b for block in collect(func.body, tir.Block) for b in block.alloc_buffers
               if id(b) not in params and b.scope == "global"}
    body = func.body
    for _, output in func.buffer_map:
        statements, _ = top_level(body)
        local = _candidate(statements, output, locals_)
        if local is None:
            continue
        body = _Rename(local, output).visit(body)
        del locals_[id(local)]
    return func if body is func.body else func.with_fields(body=body)
