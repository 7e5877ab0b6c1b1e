"""A padded NCHW conv2d in chunks of output rows, each padding only the input rows it reads.

Legalization pads a convolution's input into one buffer ("pad_temp") and the
convolution reads it. Scheduled as they are, the thread that writes that buffer
holds it in its cache, and every other thread of the convolution's parallel loop
(over output channels) then reads all of it from there, across cores: on small
convolutions that costs more than the padding itself (docs/performance-notes.md).
When the padded input rows under a few output rows fit a small buffer, the
convolution runs in parallel over chunks of output rows instead; each chunk pads
its rows (its output rows' inputs with the kernel's halo, so a fraction of the
padding is done twice) into a buffer on its own thread's stack, then computes
every output channel of those rows from there with conv2d.py's register tile.
The padded buffer is never written, and each thread reads just the input rows it
needs.

    pad_temp = pad(data)                          for n in range(N):
    for n in range(N):                                for h_chunk in T.parallel(H // 4):
        for c_tile in T.parallel(C // 4):   ->            rows = T.alloc_local((RC, 4 + KH - 1, W + 2))
            <register tiles reading                       <per channel and row: the border, or zeros>
             pad_temp>                                    <register tiles of every channel reading rows>

Taken only for the NCHW form (the data vector read along the padded width), a
padded buffer nothing else reads, row indices linear in the output row and the
reduction variables, and at least two chunks; other convolutions keep the shared
padded buffer (conv2d_padding.padding_as_loops).
"""

from __future__ import annotations

import copy

from ...ir import tir
from ...records import record
from ..arith.linear import from_expr
from ..convert_blocks_to_loops import allocation
from ..loop_nests import uses
from ..rewrite import collect
from .conv2d_padding import pad_parts, padded_rows
from .nest import seq

# Output rows a chunk covers at least (a whole number of register tiles): with a 3-row
# kernel a chunk of 4 rows pads 6, so half as many rows again as the shared buffer.
CHUNK_ROWS = 4
# The largest chunk buffer: it lives on the thread's stack and should stay in L1 with the weights.
CHUNK_LIMIT_BYTES = 16 * 1024


@record
class RowChunks:
    """How a matched convolution (conv2d._Conv) runs in chunks of `rows` output rows."""
    conv: object
    parts: tuple  # the padding nest, from conv2d_padding.pad_parts
    rows: int
    stride: int  # padded rows between consecutive output rows
    first: int  # the padded row that output row 0 reads at the first reduction step
    halo: int  # padded rows one output row reads, over the reduction

    def span(self, count: int) -> int:
        """Padded rows under `count` output rows."""
        return (count - 1) * self.stride + self.halo

    def chunk(self, n, start, count: int, make) -> tir.Stmt:
        """Output rows [start, start + count): their padded input rows into a buffer of their
        own, then make(conv) with conv reading that buffer."""
        conv, vec = self.conv, self.conv.vec
        (_, channels, _), _, (left, width, right) = self.parts[3][1:]
        shape = (channels, self.span(count), left + width + right)
        name = f"{vec.buffer.name}_rows"
        local = tir.Buffer(name, tuple(conv.const(d) for d in shape), "float32", tir.Var(name, "handle"),
                           scope="local")
        first = conv.const(self.first) + start * conv.const(self.stride)
        _, channel, row, column = vec.indices
        reading = copy.copy(conv)
        reading.vec = tir.BufferLoad(local, (channel, row - first, column))
        fill = padded_rows(self.parts, local, n, first, self.span(count))
        return allocation(local, seq([fill, make(reading)]))


def row_chunks(conv, stmt, rows: int, later) -> RowChunks | None:
    """The chunked form of `conv` when `stmt` is the padding nest of its data and the
    chunks qualify (see the module docstring); `later` are the statements after the convolution."""
    if conv.shared_vector:
        return None
    vec = conv.vec
    parts = pad_parts(stmt, vec.buffer)
    if parts is None or any(load.buffer is vec.buffer for s in later for load in collect(s, tir.BufferLoad)):
        return None
    batch, channel, row, column = vec.indices
    if batch is not conv.n or any(uses(channel, v) for v in (conv.n, conv.a, conv.b, conv.v)):
        return None
    if any(uses(column, v) for v in (conv.n, conv.a, conv.b)):
        return None
    # The row index as a linear form over the output row and the window's variables alone (a
    # product of two is an atom of its own and refused), so a chunk's span of rows is exact.
    extents = {iv.var: conv.nest.loop_of(iv).extent.value for iv in conv.reduce}
    slopes = dict(from_expr(row).nonzero())
    if any(atom is not conv.b and atom not in extents for atom in slopes):
        return None
    stride = slopes.pop(conv.b, 0)
    if stride < 1 or any(slope < 0 for slope in slopes.values()) or conv.extent(conv.b) // rows < 2:
        return None
    first = from_expr(row).const
    last = first + sum(slope * (extents[var] - 1) for var, slope in slopes.items())
    plan = RowChunks(conv, parts, rows, stride, first, last - first + 1)
    (_, channels, _), _, (left, width, right) = parts[3][1:]
    if channels * plan.span(rows) * (left + width + right) * 4 > CHUNK_LIMIT_BYTES:
        return None
    return plan

