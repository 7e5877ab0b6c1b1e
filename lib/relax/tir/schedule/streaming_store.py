"""Rule: an elementwise nest whose output is larger than the last-level cache writes it with streaming stores.

A plain store to a line that is not cached first reads the line from memory (to own it),
so `C = A + B` over arrays larger than the caches moves four bytes per element of C
where three would do, and the lines of C then push other data out of the cache for
nothing: C is gone from it by the time anything reads it. Non-temporal ("streaming")
stores write whole lines straight to memory. The rule writes the nest in whole vectors
of the target's width (vector_math_rows.vector_rows) and marks the loops over vectors
with NONTEMPORAL; the code generator (codegen/nontemporal.py) makes their vector stores
non-temporal where the output's address is aligned to the vector at run time and the
index is a multiple of the lanes, and fences after the loop. A long row runs in
independent chunks of CHUNK_VECTORS vectors, so that a one-dimensional nest is parallel
too.

Matches what vector_math_rows writes (float32 arithmetic, exp and erf, contiguous or
broadcast loads), with any vector width, when the output buffer has at least as many
bytes as the last-level cache of the CPU model (cpu.py; FALLBACK_CACHE_BYTES when the
model does not know it) and its rows are whole vectors (a 1-D output, or a last
dimension that is a multiple of the lanes), so that every vector store can be aligned.

    for i in range(16777216):                     for i_chunk in range(16384):                  # parallel
        C[i] = A[i] + B[i]               ->           for i_vector in T.serial(64, annotations={"relax.nontemporal_stores": 1}):
                                                          C[i_chunk*1024 + i_vector*16 : +16] = A[...] + B[...]
"""

from __future__ import annotations

import math

from ...ir import tir
from ...ir.node import FrozenDict
from .nest import Nest
from .vector_math_rows import contiguous_rows, vector_rows

NONTEMPORAL = "relax.nontemporal_stores"
# When the CPU model has no L3 size (an x86-64 level names many CPUs): a common L3 of one socket.
FALLBACK_CACHE_BYTES = 32 * 1024 * 1024
# Vectors per independent chunk of a long row: 64 KiB of float32 at 16 lanes, enough per
# thread-pool claim for the fence at its end not to count.
CHUNK_VECTORS = 1024


def _constant_shape(buffer: tir.Buffer) -> list[int] | None:
    if not all(isinstance(extent, tir.IntImm) for extent in buffer.shape):
        return None
    return [extent.value for extent in buffer.shape]


def matches(nest: Nest, cpu=None) -> bool:
    # A target without float32 vectors (one lane: cpu.py) has no vector stores to stream.
    if cpu is None or cpu.lanes < 2 or not contiguous_rows(nest, cpu.lanes):
        return False
    shape = _constant_shape(nest.block.body.buffer)
    if not shape:
        return False
    if math.prod(shape) * 4 < (cpu.l3_bytes or FALLBACK_CACHE_BYTES):
        return False
    return len(shape) == 1 or shape[-1] % cpu.lanes == 0


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    return vector_rows(nest, cpu.lanes, CHUNK_VECTORS, FrozenDict({NONTEMPORAL: 1}))
