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
from dataclasses import dataclass

from ...ir import tir
from ..convert_blocks_to_loops import allocation
from ..loop_nests import uses
from ..rewrite import collect
from .conv2d_padding import evaluate, pad_parts, padded_rows
from .nest import seq

# Output rows a chunk covers at least (a whole number of register tiles): with a 3-row
# kernel a chunk of 4 rows pads 6, so half as many rows again as the shared buffer.
CHUNK_ROWS = 4
# The largest chunk buffer: it lives on the thread's stack and should stay in L1 with the weights.
CHUNK_LIMIT_BYTES = 16 * 1024


@dataclass(frozen=True)
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


def _slope(expr, var, env) -> int | None:
    """d expr / d var at `env` when expr is linear in var there, else None."""
    values = [evaluate(expr, {**env, var: x}) for x in (0, 1, 2)]
    if None in values or values[2] - values[1] != values[1] - values[0]:
        return None
    return values[1] - values[0]


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
    if any(uses(row, v) for v in (conv.n, conv.a, conv.v)) or any(uses(column, v) for v in (conv.n, conv.a, conv.b)):
        return None
    reduce = [(iv.var, conv.nest.loop_of(iv).extent.value) for iv in conv.reduce]
    at_start = {var: 0 for var, _ in reduce}
    stride = _slope(row, conv.b, at_start)
    slopes = [_slope(row, var, {**at_start, conv.b: 0}) for var, _ in reduce]
    if stride is None or stride < 1 or any(s is None or s < 0 for s in slopes):
        return None
    first = evaluate(row, {**at_start, conv.b: 0})
    last = evaluate(row, {**{var: extent - 1 for var, extent in reduce}, conv.b: 0})
    if first is None or last is None or conv.extent(conv.b) // rows < 2:
        return None
    # Linear in all of them together (no product of two), so the span is a chunk's rows exactly.
    for b in (1, conv.extent(conv.b) - 1):
        corner = {**{var: extent - 1 for var, extent in reduce}, conv.b: b}
        if evaluate(row, corner) != first + stride * b + sum(s * (e - 1) for s, (_, e) in zip(slopes, reduce)):
            return None
    plan = RowChunks(conv, parts, rows, stride, first, last - first + 1)
    (_, channels, _), _, (left, width, right) = parts[3][1:]
    if channels * plan.span(rows) * (left + width + right) * 4 > CHUNK_LIMIT_BYTES:
        return None
    return plan

