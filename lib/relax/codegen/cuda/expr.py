"""Lowered TIR expressions as CUDA C expression text (a mixin of the kernel printer).

Every expression becomes C text whose value has the C type of its TIR dtype
(c_types.C_TYPES), fully parenthesized. The arithmetic is TIR's, as the CPU code
generator implements it: integer Div/Mod truncate (C), FloorDiv/FloorMod floor,
a zero integer divisor gives 0; integers narrower than 32 bits wrap to their
width (C would promote them to int); float FloorDiv is floor(a / b); float16 is
computed in float and rounded back. Min, Max and Select are helper calls that
evaluate each operand once, in every lane (a `?:` would skip a shuffle in some).
Vector expressions (Ramp, Broadcast, Shuffle, lanes > 1) are refused: GPU
schedules bind threads instead of vectorizing.
"""

from __future__ import annotations

from ...diagnostics import UserError
from ...ir import dtype as dt
from ...ir import tir
from .c_types import c_literal, c_type, is_half
from .intrinsics import MATH, REFUSED, SPECIAL

_ARITH = {tir.Add: "+", tir.Sub: "-", tir.Mul: "*"}
_HALF_ARITH = {tir.Add: "relax_hadd", tir.Sub: "relax_hsub", tir.Mul: "relax_hmul"}  # c_types.py's prelude
_COMPARE = {tir.EQ: "==", tir.NE: "!=", tir.LT: "<", tir.LE: "<=", tir.GT: ">", tir.GE: ">="}
_INT_DIVISION = {tir.Div: "relax_div", tir.Mod: "relax_mod", tir.FloorDiv: "relax_floordiv",
                 tir.FloorMod: "relax_floormod"}


class CudaExprPrinter:
    """Needs from its host class: kernel_name, var_name(var), buffer_name(buffer)."""

    kernel_name: str

    def error(self, message: str) -> UserError:
        return UserError(f"codegen: cuda: kernel '{self.kernel_name}': {message}")

    # -- dispatch ------------------------------------------------------------------

    def expr(self, node: tir.PrimExpr) -> str:
        if dt.lanes(node.dtype) != 1 and not isinstance(node, tir.StringImm):
            raise self.error(f"vector expression {type(node).__name__} of dtype '{node.dtype}' is not "
                             "supported by the CUDA code generator (GPU schedules must not vectorize)")
        for cls in type(node).__mro__:
            method = getattr(self, "expr_" + cls.__name__, None)
            if method is not None:
                return method(node)
        raise self.error(f"cannot generate CUDA code for {type(node).__name__}")

    def as_float(self, node: tir.PrimExpr) -> str:
        """The value of a float16 or float32 expression as a C float."""
        text = self.expr(node)
        return f"relax_h2f({text})" if is_half(node.dtype) else text

    def from_float(self, text: str, dtype: str) -> str:
        """A C float (or double) computed for `dtype`, back in dtype's C type."""
        return f"relax_f2h({text})" if is_half(dtype) else text

    # -- leaves --------------------------------------------------------------------

    def expr_Var(self, var: tir.Var) -> str:
        return self.var_name(var)

    def expr_IntImm(self, imm: tir.IntImm) -> str:
        return c_literal(imm.dtype, imm.value)

    def expr_FloatImm(self, imm: tir.FloatImm) -> str:
        return c_literal(imm.dtype, imm.value)

    def expr_StringImm(self, imm: tir.StringImm) -> str:
        text = imm.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{text}"'

    def expr_BufferLoad(self, load: tir.BufferLoad) -> str:
        if len(load.indices) != 1:
            raise self.error(f"buffer '{load.buffer.name}' is read with {len(load.indices)} indices; "
                             "kernels must be lowered (flattened to 1-D) first")
        return f"{self.buffer_name(load.buffer)}[{self.expr(load.indices[0])}]"

    # -- arithmetic ----------------------------------------------------------------

    def _wrap(self, text: str, dtype: str) -> str:
        """C promotes narrow integers to int: cast the result back to its width."""
        if dt.is_float(dtype) or dtype == "bool" or dt.bits(dtype) >= 32:
            return text
        return f"(({c_type(dtype)}){text})"

    def expr_BinaryOp(self, node) -> str:
        dtype = node.dtype
        cls = type(node)
        if cls in _ARITH:
            op = _ARITH[cls]
            if is_half(dtype):
                return f"{_HALF_ARITH[cls]}({self.expr(node.a)}, {self.expr(node.b)})"
            if dtype == "bool":
                return f"((bool)({self.expr(node.a)} {op} {self.expr(node.b)}))"
            return self._wrap(f"({self.expr(node.a)} {op} {self.expr(node.b)})", dtype)
        if cls in _INT_DIVISION:
            return self._division(node, cls)
        if cls in (tir.Min, tir.Max):
            helper = "relax_min" if cls is tir.Min else "relax_max"
            template = "" if is_half(dtype) else f"<{c_type(dtype)}>"  # float16: the overload
            return f"{helper}{template}({self.expr(node.a)}, {self.expr(node.b)})"
        raise self.error(f"cannot generate CUDA code for {cls.__name__}")

    def _division(self, node, cls) -> str:
        dtype = node.dtype
        if dt.is_float(dtype):
            a, b = self.as_float(node.a), self.as_float(node.b)
            if cls is tir.Div:
                text = f"({a} / {b})"
            elif cls is tir.Mod:
                text = f"{'fmod' if dtype == 'float64' else 'fmodf'}({a}, {b})"
            elif cls is tir.FloorDiv:
                text = f"{'floor' if dtype == 'float64' else 'floorf'}({a} / {b})"
            else:
                floor = "floor" if dtype == "float64" else "floorf"
                text = f"({a} - {floor}({a} / {b}) * {b})"
            return self.from_float(text, dtype)
        if dtype == "bool":
            raise self.error(f"{cls.__name__} of booleans")
        ctype = c_type(dtype)
        return f"{_INT_DIVISION[cls]}<{ctype}>({self.expr(node.a)}, {self.expr(node.b)})"

    def expr_CompareOp(self, node) -> str:
        if isinstance(node, (tir.And, tir.Or)):
            op = "&&" if isinstance(node, tir.And) else "||"
            return f"({self.expr(node.a)} {op} {self.expr(node.b)})"
        op = _COMPARE[type(node)]
        if is_half(node.a.dtype):
            return f"({self.as_float(node.a)} {op} {self.as_float(node.b)})"
        return f"({self.expr(node.a)} {op} {self.expr(node.b)})"

    def expr_Not(self, node) -> str:
        return f"(!{self.expr(node.a)})"

    def expr_Select(self, node) -> str:
        # TIR's Select evaluates both arms (if_then_else is the one that skips).
        ctype = "relax_half" if is_half(node.dtype) else c_type(node.dtype)
        return (f"relax_select<{ctype}>({self.expr(node.condition)}, {self.expr(node.true_value)}, "
                f"{self.expr(node.false_value)})")

    def expr_Let(self, node) -> str:
        name = self.bind_var(node.var)
        ctype = c_type(node.var.dtype, f"let variable '{node.var.name}'")
        return f"([&]() {{ const {ctype} {name} = {self.expr(node.value)}; return {self.expr(node.body)}; }}())"

    def expr_Cast(self, node) -> str:
        return self.cast(self.expr(node.value), node.value.dtype, node.dtype)

    def cast(self, text: str, source: str, target: str) -> str:
        if source == target:
            return text
        if target == "bool":
            if is_half(source):
                return f"(relax_h2f({text}) != 0.0f)"
            return f"({text} != 0)"
        if is_half(target):
            if is_half(source):
                return text
            if source == "float64":
                return f"relax_d2h({text})"
            return f"relax_f2h((float)({text}))" if source != "float32" else f"relax_f2h({text})"
        if is_half(source):
            return f"(({c_type(target)})relax_h2f({text}))"
        return f"(({c_type(target)})({text}))"

    def expr_Ramp(self, node) -> str:
        raise self.error("vector Ramp expressions are not supported by the CUDA code generator")

    expr_Broadcast = expr_Ramp
    expr_Shuffle = expr_Ramp

    # -- calls ---------------------------------------------------------------------

    def expr_Call(self, call: tir.Call) -> str:
        name = call.op[4:] if call.op.startswith("tir.") else call.op
        if name in REFUSED:
            raise self.error(f"'{call.op}' {REFUSED[name]}")
        if name in MATH:
            single, double, arity = MATH[name]
            if len(call.args) != arity:
                raise self.error(f"'{call.op}' takes {arity} arguments, got {len(call.args)}")
            dtype = call.dtype
            if not dt.is_float(dtype):
                raise self.error(f"'{call.op}' of {dtype}: math intrinsics take floats")
            if dtype == "float64":
                return f"{double}({', '.join(self.expr(arg) for arg in call.args)})"
            args = ", ".join(self.as_float(arg) for arg in call.args)
            return self.from_float(f"{single}({args})", dtype)
        if name in SPECIAL:
            return getattr(self, "call_" + name)(call)
        raise self.error(f"intrinsic '{call.op}' is not supported by the CUDA code generator")

    def _args(self, call: tir.Call) -> list[str]:
        return [self.expr(arg) for arg in call.args]

    def call_sigmoid(self, call):
        if call.dtype == "float64":
            return f"(1.0 / (1.0 + exp(-{self.expr(call.args[0])})))"
        return self.from_float(f"(1.0f / (1.0f + expf(-{self.as_float(call.args[0])})))", call.dtype)

    def call_abs(self, call):
        dtype = call.args[0].dtype
        if dt.is_float(dtype):
            if dtype == "float64":
                return f"fabs({self.expr(call.args[0])})"
            return self.from_float(f"fabsf({self.as_float(call.args[0])})", dtype)
        if dt.is_uint(dtype) or dtype == "bool":
            return self.expr(call.args[0])
        value = self.expr(call.args[0])
        return self._wrap(f"(({value} < 0) ? -{value} : {value})", dtype)

    def call_ldexp(self, call):
        value, exponent = call.args
        if value.dtype == "float64":
            return f"ldexp({self.expr(value)}, (int)({self.expr(exponent)}))"
        return self.from_float(f"ldexpf({self.as_float(value)}, (int)({self.expr(exponent)}))", value.dtype)

    def _classify(self, call, function: str, integer_answer: str) -> str:
        dtype = call.args[0].dtype
        if not dt.is_float(dtype):
            return integer_answer
        value = self.as_float(call.args[0]) if is_half(dtype) else self.expr(call.args[0])
        return f"((bool){function}({value}))"

    def call_isnan(self, call):
        return self._classify(call, "isnan", "false")

    def call_isinf(self, call):
        return self._classify(call, "isinf", "false")

    def call_isfinite(self, call):
        return self._classify(call, "isfinite", "true")

    def _bits(self, call, op: str) -> str:
        a, b = self._args(call)
        return self._wrap(f"({a} {op} {b})", call.dtype)

    def call_shift_left(self, call):
        return self._bits(call, "<<")

    def call_shift_right(self, call):  # arithmetic for signed types, logical for unsigned, as C
        return self._bits(call, ">>")

    def call_bitwise_and(self, call):
        return self._bits(call, "&")

    def call_bitwise_or(self, call):
        return self._bits(call, "|")

    def call_bitwise_xor(self, call):
        return self._bits(call, "^")

    def call_bitwise_not(self, call):
        if call.dtype == "bool":
            return f"(!{self.expr(call.args[0])})"
        return self._wrap(f"(~{self.expr(call.args[0])})", call.dtype)

    def _unsigned(self, call) -> tuple[str, int]:
        dtype = call.args[0].dtype
        bits = dt.bits(dtype)
        unsigned = "unsigned long long" if bits == 64 else "unsigned int"
        mask = "" if bits >= 32 else f" & 0x{(1 << bits) - 1:x}u"
        return f"(({unsigned})({self.expr(call.args[0])}){mask})", bits

    def call_popcount(self, call):
        value, bits = self._unsigned(call)
        count = f"__popcll({value})" if bits == 64 else f"__popc({value})"
        return self.cast(count, "int32", call.dtype)

    def call_clz(self, call):
        value, bits = self._unsigned(call)
        count = f"__clzll({value})" if bits == 64 else f"(__clz({value}) - {32 - bits})"
        return self.cast(count, "int32", call.dtype)

    def call_reinterpret(self, call):
        source = call.args[0].dtype
        if dt.bits(source) != dt.bits(call.dtype):
            raise self.error(f"reinterpret of {source} as {call.dtype}: the sizes differ")
        return f"relax_bitcast<{c_type(call.dtype)}, {c_type(source)}>({self.expr(call.args[0])})"

    def call_if_then_else(self, call):
        condition, then, otherwise = self._args(call)
        return f"({condition} ? {then} : {otherwise})"

    def call_checked_index(self, call):
        """T.checked_index(index, extent, what): the position, or a trap (see the prelude)."""
        index, extent = (self.expr(arg) for arg in call.args[:2])
        what = call.args[2].value if isinstance(call.args[2], tir.StringImm) else "an indexing op"
        where = f"{self.kernel_name}: {what}".replace("\\", "\\\\").replace('"', '\\"')
        return f'relax_checked_index((long long)({index}), (long long)({extent}), "{where}")'

    def call_likely(self, call):
        return self.expr(call.args[0])

    def call_assume(self, call):
        return f"__builtin_assume({self.expr(call.args[0])})"

    def call_call_extern(self, call):
        if not call.args or not isinstance(call.args[0], tir.StringImm):
            raise self.error(f"'{call.op}' needs the function name as its first argument")
        args = ", ".join(self.expr(arg) for arg in call.args[1:])
        return f"{call.args[0].value}({args})"

    call_call_pure_extern = call_call_extern

    def call_tvm_storage_sync(self, call):
        scope = call.args[0].value if call.args and isinstance(call.args[0], tir.StringImm) else "shared"
        if scope == "warp":
            return "__syncwarp()"
        if scope not in ("shared", "shared.dyn"):
            raise self.error(f"tvm_storage_sync of scope '{scope}': only shared and warp are supported")
        return "__syncthreads()"

    def _shuffle(self, call, function: str) -> str:
        if len(call.args) != 5:
            raise self.error(f"'{call.op}' takes 5 arguments (mask, value, lane or offset, width, warp size)")
        mask, value, lane, width, _ = call.args
        return (f"{function}((unsigned)({self.expr(mask)}), {self.expr(value)}, (int)({self.expr(lane)}), "
                f"(int)({self.expr(width)}))")

    def call_tvm_warp_shuffle(self, call):
        return self._shuffle(call, "relax_shfl")

    def call_tvm_warp_shuffle_down(self, call):
        return self._shuffle(call, "relax_shfl_down")

    def call_ptx_mma(self, call):
        """In place on the accumulator: relax_mma_m16n8k16_f16(C + c_index, A + a_index, B + b_index)."""
        form = tuple(arg.value if isinstance(arg, tir.StringImm) else None for arg in call.args[:6])
        if form != ("m16n8k16", "row", "col", "fp16", "fp16", "fp16") or len(call.args) != 13:
            raise self.error(f"ptx_mma {form}: only m16n8k16 row col with fp16 A, B and C is generated")
        a, a_index, b, b_index, acc, c_index = (self.expr(arg) for arg in call.args[6:12])
        return f"relax_mma_m16n8k16_f16({acc} + {c_index}, {a} + {a_index}, {b} + {b_index})"

    def call_tvm_warp_activemask(self, call):
        return self.cast("__activemask()", "uint32", call.dtype)
