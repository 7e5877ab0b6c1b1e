"""The meaning of TIR's scalar operations, in Python and numpy, TVM's rules exactly.

Integers are Python ints (or numpy integer arrays for vectors) wrapped to their
dtype's width after every operation; floats are numpy scalars of their dtype, so a
float32 sum rounds as float32 does. `Div`/`Mod` on integers truncate toward zero (C),
`FloorDiv`/`FloorMod` round toward negative infinity (Python). Used by the
reference interpreter and by the simplifier's constant folding, so both agree.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtype as dt


def wrap(value, dtype: str):
    """`value` as a value of `dtype`: integers wrap to the width, floats round."""
    kind, bits, lanes = dt.parse(dtype)
    if isinstance(value, np.ndarray) or lanes > 1:
        scalar = dt.element(dtype)
        return np.asarray(value).astype(dt.to_numpy(scalar) if scalar != "bool" else np.bool_)
    if kind == "bool":
        return bool(value)
    if kind == "int":
        half = 1 << (bits - 1)
        return ((int(value) + half) % (1 << bits)) - half
    if kind == "uint":
        return int(value) % (1 << bits)
    if kind in ("float", "bfloat"):
        return np.dtype(dt.to_numpy(dtype if kind == "float" else "float32")).type(value)
    return value


def floordiv(a, b):
    return a // b


def floormod(a, b):
    return a % b


def truncdiv(a, b):
    quotient = a // b
    return quotient + ((a % b != 0) & ((a < 0) != (b < 0)))


def truncmod(a, b):
    return a - truncdiv(a, b) * b


def cast(value, dtype: str):
    """C conversion: float to int truncates toward zero; anything to bool is `!= 0`."""
    kind = dt.parse(dtype)[0]
    if kind == "bool":
        return bool(value != 0) if not isinstance(value, np.ndarray) else value != 0
    if kind in ("int", "uint") and isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            return wrap(0, dtype)
        return wrap(int(math.trunc(float(value))), dtype)
    if kind in ("int", "uint"):
        return wrap(int(value) if not isinstance(value, np.ndarray) else value, dtype)
    return wrap(value, dtype)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_erf = np.vectorize(math.erf, otypes=[float])

UNARY = {
    "tir.exp": np.exp, "tir.exp2": np.exp2, "tir.exp10": lambda x: np.power(10, x),
    "tir.log": np.log, "tir.log2": np.log2, "tir.log10": np.log10, "tir.log1p": np.log1p,
    "tir.expm1": np.expm1, "tir.sqrt": np.sqrt, "tir.rsqrt": lambda x: 1 / np.sqrt(x),
    "tir.tanh": np.tanh, "tir.sigmoid": _sigmoid, "tir.erf": _erf, "tir.sin": np.sin,
    "tir.cos": np.cos, "tir.tan": np.tan, "tir.asin": np.arcsin, "tir.acos": np.arccos,
    "tir.atan": np.arctan, "tir.sinh": np.sinh, "tir.cosh": np.cosh, "tir.asinh": np.arcsinh,
    "tir.acosh": np.arccosh, "tir.atanh": np.arctanh, "tir.floor": np.floor, "tir.ceil": np.ceil,
    "tir.round": np.rint, "tir.nearbyint": np.rint, "tir.trunc": np.trunc, "tir.fabs": np.abs,
    "tir.bitwise_not": lambda x: ~x, "tir.likely": lambda x: x,
    "tir.isnan": np.isnan, "tir.isinf": np.isinf, "tir.isfinite": np.isfinite,
}

BINARY = {
    "tir.pow": np.power, "tir.atan2": np.arctan2, "tir.fmod": np.fmod, "tir.hypot": np.hypot,
    "tir.copysign": np.copysign, "tir.nextafter": np.nextafter, "tir.ldexp": np.ldexp,
    "tir.bitwise_and": lambda a, b: a & b, "tir.bitwise_or": lambda a, b: a | b,
    "tir.bitwise_xor": lambda a, b: a ^ b, "tir.shift_left": lambda a, b: a << b,
    "tir.shift_right": lambda a, b: a >> b,
}


def binary(op: str, a, b, dtype: str):
    """The value of the binary node class named `op` on evaluated operands."""
    is_float = dt.is_float(dtype)
    if op == "Add":
        result = a + b
    elif op == "Sub":
        result = a - b
    elif op == "Mul":
        result = a * b
    elif op == "Div":
        result = a / b if is_float else truncdiv(a, b)
    elif op == "Mod":
        result = np.fmod(a, b) if is_float else truncmod(a, b)
    elif op == "FloorDiv":
        result = np.floor(a / b) if is_float else floordiv(a, b)
    elif op == "FloorMod":
        result = a - np.floor(a / b) * b if is_float else floormod(a, b)
    elif op == "Min":
        result = np.minimum(a, b) if is_float else (min(a, b) if not _is_vec(a, b) else np.minimum(a, b))
    elif op == "Max":
        result = np.maximum(a, b) if is_float else (max(a, b) if not _is_vec(a, b) else np.maximum(a, b))
    else:
        return _compare(op, a, b)
    return wrap(result, dtype)


def _is_vec(a, b) -> bool:
    return isinstance(a, np.ndarray) or isinstance(b, np.ndarray)


def _compare(op: str, a, b):
    if op == "EQ":
        return a == b
    if op == "NE":
        return a != b
    if op == "LT":
        return a < b
    if op == "LE":
        return a <= b
    if op == "GT":
        return a > b
    if op == "GE":
        return a >= b
    if op == "And":
        return np.logical_and(a, b) if _is_vec(a, b) else bool(a) and bool(b)
    if op == "Or":
        return np.logical_or(a, b) if _is_vec(a, b) else bool(a) or bool(b)
    raise KeyError(op)


# -- tir.checked_index ------------------------------------------------------------------
# `T.checked_index(index, extent, "R.take")` is the position `index` names on an axis of
# `extent` elements, a negative index counted from the end (numpy's rule). An index
# outside [-extent, extent) stops the kernel with the message below instead of reading
# or writing outside the buffer. The legalizations of the ops whose memory accesses
# depend on index *data* (take, gather/scatter, index_tensor/put) emit it.
CHECKED_INDEX = "tir.checked_index"


def index_out_of_range(index, extent, what: str) -> str:
    """The message of a failed tir.checked_index (the interpreter's and, with the index
    filled in by the loader, the compiled kernel's)."""
    return f"index {index} out of range [-{extent}, {extent}) in {what}"


def checked_index(index, extent):
    """The position of `index` on an axis of `extent` (Python ints, or numpy integer
    arrays for vector lanes), and (index, extent) of the first lane out of range, or None."""
    values, extents = np.broadcast_arrays(np.asarray(index, dtype=np.int64), np.asarray(extent, dtype=np.int64))
    positions = np.where(values < 0, values + extents, values)
    bad = np.flatnonzero((positions < 0) | (positions >= extents))
    first_bad = (int(values.flat[bad[0]]), int(extents.flat[bad[0]])) if bad.size else None
    if isinstance(index, np.ndarray):
        return positions, first_bad
    return int(positions), first_bad
