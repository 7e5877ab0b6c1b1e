"""Calls to TIR intrinsics (tir.exp, tir.if_then_else, ...), driven by intrinsics.py.

A mixin of FunctionCodegen next to ExprCodegen: `expr_Call` looks the op up in
MATH_INTRINSICS and emits an LLVM intrinsic, a libm call or a custom sequence.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from ..ir import dtype as dt
from ..ir import tir
from ..runtime.kernels import abi
from ..tir import semantics
from .intrinsics import MATH_INTRINSICS, UNSUPPORTED, intrinsic_name
from .llvm_types import I32, constant, is_signed, undef_vector, value_type

_FLOAT = ir.FloatType()


class IntrinsicCodegen:
    def expr_Call(self, call: tir.Call) -> ir.Value:
        if not isinstance(call.op, str):
            callee = getattr(call.op, "name_hint", call.op)
            raise self.error(f"calls '{callee}', another function of the module; "
                             "kernels cannot call each other, call both from the Relax function")
        name = intrinsic_name(call.op)
        if name in UNSUPPORTED:
            raise self.error(f"'{call.op}' {UNSUPPORTED[name]}")
        entry = MATH_INTRINSICS.get(name)
        if entry is None:
            known = ", ".join(sorted(MATH_INTRINSICS))
            raise self.error(f"unknown intrinsic '{call.op}' (known: {known})")
        how, symbol, arity = entry
        if arity >= 0 and len(call.args) != arity:
            raise self.error(f"'{call.op}' takes {arity} arguments, got {len(call.args)}")
        if how == "custom":
            return getattr(self, symbol)(call)
        if not dt.is_float(call.args[0].dtype):
            raise self.error(f"'{call.op}' needs floating-point arguments, got {call.args[0].dtype}")
        args, half = self._promoted_args(call)
        if how == "llvm":
            result = self.call_llvm_intrinsic(symbol, args)
        else:
            result = self._call_libm(symbol, args)
        return self.builder.fptrunc(result, value_type(call.args[0].dtype)) if half else result

    def _promoted_args(self, call: tir.Call):
        """The arguments, float16 ones widened to float32 (computed there, as numpy does)."""
        args = [self.emit(arg) for arg in call.args]
        half = dt.bits(call.args[0].dtype) == 16
        if half:
            lanes = dt.lanes(call.args[0].dtype)
            wide = _FLOAT if lanes == 1 else ir.VectorType(_FLOAT, lanes)
            args = [self.builder.fpext(a, wide) for a in args]
        return args, half

    def _call_libm(self, name: str, args: list[ir.Value]) -> ir.Value:
        value_ty = args[0].type
        element = value_ty.element if isinstance(value_ty, ir.VectorType) else value_ty
        symbol = name + ("f" if isinstance(element, ir.FloatType) else "")
        function = self.declare(symbol, ir.FunctionType(element, [element] * len(args)))
        if not isinstance(value_ty, ir.VectorType):
            return self.builder.call(function, args)
        result = undef_vector(value_ty)
        for lane in range(value_ty.count):
            index = ir.Constant(I32, lane)
            items = [self.builder.extract_element(a, index) for a in args]
            result = self.builder.insert_element(result, self.builder.call(function, items), index)
        return result

    def _float_constant_like(self, value: ir.Value, number: float) -> ir.Value:
        if isinstance(value.type, ir.VectorType):
            return ir.Constant(value.type, [ir.Constant(value.type.element, number)] * value.type.count)
        return ir.Constant(value.type, number)

    def _unary_float(self, call: tir.Call, body) -> ir.Value:
        (value,), half = self._promoted_args(call)
        result = body(value)
        return self.builder.fptrunc(result, value_type(call.args[0].dtype)) if half else result

    # -- custom float functions ------------------------------------------------------

    def emit_rsqrt(self, call):
        return self._unary_float(call, lambda x: self.builder.fdiv(
            self._float_constant_like(x, 1.0), self.call_llvm_intrinsic("llvm.sqrt", [x])))

    def emit_sigmoid(self, call):
        def sigmoid(x):
            one = self._float_constant_like(x, 1.0)
            exp = self.call_llvm_intrinsic("llvm.exp", [self.builder.fneg(x)])
            return self.builder.fdiv(one, self.builder.fadd(one, exp))
        return self._unary_float(call, sigmoid)

    def emit_exp10(self, call):
        return self._unary_float(call, lambda x: self.call_llvm_intrinsic(
            "llvm.pow", [self._float_constant_like(x, 10.0), x]))

    def emit_ldexp(self, call):
        """ldexp(x, n) = x * 2**n through libm, the exponent as a C int."""
        (value, exponent) = [self.emit(arg) for arg in call.args]
        half = dt.bits(call.args[0].dtype) == 16
        if half:
            value = self.builder.fpext(value, _FLOAT)
        exponent = self.cast(exponent, call.args[1].dtype, "int32")
        element = value.type
        symbol = "ldexpf" if isinstance(element, ir.FloatType) else "ldexp"
        result = self.builder.call(self.declare(symbol, ir.FunctionType(element, [element, I32])), [value, exponent])
        return self.builder.fptrunc(result, value_type(call.args[0].dtype)) if half else result

    def emit_fmod(self, call):
        a, b = self.emit(call.args[0]), self.emit(call.args[1])
        if dt.is_float(call.args[0].dtype):
            return self.builder.frem(a, b)
        return self._int_divide("srem" if is_signed(call.args[0].dtype) else "urem", a, b, call.args[0].dtype)

    def emit_abs(self, call):
        value = self.emit(call.args[0])
        dtype = call.args[0].dtype
        if dt.is_float(dtype):
            return self.call_llvm_intrinsic("llvm.fabs", [value])
        if not is_signed(dtype):
            return value
        negative = self.builder.icmp_signed("<", value, ir.Constant(value.type, None))
        return self.builder.select(negative, self.builder.neg(value), value)

    def emit_isnan(self, call):
        value = self.emit(call.args[0])
        if not dt.is_float(call.args[0].dtype):
            return constant(call.dtype, 0)
        return self.builder.fcmp_unordered("uno", value, value)

    def emit_isinf(self, call):
        value = self.emit(call.args[0])
        if not dt.is_float(call.args[0].dtype):
            return constant(call.dtype, 0)
        magnitude = self.call_llvm_intrinsic("llvm.fabs", [value])
        return self.builder.fcmp_ordered("==", magnitude, self._float_constant_like(value, math.inf))

    def emit_isfinite(self, call):
        value = self.emit(call.args[0])
        if not dt.is_float(call.args[0].dtype):
            return constant(call.dtype, 1)
        magnitude = self.call_llvm_intrinsic("llvm.fabs", [value])
        return self.builder.fcmp_ordered("<", magnitude, self._float_constant_like(value, math.inf))

    # -- bits ----------------------------------------------------------------------

    def _operands(self, call):
        return [self.emit(arg) for arg in call.args]

    def emit_shift_left(self, call):
        a, b = self._operands(call)
        return self.builder.shl(a, b)

    def emit_shift_right(self, call):
        a, b = self._operands(call)
        return self.builder.ashr(a, b) if is_signed(call.args[0].dtype) else self.builder.lshr(a, b)

    def emit_bitwise_and(self, call):
        return self.builder.and_(*self._operands(call))

    def emit_bitwise_or(self, call):
        return self.builder.or_(*self._operands(call))

    def emit_bitwise_xor(self, call):
        return self.builder.xor(*self._operands(call))

    def emit_bitwise_not(self, call):
        return self.builder.not_(self.emit(call.args[0]))

    def emit_popcount(self, call):
        value = self.emit(call.args[0])
        return self.cast(self.call_llvm_intrinsic("llvm.ctpop", [value]), call.args[0].dtype, call.dtype)

    def emit_clz(self, call):
        value = self.emit(call.args[0])
        function = self.declare(f"llvm.ctlz.i{value.type.width}",
                                ir.FunctionType(value.type, [value.type, ir.IntType(1)]))
        count = self.builder.call(function, [value, ir.Constant(ir.IntType(1), 0)])
        return self.cast(count, call.args[0].dtype, call.dtype)

    def emit_reinterpret(self, call):
        return self.builder.bitcast(self.emit(call.args[0]), value_type(call.dtype))

    # -- control -------------------------------------------------------------------

    def emit_likely(self, call):
        return self.emit(call.args[0])

    def emit_assume(self, call):
        """A hint only: nothing is emitted (an unchecked llvm.assume would make a false one UB)."""
        return constant("bool", 1)

    def emit_ret(self, call):
        """T.ret(value): the kernel's scalar result goes to ctx->return_value (see abi.py)."""
        value = self.emit(call.args[0])
        dtype = call.args[0].dtype
        if dt.is_float(dtype):
            word = self.builder.bitcast(self.cast(value, dtype, "float64"), ir.IntType(64))
        else:
            word = self.cast(value, dtype, "int64") if not dt.is_bool(dtype) else self.builder.zext(value, ir.IntType(64))
        self.store_context("return_value", word)
        self.builder.ret(ir.Constant(I32, 0))
        # Code after a return is unreachable; give it a block of its own.
        self.builder.position_at_end(self.builder.append_basic_block("after_return"))
        return constant("int32", 0)

    def emit_checked_index(self, call):
        """T.checked_index(index, extent, what): the position `index` names (negative from the
        end), or a return with INDEX_OUT_OF_RANGE and the index in ctx->return_value. One
        unsigned compare per element catches both ends; vector lanes are checked one by one."""
        dtype = call.args[0].dtype
        index = self.emit(call.args[0])
        extent = self.cast(self.emit(call.args[1]), call.args[1].dtype, dt.with_lanes(dt.element(dtype),
                                                                                      dt.lanes(call.args[1].dtype)))
        if dt.lanes(dtype) > 1:
            def lane(value, k):  # the extent may be a scalar or a broadcast
                return self.builder.extract_element(value, ir.Constant(I32, k)) \
                    if isinstance(value.type, ir.VectorType) else value
            positions = [self._checked_lane(call, lane(index, k), lane(extent, k)) for k in range(dt.lanes(dtype))]
            result = undef_vector(index.type)
            for k, position in enumerate(positions):
                result = self.builder.insert_element(result, position, ir.Constant(I32, k))
            return result
        return self._checked_lane(call, index, extent)

    def _checked_lane(self, call, index: ir.Value, extent: ir.Value) -> ir.Value:
        negative = self.builder.icmp_signed("<", index, ir.Constant(index.type, 0))
        position = self.builder.select(negative, self.builder.add(index, extent), index)
        outside = self.builder.icmp_unsigned(">=", position, extent)
        with self.builder.if_then(outside, likely=False):
            self.store_context("return_value", self.builder.sext(index, ir.IntType(64))
                               if index.type.width < 64 else index)
            self.fail(abi.INDEX_OUT_OF_RANGE, self._index_message(call))  # the loader names the kernel
        return position

    @staticmethod
    def _index_message(call) -> str:
        """The message with the index left for the loader; a symbolic extent prints by name."""
        extent = call.args[1].value if isinstance(call.args[1], tir.Broadcast) else call.args[1]
        size = extent.value if isinstance(extent, tir.IntImm) else getattr(extent, "name", "extent")
        what = call.args[2].value if isinstance(call.args[2], tir.StringImm) else "an indexing op"
        return semantics.index_out_of_range(abi.INDEX_PLACEHOLDER, size, what)

    def emit_call_extern(self, call):
        """T.call_extern(dtype, "name", args...): a C function resolved when the kernel is loaded."""
        if not call.args or not isinstance(call.args[0], tir.StringImm):
            raise self.error(f"'{call.op}' needs the function name as its first argument")
        args = [self.emit(arg) for arg in call.args[1:]]
        result_type = ir.VoidType() if call.dtype == "void" else value_type(call.dtype)
        function = self.declare(call.args[0].value, ir.FunctionType(result_type, [a.type for a in args]))
        result = self.builder.call(function, args)
        return constant("int32", 0) if call.dtype == "void" else result

    def emit_call_llvm_intrin(self, call):
        """T.call_llvm_pure_intrin(dtype, "llvm.name", args...): an LLVM intrinsic by its full name."""
        if not call.args or not isinstance(call.args[0], tir.StringImm):
            raise self.error(f"'{call.op}' needs the intrinsic name as its first argument")
        args = [self.emit(arg) for arg in call.args[1:]]
        function = self.declare(call.args[0].value, ir.FunctionType(value_type(call.dtype), [a.type for a in args]))
        return self.builder.call(function, args)

    def emit_if_then_else(self, call):
        """Only the chosen branch is evaluated (a load in the other may be out of bounds)."""
        condition_expr, then_expr, else_expr = call.args
        if dt.lanes(condition_expr.dtype) > 1:
            return self.builder.select(self.as_bool(self.emit(condition_expr)), self.emit(then_expr),
                                       self.emit(else_expr))
        condition = self.as_bool(self.emit(condition_expr))
        then_block = self.builder.append_basic_block("if_then")
        else_block = self.builder.append_basic_block("if_else")
        done_block = self.builder.append_basic_block("if_done")
        self.builder.cbranch(condition, then_block, else_block)
        self.builder.position_at_end(then_block)
        then_value = self.emit(then_expr)
        then_end = self.builder.block
        self.builder.branch(done_block)
        self.builder.position_at_end(else_block)
        else_value = self.emit(else_expr)
        else_end = self.builder.block
        self.builder.branch(done_block)
        self.builder.position_at_end(done_block)
        phi = self.builder.phi(then_value.type)
        phi.add_incoming(then_value, then_end)
        phi.add_incoming(else_value, else_end)
        return phi
