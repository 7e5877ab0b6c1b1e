"""Vector expressions of a lane count, plain scalars at one lane.

A target without vector registers for float32 (riscv64 without the V extension: cpu.py)
has one lane, and the rules build the same tiles of scalars there. TIR has no Ramp or
Broadcast of one lane (TVM's need two or more), so these give the scalar instead.

    ramp(i, 4)        ->  T.Ramp(i, 1, 4)          ramp(i, 1)        ->  i
    broadcast(x, 8)   ->  T.Broadcast(x, 8)        broadcast(x, 1)   ->  x

(relax.ir.dtype.with_lanes gives the dtype of such a value: "float32x8", or "float32".)
"""

from __future__ import annotations

from ...ir import tir


def ramp(base: tir.PrimExpr, lanes: int, stride: int = 1) -> tir.PrimExpr:
    """The indices base, base + stride, ... (`lanes` of them)."""
    return base if lanes == 1 else tir.Ramp(base, tir.IntImm(base.dtype, stride), lanes)


def broadcast(value: tir.PrimExpr, lanes: int) -> tir.PrimExpr:
    """`value` in every one of `lanes` lanes."""
    return value if lanes == 1 else tir.Broadcast(value, lanes)


__all__ = ["broadcast", "ramp"]
