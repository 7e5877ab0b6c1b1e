"""The TIR intrinsics as CUDA C: which CUDA math function computes each one.

MATH maps a TIR math intrinsic (the Call op without "tir.") to its CUDA function
for float32 and for float64; float16 goes through the float32 one and rounds
back. The list is that of relax.codegen.intrinsics (the CPU code generator's),
which test_cuda_intrinsics checks; the intrinsics that are not plain math
(classification, bits, control, calls, GPU synchronization) are written by
CudaExprPrinter.call_* methods, named in SPECIAL.
"""

from __future__ import annotations

# name: (float32 function, float64 function, arity)
MATH: dict[str, tuple[str, str, int]] = {
    "exp": ("expf", "exp", 1),
    "exp2": ("exp2f", "exp2", 1),
    "exp10": ("exp10f", "exp10", 1),
    "expm1": ("expm1f", "expm1", 1),
    "log": ("logf", "log", 1),
    "log2": ("log2f", "log2", 1),
    "log10": ("log10f", "log10", 1),
    "log1p": ("log1pf", "log1p", 1),
    "pow": ("powf", "pow", 2),
    "sqrt": ("sqrtf", "sqrt", 1),
    "rsqrt": ("rsqrtf", "rsqrt", 1),
    "cbrt": ("cbrtf", "cbrt", 1),
    "sin": ("sinf", "sin", 1),
    "cos": ("cosf", "cos", 1),
    "tan": ("tanf", "tan", 1),
    "asin": ("asinf", "asin", 1),
    "acos": ("acosf", "acos", 1),
    "atan": ("atanf", "atan", 1),
    "atan2": ("atan2f", "atan2", 2),
    "sinh": ("sinhf", "sinh", 1),
    "cosh": ("coshf", "cosh", 1),
    "tanh": ("tanhf", "tanh", 1),
    "asinh": ("asinhf", "asinh", 1),
    "acosh": ("acoshf", "acosh", 1),
    "atanh": ("atanhf", "atanh", 1),
    "erf": ("erff", "erf", 1),
    "hypot": ("hypotf", "hypot", 2),
    "floor": ("floorf", "floor", 1),
    "ceil": ("ceilf", "ceil", 1),
    "trunc": ("truncf", "trunc", 1),
    # TVM's round is round-half-to-even, as numpy's: rint in the default rounding mode.
    "round": ("rintf", "rint", 1),
    "nearbyint": ("nearbyintf", "nearbyint", 1),
    "fabs": ("fabsf", "fabs", 1),
    "copysign": ("copysignf", "copysign", 2),
    "fma": ("fmaf", "fma", 3),
    "fmod": ("fmodf", "fmod", 2),
    "nextafter": ("nextafterf", "nextafter", 2),
}

# Intrinsics written by a CudaExprPrinter method `call_<name>`.
SPECIAL = (
    "sigmoid", "abs", "ldexp", "isnan", "isinf", "isfinite",
    "shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "popcount", "clz", "reinterpret", "if_then_else", "likely", "assume",
    "call_extern", "call_pure_extern", "checked_index",
    "tvm_storage_sync", "tvm_warp_shuffle", "tvm_warp_shuffle_down", "tvm_warp_activemask",
    "ptx_mma",
)

# Intrinsics a CUDA kernel cannot have, and why.
REFUSED = {
    "call_packed": "calls a PackedFunc, which GPU kernels cannot reach; call it from the Relax function",
    "call_cpacked": "calls a PackedFunc, which GPU kernels cannot reach; call it from the Relax function",
    "tvm_call_packed": "calls a PackedFunc, which GPU kernels cannot reach; call it from the Relax function",
    "call_llvm_pure_intrin": "calls an LLVM intrinsic, which CUDA C cannot name",
    "call_llvm_intrin": "calls an LLVM intrinsic, which CUDA C cannot name",
    "ret": "returns a value, which a __global__ function cannot",
}
