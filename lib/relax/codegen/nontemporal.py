"""Non-temporal vector stores for loops the schedule marks (a mixin of FunctionCodegen).

tir/schedule/streaming_store.py marks the loops over vectors of an elementwise nest
whose output outgrows the caches with NONTEMPORAL. Such a store must be aligned to its
vector (x86's MOVNTPS faults otherwise, and LLVM splits an unaligned one into scalar
MOVNTI), which the kernel ABI does not promise: a buffer is only aligned to its
element. So a marked loop is emitted twice behind a run-time test of the stored
buffers' addresses. Where each is aligned to ALIGNMENT bytes, the loop's contiguous
vector stores whose index is provably a multiple of their lanes carry `!nontemporal`
and the vector's alignment, and SFENCE follows the loop (streaming stores are weakly
ordered: the thread that finishes a chunk must have them visible before it reports
the chunk done). Otherwise the same loop runs with plain stores. x86 targets only:
elsewhere a marked loop is an ordinary loop.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from ..ir import dtype as dt
from ..ir import tir
from ..runtime.kernels.host import triple_arch
from ..tir.rewrite import collect
from .llvm_types import I32, I64

NONTEMPORAL = "relax.nontemporal_stores"  # the For annotation (tir/schedule/streaming_store.py sets it)
ALIGNMENT = 64  # bytes: a cache line, and the widest vector (AVX-512)
X86 = ("x86_64", "i386", "i686")


def multiple_of(expr: tir.PrimExpr, factor: int) -> bool:
    """Whether the integer `expr` is a multiple of `factor` for every value of its variables."""
    if factor == 1:
        return True
    if isinstance(expr, tir.IntImm):
        return expr.value % factor == 0
    if isinstance(expr, (tir.Add, tir.Sub)):
        return multiple_of(expr.a, factor) and multiple_of(expr.b, factor)
    if isinstance(expr, tir.Mul):
        for this, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(this, tir.IntImm) and this.value != 0:
                return multiple_of(other, factor // math.gcd(factor, abs(this.value)))
        return multiple_of(expr.a, factor) or multiple_of(expr.b, factor)
    if isinstance(expr, tir.Cast) and dt.kind(expr.dtype) == "int" and dt.kind(expr.value.dtype) == "int":
        # A narrowing cast wraps modulo a power of two: it keeps only power-of-two factors.
        keeps = dt.bits(expr.dtype) >= dt.bits(expr.value.dtype) or factor & (factor - 1) == 0
        return keeps and multiple_of(expr.value, factor)
    return False


def aligned_ramp(element: str, index: tir.PrimExpr, lanes: int) -> bool:
    """Whether `index` is `lanes` contiguous elements of dtype `element` starting at a multiple of `lanes`
    (so that a vector-aligned buffer makes the vector aligned)."""
    if lanes <= 1 or not isinstance(index, tir.Ramp) or dt.bits(element) % 8:
        return False
    width = lanes * dt.bits(element) // 8
    return (isinstance(index.stride, tir.IntImm) and index.stride.value == 1 and ALIGNMENT % width == 0
            and multiple_of(index.base, lanes))


def aligned_vector_store(store: tir.BufferStore) -> bool:
    return len(store.indices) == 1 and aligned_ramp(store.buffer.dtype, store.indices[0], dt.lanes(store.value.dtype))


class NontemporalCodegen:
    """Needs from its host class: builder, module, buffer_pointer(), declare(), stmt_For()."""

    # None outside a marked loop; inside, the data variables whose vector stores stream
    # (empty in the plain copy of the loop).
    streaming: frozenset | None = None

    def emit_streaming_for(self, loop: tir.For) -> bool:
        """Emit a marked serial loop as its streaming and plain copies; False when no store can stream."""
        if triple_arch(self.module.triple) not in X86:
            return False  # measured on x86 only (aarch64 splits a q-register STNP into two halves)
        stores = [store for store in collect(loop.body, tir.BufferStore) if aligned_vector_store(store)]
        buffers = {store.buffer.data: store.buffer for store in stores}
        if not buffers:
            return False
        aligned = None
        for buffer in buffers.values():
            address = self.builder.ptrtoint(self.buffer_pointer(buffer), I64)
            low_bits = self.builder.and_(address, ir.Constant(I64, ALIGNMENT - 1))
            test = self.builder.icmp_unsigned("==", low_bits, ir.Constant(I64, 0))
            aligned = test if aligned is None else self.builder.and_(aligned, test)
        with self.builder.if_else(aligned) as (streamed, plain):
            with streamed:
                self._emit_marked(loop, frozenset(buffers))
                # LLVM writes a seq_cst fence as a locked OR on x86, which AMD does not document
                # as ordering streaming stores: SFENCE is what does.
                self.builder.call(self.declare("llvm.x86.sse.sfence", ir.FunctionType(ir.VoidType(), [])), [])
            with plain:
                self._emit_marked(loop, frozenset())
        return True

    def _emit_marked(self, loop: tir.For, streaming: frozenset) -> None:
        self.streaming = streaming
        try:
            self.stmt_For(loop)
        finally:
            self.streaming = None

    def store_contiguous(self, buffer: tir.Buffer, index: tir.Ramp, pointer: ir.Value, value: ir.Value,
                         element_alignment: int) -> None:
        """Store the vector `value` at `pointer` (buffer[index]), streaming it when the loop allows."""
        streams = bool(self.streaming) and buffer.data in self.streaming and aligned_ramp(buffer.dtype, index, index.lanes)
        if not streams:
            self.builder.store(value, pointer, align=element_alignment)
            return
        width = index.lanes * dt.bits(buffer.dtype) // 8
        instruction = self.builder.store(value, pointer, align=width)
        instruction.set_metadata("nontemporal", self.module.add_metadata([ir.Constant(I32, 1)]))
