"""Integer and float division of TIR expressions to LLVM values (a mixin of FunctionCodegen).

Division follows TVM: integer Div/Mod truncate as C does, FloorDiv/FloorMod floor
as Python does, float Div is exact and float FloorDiv is floor(a / b). Integer
division never traps (TVM leaves it undefined): a zero divisor gives 0, as numpy
does, and MIN / -1 gives MIN. A constant divisor that can do neither (any but 0,
and -1 when signed) is divided by as it is, without the guards.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ..ir import dtype as dt
from .constant_fold import constant_int
from .llvm_types import constant, is_signed


class DivisionCodegen:
    """Needs from its host class: builder, operands(), call_llvm_intrinsic()."""

    builder: ir.IRBuilder

    def safe_divisor(self, a: ir.Value, b: ir.Value, dtype: str):
        """(divisor, is_zero): integer division must never trap, so x / 0 divides by 1 and
        the caller makes the result 0 (numpy's answer); MIN / -1 divides by 1 too (gives MIN).
        A constant divisor that can do neither is used as it is, and is_zero is None."""
        divisor = constant_int(b)
        if divisor is not None and divisor != 0 and not (divisor == -1 and is_signed(dtype)):
            return b, None
        zero, one = ir.Constant(b.type, None), constant(dt.with_lanes(dt.element(dtype), 1), 1)
        if isinstance(b.type, ir.VectorType):
            one = ir.Constant(b.type, [one] * b.type.count)
        is_zero = self.builder.icmp_unsigned("==", b, zero)
        trap = is_zero
        if is_signed(dtype):
            bits = dt.bits(dtype)
            minimum = constant(dtype, -(1 << (bits - 1)))
            overflow = self.builder.and_(self.builder.icmp_signed("==", a, minimum),
                                         self.builder.icmp_signed("==", b, constant(dtype, -1)))
            trap = self.builder.or_(is_zero, overflow)
        return self.builder.select(trap, one, b), is_zero

    def _int_divide(self, op: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
        divisor, is_zero = self.safe_divisor(a, b, dtype)
        result = getattr(self.builder, op)(a, divisor)
        return result if is_zero is None else self.builder.select(is_zero, ir.Constant(a.type, None), result)

    def expr_Div(self, node):
        a, b = self.operands(node)
        if dt.is_float(node.dtype):
            return self.builder.fdiv(a, b)
        return self._int_divide("sdiv" if is_signed(node.dtype) else "udiv", a, b, node.dtype)

    def expr_Mod(self, node):
        a, b = self.operands(node)
        if dt.is_float(node.dtype):
            return self.builder.frem(a, b)
        return self._int_divide("srem" if is_signed(node.dtype) else "urem", a, b, node.dtype)

    def expr_FloorDiv(self, node):
        a, b = self.operands(node)
        if dt.is_float(node.dtype):
            return self.call_llvm_intrinsic("llvm.floor", [self.builder.fdiv(a, b)])
        if not is_signed(node.dtype):
            return self._int_divide("udiv", a, b, node.dtype)
        b, is_zero = self.safe_divisor(a, b, node.dtype)
        quotient, remainder = self.builder.sdiv(a, b), self.builder.srem(a, b)
        zero = ir.Constant(a.type, None)
        # The truncated quotient is one too big when the remainder is non-zero and
        # its sign differs from the divisor's.
        inexact = self.builder.icmp_signed("!=", remainder, zero)
        signs_differ = self.builder.icmp_signed("<", self.builder.xor(remainder, b), zero)
        adjust = self.builder.and_(inexact, signs_differ)
        result = self.builder.sub(quotient, self.builder.zext(adjust, a.type))
        return result if is_zero is None else self.builder.select(is_zero, zero, result)

    def expr_FloorMod(self, node):
        a, b = self.operands(node)
        if dt.is_float(node.dtype):
            floored = self.call_llvm_intrinsic("llvm.floor", [self.builder.fdiv(a, b)])
            return self.builder.fsub(a, self.builder.fmul(floored, b))
        if not is_signed(node.dtype):
            return self._int_divide("urem", a, b, node.dtype)
        b, is_zero = self.safe_divisor(a, b, node.dtype)
        remainder = self.builder.srem(a, b)
        zero = ir.Constant(a.type, None)
        inexact = self.builder.icmp_signed("!=", remainder, zero)
        signs_differ = self.builder.icmp_signed("<", self.builder.xor(remainder, b), zero)
        adjust = self.builder.and_(inexact, signs_differ)
        result = self.builder.select(adjust, self.builder.add(remainder, b), remainder)
        return result if is_zero is None else self.builder.select(is_zero, zero, result)
