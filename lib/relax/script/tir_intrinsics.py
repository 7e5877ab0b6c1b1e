"""The vocabulary of TIR intrinsic calls: `T.exp(x)` is `tir.Call(dtype, "tir.exp", (x,))`.

One table, read by the parser (what `T.<name>(...)` builds and how many arguments
it takes), the printer (how a `tir.Call` prints back) and codegen (what the op
computes). Each entry gives the op name, the argument count, and the rule for the
result type:

    "same"        the type of the (first) value argument: T.exp, T.pow, T.shift_left
    "bool"        bool, with the lanes of the argument: T.isnan
    "dtype_arg"   the first argument is a dtype string that names it: T.call_extern
    "second"      the type of the second argument: T.if_then_else(cond, a, b)
    a dtype       always that type: T.tvm_call_packed is "int32"
"""

from __future__ import annotations

from ..records import record



@record
class Intrinsic:
    name: str  # as written after `T.`
    op: str  # the tir.Call op name
    min_args: int
    max_args: int | None  # None: any number
    result: str  # "same", "bool", "dtype_arg", "second" or a dtype


_UNARY_MATH = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt",
    "tanh", "sigmoid", "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "asinh", "acosh", "atanh", "floor", "ceil", "round", "nearbyint", "trunc", "fabs",
    "popcount", "clz", "bitwise_not", "likely",
)
_BINARY_MATH = (
    "pow", "atan2", "fmod", "hypot", "copysign", "nextafter", "ldexp",
    "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right",
)
_PREDICATES = ("isnan", "isinf", "isfinite", "isnullptr")

# Builtins of lowered TIR: (name, min args, max args, result).
_BUILTINS = (
    ("if_then_else", 3, 3, "second"),
    ("call_extern", 2, None, "dtype_arg"),
    ("call_pure_extern", 2, None, "dtype_arg"),
    ("call_llvm_intrin", 2, None, "dtype_arg"),
    ("call_llvm_pure_intrin", 2, None, "dtype_arg"),
    ("call_intrin", 2, None, "dtype_arg"),
    ("reinterpret", 2, 2, "dtype_arg"),
    ("type_annotation", 1, 1, "dtype_arg"),
    ("call_packed", 1, None, "int32"),
    ("call_cpacked", 1, None, "int32"),
    ("tvm_call_packed", 1, None, "int32"),
    ("tvm_call_cpacked", 1, None, "int32"),
    ("tvm_storage_sync", 1, None, "int32"),
    ("tvm_thread_allreduce", 1, None, "handle"),
    ("tvm_access_ptr", 5, 5, "handle"),
    ("address_of", 1, 1, "handle"),
    ("handle_add_byte_offset", 2, 2, "handle"),
    ("tvm_stack_alloca", 2, 2, "handle"),
    ("tvm_stack_make_shape", 0, None, "handle"),
    ("tvm_stack_make_array", 6, 6, "handle"),
    ("tvm_struct_set", 4, 4, "int32"),
    ("assume", 1, 1, "bool"),
    ("undef", 0, 0, "int32"),
    ("ret", 1, 1, "same"),
    ("tvm_warp_shuffle", 5, 5, "second"),
    ("tvm_warp_activemask", 0, 0, "uint32"),
    ("q_multiply_shift", 4, 4, "same"),
    # relax's own: a position from index data, checked (tir/semantics.py, not in TVM).
    ("checked_index", 3, 3, "same"),
)


def _build() -> dict[str, Intrinsic]:
    table: dict[str, Intrinsic] = {}
    for name in _UNARY_MATH:
        table[name] = Intrinsic(name, f"tir.{name}", 1, 1, "same")
    for name in _BINARY_MATH:
        table[name] = Intrinsic(name, f"tir.{name}", 2, 2, "same")
    for name in _PREDICATES:
        table[name] = Intrinsic(name, f"tir.{name}", 1, 1, "bool")
    for name, low, high, result in _BUILTINS:
        table[name] = Intrinsic(name, f"tir.{name}", low, high, result)
    return table


INTRINSICS: dict[str, Intrinsic] = _build()
"""`T.<name>` -> its entry."""

BY_OP: dict[str, Intrinsic] = {entry.op: entry for entry in INTRINSICS.values()}
"""A tir.Call op name -> its entry (for the printer and codegen)."""

# Math intrinsics whose two arguments are matched to one type before the call
# (ldexp's exponent keeps its integer type).
BINARY_MATH = frozenset(_BINARY_MATH) - {"ldexp"}


def describe_arity(entry: Intrinsic) -> str:
    if entry.max_args == entry.min_args:
        count = entry.min_args
        return f"{count} argument{'s' if count != 1 else ''}"
    if entry.max_args is None:
        return f"at least {entry.min_args} argument{'s' if entry.min_args != 1 else ''}"
    return f"{entry.min_args} to {entry.max_args} arguments"
