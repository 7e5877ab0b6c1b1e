"""Integer arithmetic on two constants, done while the LLVM IR is built.

llvmlite's IRBuilder writes every operation it is asked for, so an add of two
constants (a loop from 0 to its extent, a tile's offsets, a parallel loop's trip
count) became an instruction for LLVM to parse and fold. Folded here, each is one
instruction less to print, parse and combine; LLVM's optimized code is the same.
"""

from __future__ import annotations

import llvmlite.ir as ir


def constant_int(value: ir.Value) -> int | None:
    """The value of a scalar integer constant, or None."""
    if isinstance(value, ir.Constant) and isinstance(value.type, ir.IntType) and isinstance(value.constant, int):
        return value.constant
    return None


_FOLDS = {"add": int.__add__, "sub": int.__sub__, "mul": int.__mul__}


def fold_constants(op: str, a: ir.Value, b: ir.Value, signed: bool) -> ir.Constant | None:
    """`a op b` as a constant when both are scalar integer constants and the result fits
    the type without wrapping (where it would wrap, LLVM's own folding decides), else None."""
    x, y = constant_int(a), constant_int(b)
    if x is None or y is None or op not in _FOLDS:
        return None
    result = _FOLDS[op](x, y)
    half = 1 << (a.type.width - 1)
    if not (-half if signed else 0) <= result < half:
        return None
    return ir.Constant(a.type, result)


def fold_or_build(builder: ir.IRBuilder, op: str, a: ir.Value, b: ir.Value, signed: bool) -> ir.Value:
    """`a op b`: folded when fold_constants can, else the builder's instruction (no flags)."""
    folded = fold_constants(op, a, b, signed)
    return folded if folded is not None else getattr(builder, op)(a, b)
