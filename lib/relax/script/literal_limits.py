"""What a literal in the source may spell, checked where the parser reads it.

    T.int32(2**40)          error: integer 1099511627776 does not fit in int32 (-2147483648 to 2147483647)
    for i in range(10**26)  error: integer 100000000000000000000000000 does not fit in int64 (...)
    T.int64(10**10**9)      error: the power 10 ** 1000000000 is too large (literals are limited to 4096 bits)
    R.const(1e39, "float32") error: 1e+39 does not fit in float32 (largest finite value 3.4028234663852886e+38)
    T.float32(1e999)        error: the float literal does not fit in float64 (...); Python reads it as inf
    R.Tensor((1, 1, ...))   error: a shape of 100000 dimensions: tensors have at most 64 dimensions (...)

TVM's IntImm refuses a value its type cannot hold; kept, such a constant would wrap
in the generated code and the program would compute something else than written.
Python arithmetic on literals (`10**26`) is bounded so that a short text cannot
make the parser build an enormous number. A tensor has at most MAX_RANK
dimensions: the runtime holds tensors as numpy arrays, and numpy allows no more.
"""

from __future__ import annotations

import math
import sys

from ..ir import dtype as dt

# numpy's limit on the dimensions of an array (numpy.ndarray's NPY_MAXDIMS).
MAX_RANK = 64
# Python arithmetic on literals stops at numbers of this many bits: no type is wider
# than 64, and a bigger intermediate value is no program's intent.
MAX_LITERAL_BITS = 4096


class LiteralError(ValueError):
    """A literal its type cannot hold, or arithmetic on literals that is too large;
    the parser reports it at the expression being read."""


def require_fits(ctx, node, value, dtype: str) -> None:
    """check_literal, the error recorded at `node` (ctx: the ParseContext)."""
    try:
        check_literal(value, dtype)
    except LiteralError as error:
        raise ctx.fail(str(error), node) from None


def int_range(dtype: str) -> tuple[int, int]:
    """The smallest and largest value of a scalar integer dtype."""
    kind, bits, _ = dt.parse(dtype)
    if kind == "uint":
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def describe_int(value: int) -> str:
    # str() of a very long int is refused by Python (sys.set_int_max_str_digits).
    if value.bit_length() <= 256:
        return str(value)
    return f"of {value.bit_length()} bits"


def check_literal(value, dtype: str) -> None:
    """Raises LiteralError if the Python number `value` does not fit in `dtype`
    (the element type of a vector type): integers out of range, finite floats that
    would become infinite."""
    if isinstance(value, bool) or dtype in ("void", "handle") or not dt.is_valid(dtype):
        return
    scalar = dt.element(dtype)
    if isinstance(value, float) and (dt.is_int(scalar) or dt.is_uint(scalar)):
        if not math.isfinite(value):
            raise LiteralError(f"{value!r} has no {scalar} value")
        value = int(value)
    if isinstance(value, int) and (dt.is_int(scalar) or dt.is_uint(scalar)):
        low, high = int_range(scalar)
        if not low <= value <= high:
            raise LiteralError(f"integer {describe_int(value)} does not fit in {scalar} ({low} to {high})")
    elif dt.is_float(scalar):
        if isinstance(value, int):
            if value.bit_length() > 1024:
                raise LiteralError(f"integer {describe_int(value)} does not fit in {scalar}")
            value = float(value)
        _check_float(value, scalar)


def _check_float(value: float, scalar: str) -> None:
    if scalar not in ("float16", "float32") or not math.isfinite(value):
        return
    import numpy as np

    with np.errstate(over="ignore"):
        rounded = (np.float16 if scalar == "float16" else np.float32)(value)
    if not np.isfinite(rounded):
        largest = float(np.finfo(scalar).max)
        raise LiteralError(f"{value!r} does not fit in {scalar} (largest finite value {largest!r})")


def check_float_text(value) -> None:
    """LiteralError for a float literal of the text that Python read as infinity: it
    spells more than float64 holds (1e999, a thousand digits). Infinity has spellings of
    its own (float("inf"), T.float32("inf")); this one would become it silently."""
    if isinstance(value, float) and math.isinf(value):
        raise LiteralError(f"the float literal does not fit in float64 (largest finite value {sys.float_info.max!r});"
                           " Python reads it as inf")


def check_constant(value, array) -> None:
    """LiteralError when the numbers of `R.const(value, ...)` (a number or nested lists)
    did not all fit in the type of the array made of them: numpy makes an int of 64 bits
    and more an object, casts an int to int32 (the default of a scalar) by wrapping, and a
    finite float beyond float32 to inf."""
    import numpy as np

    if array.dtype == object:
        raise LiteralError(f"integer {describe_int(_first_large_int(value))} does not fit in int64"
                           f" ({-(2**63)} to {2**63 - 1})")
    if array.dtype.kind in "iu" and array.ndim == 0 and isinstance(value, int):
        check_literal(value, str(array.dtype))
    elif array.dtype.kind == "f" and array.size:
        source = np.asarray(value, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            overflowed = np.isinf(array) & np.isfinite(source)
        if overflowed.any():
            check_literal(float(source[overflowed].flat[0]), str(array.dtype))


def _first_large_int(value) -> int:
    stack = [iter([value])]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif isinstance(item, list):
            stack.append(iter(item))
        elif isinstance(item, int) and not -(2**63) <= item < 2**63:
            return item
    return 0


def power(base, exponent):
    """`base ** exponent` on two Python numbers, refused when the result is enormous."""
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if exponent * (abs(base).bit_length() - 1) > MAX_LITERAL_BITS:
            raise LiteralError(f"the power {describe_int(base)} ** {describe_int(exponent)} is too large"
                               f" (literals are limited to {MAX_LITERAL_BITS} bits)")
    try:
        result = base**exponent
    except OverflowError:
        raise LiteralError(f"the power {_describe(base)} ** {_describe(exponent)} is too large") from None
    except ZeroDivisionError:
        raise LiteralError(f"the power {_describe(base)} ** {_describe(exponent)} divides by zero") from None
    if isinstance(result, complex):
        raise LiteralError(f"{_describe(base)} ** {_describe(exponent)} is not a real number")
    return result


def _describe(value) -> str:
    text = describe_int(value) if isinstance(value, int) else repr(value)
    return f"({text})" if text.startswith("-") else text


def shift_left(value: int, amount: int) -> int:
    """`value << amount` on two Python ints, refused when the result is enormous."""
    if amount < 0:
        raise LiteralError(f"negative shift count {describe_int(amount)}")
    if value and amount > 0 and value.bit_length() + amount > MAX_LITERAL_BITS:
        raise LiteralError(f"the shift {describe_int(value)} << {describe_int(amount)} is too large"
                           f" (literals are limited to {MAX_LITERAL_BITS} bits)")
    return value << amount


def shift_right(value: int, amount: int) -> int:
    if amount < 0:
        raise LiteralError(f"negative shift count {describe_int(amount)}")
    return value >> amount


def rank_error(count: int, subject: str | None = None) -> str | None:
    """The message for a shape of `count` dimensions (`subject` says what had them),
    None when it is within MAX_RANK."""
    if count <= MAX_RANK:
        return None
    subject = subject or f"a shape of {count} dimensions"
    return (f"{subject}: tensors have at most {MAX_RANK} dimensions"
            f" (the limit of the numpy arrays the runtime holds them in)")

