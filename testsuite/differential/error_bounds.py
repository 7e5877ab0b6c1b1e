"""Value ranges and rounding-error bounds of generated programs, one per tensor.

Every value of a generated program carries a `Bound`: an interval [lo, hi] that holds
every element of the exact (real-number) result, and `err`, a bound on how far any
computed element may be from that exact result. The generator reads the interval to
keep programs valid (no overflow, no sqrt of a negative, no division near zero) and
the oracles read `err` as the tolerance: a configuration's result must lie within
`err` of the float64 reference, and two configurations within `2 * err` of each other.

The bounds are worst-case, from the textbook error analysis of each operation (a sum
of n terms is off by at most (n - 1) u sum |x_i|, ...), with some slack for the
math library (libmvec is within 4 ulp). A worst-case bound never fails a correct
build; it only gets loose for deep chains of ill-conditioned operations.
`err == 0` means exact: such values may feed comparisons, argmax and floor, whose
results would otherwise flip on a rounding difference.
"""

from __future__ import annotations

from dataclasses import dataclass

# Unit roundoff per dtype: half the distance from 1.0 to the next value.
UNIT_ROUNDOFF = {"float32": 2.0**-24, "float16": 2.0**-11}
# Absolute error that no relative bound covers: a float16 result in the subnormal range
# (below 2**-14) keeps fewer bits; a kernel flushing it to zero is off by less than that.
ABSOLUTE_FLOOR = {"float32": 2.0**-126, "float16": 2.0**-14}
# Roundings charged per operation: basic arithmetic rounds once (twice with slack for
# an intermediate float32 step of a float16 operation); the math library is allowed more.
BASIC_ULPS = 2
MATH_ULPS = 16

# The largest magnitude a value may reach: far from overflow, so that any summation
# order and any intermediate of a kernel stays finite.
MAX_MAGNITUDE = {"float32": 1.0e5, "float16": 2.0e3, "int32": 2**24, "int64": 2**40, "bool": 1}
# An error bound this large says nothing; capping it keeps later arithmetic finite.
VACUOUS = 1.0e30


def is_float(dtype: str) -> bool:
    return dtype.startswith("float")


@dataclass(frozen=True)
class Bound:
    """Every element of a value lies in [lo, hi] exactly, and within `err` of that when computed."""

    lo: float
    hi: float
    err: float = 0.0

    def __post_init__(self):
        # A generator bug shows here rather than as a false alarm of the oracles.
        if not (self.lo <= self.hi and self.err >= 0.0):
            raise ValueError(f"malformed bound {self}")

    @property
    def magnitude(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    @property
    def exact(self) -> bool:
        return self.err == 0.0

    def contains_zero(self, margin: float = 0.0) -> bool:
        return self.lo - margin <= 0.0 <= self.hi + margin

    def fits(self, dtype: str) -> bool:
        return self.magnitude <= MAX_MAGNITUDE[dtype]


def rounding(dtype: str, magnitude: float, ulps: float = BASIC_ULPS) -> float:
    """The error of rounding results of this magnitude `ulps` times (0 for integers)."""
    if not is_float(dtype):
        return 0.0
    return ulps * UNIT_ROUNDOFF[dtype] * magnitude + ABSOLUTE_FLOOR[dtype]


def computed(dtype: str, lo: float, hi: float, propagated: float, ulps: float = BASIC_ULPS) -> Bound:
    """The bound of a result in [lo, hi]: the operands' error carried through the
    operation (`propagated`) plus the operation's own rounding."""
    magnitude = max(abs(lo), abs(hi))
    if not is_float(dtype):
        return Bound(lo, hi)
    return Bound(lo, hi, min(propagated + rounding(dtype, magnitude, ulps), VACUOUS))


def hull(*values: float) -> tuple[float, float]:
    return min(values), max(values)


def product_range(a: Bound, b: Bound) -> tuple[float, float]:
    return hull(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)


def product_error(a: Bound, b: Bound) -> float:
    """How far a * b moves when a and b are each off by their error."""
    return a.err * b.magnitude + b.err * a.magnitude + a.err * b.err
