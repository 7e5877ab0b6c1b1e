"""What every rule of the program generator shares: sizes, constants, broadcasting, guards.

A guard makes an operand valid for an operator by adding a node in front of it
(`R.clip` before exp, `R.abs` before sqrt, ...), so that every rule applies to any
operand and no drawn program is thrown away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from error_bounds import Bound, computed, is_float

# Sizes that hit vector and tile edges: 1, small primes, and one past a power of two.
DIMS = (1, 2, 3, 5, 7, 13, 17, 31, 33)
MAX_ELEMENTS = 4096
MAX_RANK = 4
# The dtype of a new input, where a rule takes several: mostly float32.
DTYPES = ("float32", "float32", "float32", "float16", "int32", "bool")
NUMERIC_DTYPES = ("float32", "float32", "float16", "int32")
FLOAT_DTYPES = ("float32", "float32", "float16")


def const_text(value: float, dtype: str) -> str:
    number = repr(float(value)) if is_float(dtype) else str(int(value))
    return f'R.const({number}, "{dtype}")'


def list_text(items) -> str:
    return "[" + ", ".join(str(int(i)) for i in items) + "]"


def tuple_text(items) -> str:
    items = [str(int(i)) for i in items]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


# -- broadcasting ----------------------------------------------------------------------
def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy's broadcast of the shapes, or None when they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def broadcasts_with(shape: tuple[int, ...]):
    """Accepts values whose shape broadcasts with `shape` into a small enough result."""

    def accept(value) -> bool:
        result = broadcast_shape(shape, value.shape)
        return result is not None and math.prod(result) <= MAX_ELEMENTS

    return accept


def broadcast_partner_shape(builder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape`: each dim kept or 1 (a 1 may grow), some
    leading dims dropped."""
    dims = []
    for dim in shape:
        choice = builder.draw(st.sampled_from(("keep", "one", "grow") if dim == 1 else ("keep", "one")))
        dims.append(dim if choice == "keep" else 1 if choice == "one" else builder.dim(limit=7))
    dims = dims[builder.draw(st.integers(0, len(dims))):]
    if math.prod(broadcast_shape(shape, tuple(dims))) > MAX_ELEMENTS:
        return tuple(shape)
    return tuple(dims)


@dataclass(frozen=True)
class Operand:
    """An argument of a call: a program value or an inline scalar `R.const`."""

    text: str
    shape: tuple[int, ...]
    dtype: str
    bound: Bound
    value: object = None  # the program Value, None for a constant
    constant: float | None = None


def of_value(value) -> Operand:
    return Operand(value.name, value.shape, value.dtype, value.bound, value=value)


def of_constant(number: float, dtype: str) -> Operand:
    return Operand(const_text(number, dtype), (), dtype, Bound(number, number), constant=number)


def call_args(operands) -> tuple:
    return tuple(o.value for o in operands if o.value is not None)


def bind_arrays(operands, arrays) -> list:
    """The arrays of all operands from those of the values among them (constants inline)."""
    arrays = iter(arrays)
    return [np.asarray(o.constant) if o.value is None else next(arrays) for o in operands]


def emit_call(builder, call: str, operands, shape, dtype: str, bound: Bound, function):
    """A node `call` over `operands`, computed by `function` on all their arrays."""
    return builder.emit(call, shape, dtype, bound, call_args(operands),
                        lambda *arrays: function(*bind_arrays(operands, arrays)))


# -- guards ----------------------------------------------------------------------------
def clip(builder, x, low: float, high: float):
    """`R.clip(x, low, high)`: exact, so the error passes through."""
    if not is_float(x.dtype):
        low, high = math.ceil(low), math.floor(high)
    lo, hi = min(max(x.bound.lo, low), high), max(min(x.bound.hi, high), low)
    call = f"R.clip({x.name}, {_number(low, x.dtype)}, {_number(high, x.dtype)})"
    return builder.emit(call, x.shape, x.dtype, Bound(lo, hi, x.bound.err), (x,),
                        lambda a: np.clip(a, low, high))


def limit(builder, x, magnitude: float):
    """x, clipped into [-magnitude, magnitude] (rounded down to a simple number) when it may leave it."""
    if x.bound.magnitude <= magnitude:
        return x
    magnitude = round_limit(magnitude, x.dtype)
    return clip(builder, x, -magnitude, magnitude)


def absolute(builder, x):
    lo, hi = x.bound.lo, x.bound.hi
    low = 0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi))
    return builder.emit(f"R.abs({x.name})", x.shape, x.dtype, Bound(low, x.bound.magnitude, x.bound.err),
                        (x,), np.abs)


def nonnegative(builder, x):
    """x when it cannot be negative, else abs(x)."""
    return x if x.bound.lo - x.bound.err >= 0.0 else absolute(builder, x)


def at_least(builder, x, low: float):
    """x when it stays above `low` even when off by its error, else abs(x) + shift, where
    the shift (`low`, the error, the addition's rounding) keeps it there: for log and divisors."""
    if x.bound.lo - x.bound.err >= low:
        return x
    positive = nonnegative(builder, x)
    largest = positive.bound.hi + low + 2 * positive.bound.err + 1
    shift = representable_above(low + computed(x.dtype, 0.0, largest, positive.bound.err).err, x.dtype)
    bound = computed(x.dtype, positive.bound.lo + shift, positive.bound.hi + shift, positive.bound.err)
    return builder.emit(f"R.add({positive.name}, {const_text(shift, x.dtype)})", x.shape, x.dtype, bound,
                        (positive,), lambda a: a + shift)


def representable_above(value: float, dtype: str) -> float:
    """The smallest number of `dtype` not below `value`: a constant numpy and the kernel agree on."""
    if not is_float(dtype):
        return float(math.ceil(value))
    rounded = np.asarray(value, dtype=dtype)
    if rounded < value:
        rounded = np.nextafter(rounded, np.asarray(np.inf, dtype=dtype))
    return float(rounded)


def round_limit(magnitude: float, dtype: str) -> float:
    """A clip limit not above `magnitude` that every dtype holds exactly: an integer, or
    a power of two below 1."""
    if magnitude >= 1.0 or not is_float(dtype):
        return float(math.floor(magnitude))
    return 2.0 ** math.floor(math.log2(magnitude))


def _number(value: float, dtype: str) -> str:
    return repr(float(value)) if is_float(dtype) else str(int(value))
