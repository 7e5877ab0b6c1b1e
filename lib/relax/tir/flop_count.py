"""The floating-point operations a kernel performs, counted statically over its loops.

Every floating-point add, subtract, multiply, divide, min and max in a stored value
counts one, a fused multiply-add two and a math call (exp, tanh, ...) one, times the
iterations of the loops around it. A block's init is left out (it stores constants
before a reduction), and of an if/else the dearer branch counts, so the figure is an
upper bound where a kernel pads. Integer arithmetic (indices, shapes) is not counted.
A loop whose extent is not a constant, or a while loop, makes the count unknown.

bench/peers.py divides the count by a kernel's measured time: its GFLOP/s as a
fraction of the machine's multiply-add peak shows which kernel leaves the most behind.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.visitor import Visitor

# Calls that are a multiply and an add in one instruction.
MULTIPLY_ADDS = frozenset({"tir.fma", "tir.fmuladd"})
# Calls that compute nothing: conditionals, reinterpretations, memory intrinsics.
NOT_ARITHMETIC = frozenset({"tir.if_then_else", "tir.reinterpret", "tir.likely", "tir.address_of",
                            "tir.isnan", "tir.isinf", "tir.isfinite"})


class UnknownCount(Exception):
    """The loop nest has an iteration count not known before the kernel runs."""


def flop_count(func: tir.PrimFunc) -> int | None:
    """Floating-point operations of one call of `func`, or None when its loops are not static."""
    try:
        return _statement_flops(func.body)
    except UnknownCount:
        return None


def _statement_flops(stmt) -> int:
    if isinstance(stmt, tir.For):
        if not isinstance(stmt.extent, tir.IntImm):
            raise UnknownCount
        return stmt.extent.value * _statement_flops(stmt.body)
    if isinstance(stmt, tir.While):
        raise UnknownCount
    if isinstance(stmt, tir.SeqStmt):
        return sum(_statement_flops(s) for s in stmt.seq)
    if isinstance(stmt, tir.IfThenElse):
        otherwise = _statement_flops(stmt.else_case) if stmt.else_case is not None else 0
        return max(_statement_flops(stmt.then_case), otherwise)
    if isinstance(stmt, tir.BlockRealize):
        return _statement_flops(stmt.block.body)  # the block's init is not counted
    if isinstance(stmt, tir.BufferStore):
        return expression_flops(stmt.value)
    if isinstance(stmt, tir.Evaluate):
        return expression_flops(stmt.value)
    if isinstance(stmt, tir.LetStmt):
        return expression_flops(stmt.value) + _statement_flops(stmt.body)
    body = getattr(stmt, "body", None)
    return _statement_flops(body) if body is not None else 0


class _ArithmeticCounter(Visitor):
    def __init__(self):
        self.count = 0

    def visit_BinaryOp(self, node: tir.BinaryOp) -> None:
        if dt.is_float(node.dtype) and not isinstance(node, tir.CompareOp):
            self.count += dt.lanes(node.dtype)
        self.generic_visit(node)

    def visit_tir_Call(self, node: tir.Call) -> None:
        if dt.is_float(node.dtype) and node.op not in NOT_ARITHMETIC:
            self.count += (2 if node.op in MULTIPLY_ADDS else 1) * dt.lanes(node.dtype)
        self.generic_visit(node)

    def visit_BufferLoad(self, node: tir.BufferLoad) -> None:
        pass  # indices are integer arithmetic


def expression_flops(expr: tir.PrimExpr) -> int:
    """Floating-point operations of one evaluation of `expr` (vector lanes each count)."""
    counter = _ArithmeticCounter()
    counter.visit(expr)
    return counter.count
