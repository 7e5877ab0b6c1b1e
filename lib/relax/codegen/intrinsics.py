"""The math intrinsics of TIR and how each becomes LLVM: a table, read by codegen.

Three ways, by the first element of an entry:

    ("llvm", name, arity)      an overloaded LLVM intrinsic, vectors allowed (llvm.exp.v8f32)
    ("libm", name, arity)      a C math library call, `name` for double and `name`+"f"
                               for float; vectors are split into lanes. Resolved in
                               the loading process (cross-compiled objects keep it
                               undefined until then)
    ("custom", method, arity)  emitted by the named IntrinsicEmitter method

float16 operands are computed in float32 and rounded back, as numpy does. The
TIR name is the Call op without its "tir." prefix.
"""

from __future__ import annotations

MATH_INTRINSICS: dict[str, tuple[str, str, int]] = {
    # Exponentials and logarithms.
    "exp": ("llvm", "llvm.exp", 1),
    "exp2": ("llvm", "llvm.exp2", 1),
    "exp10": ("custom", "emit_exp10", 1),
    "expm1": ("libm", "expm1", 1),
    "log": ("llvm", "llvm.log", 1),
    "log2": ("llvm", "llvm.log2", 1),
    "log10": ("llvm", "llvm.log10", 1),
    "log1p": ("libm", "log1p", 1),
    "pow": ("llvm", "llvm.pow", 2),
    "sqrt": ("llvm", "llvm.sqrt", 1),
    "rsqrt": ("custom", "emit_rsqrt", 1),
    "cbrt": ("libm", "cbrt", 1),
    # Trigonometric and hyperbolic functions.
    "sin": ("llvm", "llvm.sin", 1),
    "cos": ("llvm", "llvm.cos", 1),
    "tan": ("llvm", "llvm.tan", 1),
    "asin": ("llvm", "llvm.asin", 1),
    "acos": ("llvm", "llvm.acos", 1),
    "atan": ("llvm", "llvm.atan", 1),
    "atan2": ("libm", "atan2", 2),
    "sinh": ("llvm", "llvm.sinh", 1),
    "cosh": ("llvm", "llvm.cosh", 1),
    "tanh": ("llvm", "llvm.tanh", 1),
    "asinh": ("libm", "asinh", 1),
    "acosh": ("libm", "acosh", 1),
    "atanh": ("libm", "atanh", 1),
    "erf": ("libm", "erf", 1),
    "hypot": ("libm", "hypot", 2),
    "sigmoid": ("custom", "emit_sigmoid", 1),
    # Rounding. TVM's round is round-half-to-even (nearbyint in the default mode), as numpy's.
    "floor": ("llvm", "llvm.floor", 1),
    "ceil": ("llvm", "llvm.ceil", 1),
    "trunc": ("llvm", "llvm.trunc", 1),
    "round": ("llvm", "llvm.roundeven", 1),
    "nearbyint": ("llvm", "llvm.nearbyint", 1),
    # Sign, magnitude and remainders.
    "fabs": ("llvm", "llvm.fabs", 1),
    "abs": ("custom", "emit_abs", 1),
    "copysign": ("llvm", "llvm.copysign", 2),
    # fmuladd, as TVM lowers tir.fma: fused where the CPU has an FMA unit, a multiply
    # and an add elsewhere (llvm.fma would call libm's fmaf per element there).
    "fma": ("llvm", "llvm.fmuladd", 3),
    "fmod": ("custom", "emit_fmod", 2),
    "nextafter": ("libm", "nextafter", 2),
    "ldexp": ("custom", "emit_ldexp", 2),
    # Classification.
    "isnan": ("custom", "emit_isnan", 1),
    "isinf": ("custom", "emit_isinf", 1),
    "isfinite": ("custom", "emit_isfinite", 1),
    # Bits.
    "shift_left": ("custom", "emit_shift_left", 2),
    "shift_right": ("custom", "emit_shift_right", 2),
    "bitwise_and": ("custom", "emit_bitwise_and", 2),
    "bitwise_or": ("custom", "emit_bitwise_or", 2),
    "bitwise_xor": ("custom", "emit_bitwise_xor", 2),
    "bitwise_not": ("custom", "emit_bitwise_not", 1),
    "popcount": ("custom", "emit_popcount", 1),
    "clz": ("custom", "emit_clz", 1),
    "reinterpret": ("custom", "emit_reinterpret", 1),
    # Control.
    "if_then_else": ("custom", "emit_if_then_else", 3),
    "likely": ("custom", "emit_likely", 1),
    "assume": ("custom", "emit_assume", 1),
    "ret": ("custom", "emit_ret", 1),
    "checked_index": ("custom", "emit_checked_index", 3),
    # Calls to C functions by name, resolved in the loading process (-1: any arity).
    "call_extern": ("custom", "emit_call_extern", -1),
    "call_pure_extern": ("custom", "emit_call_extern", -1),
    "call_llvm_pure_intrin": ("custom", "emit_call_llvm_intrin", -1),
    "call_llvm_intrin": ("custom", "emit_call_llvm_intrin", -1),
}

# Intrinsics that need a runtime a native CPU kernel does not have.
UNSUPPORTED = {
    "call_packed": "calls a PackedFunc, which native kernels cannot reach; call it from the Relax function",
    "call_cpacked": "calls a PackedFunc, which native kernels cannot reach; call it from the Relax function",
    "tvm_call_packed": "calls a PackedFunc, which native kernels cannot reach; call it from the Relax function",
    "tvm_storage_sync": "synchronizes GPU threads; CPU kernels have none",
}

def intrinsic_name(op: str) -> str:
    """The table key of a Call op: "tir.exp" -> "exp"."""
    return op[4:] if op.startswith("tir.") else op
