"""Generator rules for elementwise operators: unary math, binary arithmetic with
broadcasting, comparisons, where and astype.

Each operator is a table row: its TVMScript call, its numpy meaning, the bound of its
result (interval and error, error_bounds.py), and the guard that makes any operand
valid for it (gen_common.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import gen_common as common
from error_bounds import (MATH_ULPS, MAX_MAGNITUDE, Bound, computed, hull, is_float, product_error, product_range,
                          rounding)
from gen_common import DTYPES, NUMERIC_DTYPES, Operand

# exp of more than this would leave the dtype's range a few operations later.
EXP_LIMIT = {"float32": 8.0, "float16": 4.0}


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # 1 / (1 + exp(-x)), without overflow for very negative x


def _silu(x):
    return x * _sigmoid(x)


@dataclass(frozen=True)
class Unary:
    """`call(x)` computing `numpy(x)`; `bound` maps the operand's bound to the result's."""

    call: str
    numpy: Callable
    bound: Callable[[Bound, str], Bound]
    guard: Callable = lambda builder, x: x
    kinds: tuple[str, ...] = ("float",)
    exact_only: bool = False  # discontinuous: only on exact operands, where no rounding can flip it
    attrs: str = ""  # spelled after the operand: ", alpha=0.125"


def _monotone(function, lipschitz: float, ulps: float = MATH_ULPS):
    """The bound of an increasing function with this Lipschitz constant."""

    def bound(x: Bound, dtype: str) -> Bound:
        lo, hi = float(function(np.float64(x.lo))), float(function(np.float64(x.hi)))
        return computed(dtype, lo, hi, lipschitz * x.err, ulps)

    return bound


def _dipping(function, lipschitz: float, turn: float, lowest: float):
    """The bound of a function that falls to `lowest` at `turn`, then rises (gelu, silu)."""

    def bound(x: Bound, dtype: str) -> Bound:
        ends = [float(function(np.float64(x.lo))), float(function(np.float64(x.hi)))]
        lo = lowest if x.lo <= turn <= x.hi else min(ends)
        return computed(dtype, lo, max(ends), lipschitz * x.err, MATH_ULPS)

    return bound


def _exact(function):
    """The bound of an exact operation that maps intervals through `function` (relu, negative)."""

    def bound(x: Bound, dtype: str) -> Bound:
        lo, hi = hull(function(x.lo), function(x.hi))
        return Bound(lo, hi, x.err)

    return bound


def _leaky_bound(x: Bound, dtype: str) -> Bound:
    # alpha = 1/8 is a power of two: alpha * x rounds only below the normal range (ulps=0
    # charges just that absolute floor).
    lo, hi = hull(x.lo if x.lo > 0 else 0.125 * x.lo, x.hi if x.hi > 0 else 0.125 * x.hi)
    return computed(dtype, lo, hi, x.err, 0)


def _abs_bound(x: Bound, dtype: str) -> Bound:
    low = 0.0 if x.contains_zero() else min(abs(x.lo), abs(x.hi))
    return Bound(low, x.magnitude, x.err)


def _exp_bound(x: Bound, dtype: str) -> Bound:
    lo, hi = math.exp(x.lo), math.exp(x.hi)
    return computed(dtype, lo, hi, hi * math.expm1(min(x.err, 60.0)), MATH_ULPS)


def _sqrt_bound(x: Bound, dtype: str) -> Bound:
    # |sqrt(a) - sqrt(b)| <= sqrt(|a - b|) everywhere, and <= |a - b| / (2 sqrt(lo)) away from 0.
    carried = math.sqrt(x.err)
    if x.lo > x.err:
        carried = min(carried, x.err / (2.0 * math.sqrt(x.lo - x.err)))
    return computed(dtype, math.sqrt(x.lo), math.sqrt(x.hi), carried, MATH_ULPS)


def _log_bound(x: Bound, dtype: str) -> Bound:
    bound = computed(dtype, math.log(x.lo), math.log(x.hi), x.err / (x.lo - x.err), MATH_ULPS)
    # libm's log is accurate relative to its result, which is near 0 near x = 1.
    return Bound(bound.lo, bound.hi, bound.err + rounding(dtype, 1.0, MATH_ULPS))


def _square_bound(x: Bound, dtype: str) -> Bound:
    low = 0.0 if x.contains_zero() else min(abs(x.lo), abs(x.hi)) ** 2
    return computed(dtype, low, x.magnitude**2, 2 * x.magnitude * x.err + x.err**2)


def _periodic_bound(x: Bound, dtype: str) -> Bound:
    return computed(dtype, -1.0, 1.0, x.err, MATH_ULPS)


def _step_bound(function):
    def bound(x: Bound, dtype: str) -> Bound:
        return Bound(float(function(x.lo)), float(function(x.hi)))

    return bound


def _below(magnitude_of_dtype):
    """A guard clipping the operand to a magnitude that depends on the dtype."""
    return lambda builder, x: common.limit(builder, x, magnitude_of_dtype(x.dtype))


def _exp_guard(builder, x):
    if x.bound.hi <= EXP_LIMIT[x.dtype]:
        return x
    return common.clip(builder, x, -EXP_LIMIT[x.dtype], EXP_LIMIT[x.dtype])


UNARY_OPS: tuple[Unary, ...] = (
    Unary("R.nn.relu", lambda x: np.maximum(x, 0), _exact(lambda v: max(v, 0.0)), kinds=("float", "int")),
    Unary("R.negative", np.negative, _exact(lambda v: -v), kinds=("float", "int")),
    Unary("R.abs", np.abs, _abs_bound, kinds=("float", "int")),
    Unary("R.tanh", np.tanh, _monotone(np.tanh, 1.0)),
    Unary("R.sigmoid", _sigmoid, _monotone(_sigmoid, 0.25)),
    Unary("R.exp", np.exp, _exp_bound, _exp_guard),
    Unary("R.sqrt", np.sqrt, _sqrt_bound, common.nonnegative),
    Unary("R.square", np.square, _square_bound, _below(lambda d: math.sqrt(MAX_MAGNITUDE[d])),
          kinds=("float", "int")),
    Unary("R.log", np.log, _log_bound, lambda builder, x: common.at_least(builder, x, 0.5)),
    Unary("R.sin", np.sin, _periodic_bound, _below(lambda d: 64.0)),
    Unary("R.cos", np.cos, _periodic_bound, _below(lambda d: 64.0)),
    Unary("R.nn.relu6", lambda x: np.clip(x, 0, 6), _exact(lambda v: min(max(v, 0.0), 6.0)), kinds=("float", "int")),
    Unary("R.nn.leakyrelu", lambda x: np.where(x > 0, x, 0.125 * x), _leaky_bound, attrs=", alpha=0.125"),
    Unary("R.nn.gelu", _gelu, _dipping(_gelu, 1.13, -0.7518, -0.17)),
    Unary("R.nn.silu", _silu, _dipping(_silu, 1.1, -1.2785, -0.2785)),
    Unary("R.floor", np.floor, _step_bound(math.floor), exact_only=True),
    Unary("R.ceil", np.ceil, _step_bound(math.ceil), exact_only=True),
    Unary("R.sign", np.sign, _step_bound(np.sign), kinds=("float", "int"), exact_only=True),
    Unary("R.logical_not", np.logical_not, lambda x, dtype: Bound(0, 1), kinds=("bool",)),
)


def _applies(op: Unary, value) -> bool:
    return value.kind in op.kinds and (value.bound.exact or not op.exact_only)


def unary(builder) -> None:
    """An elementwise unary operator on any value (floats mostly)."""
    x = builder.operand(lambda v: True, builder.shape, DTYPES)
    op = builder.draw(st.sampled_from([op for op in UNARY_OPS if _applies(op, x)]))
    x = op.guard(builder, x)
    builder.emit(f"{op.call}({x.name}{op.attrs})", x.shape, x.dtype, op.bound(x.bound, x.dtype), (x,), op.numpy)


# -- binary ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Binary:
    call: str
    numpy: Callable
    bound: Callable[[Bound, Bound, str], Bound]
    kinds: tuple[str, ...]
    guard: Callable | None = None  # (builder, lhs Value, rhs Operand) -> valid (lhs, rhs)
    divides: bool = False  # rhs is a divisor: kept on the right, positive


def _add_bound(a: Bound, b: Bound, dtype: str) -> Bound:
    return computed(dtype, a.lo + b.lo, a.hi + b.hi, a.err + b.err)


def _subtract_bound(a: Bound, b: Bound, dtype: str) -> Bound:
    return computed(dtype, a.lo - b.hi, a.hi - b.lo, a.err + b.err)


def _multiply_bound(a: Bound, b: Bound, dtype: str) -> Bound:
    return computed(dtype, *product_range(a, b), product_error(a, b))


def _extreme_bound(pick):
    def bound(a: Bound, b: Bound, dtype: str) -> Bound:
        return Bound(pick(a.lo, b.lo), pick(a.hi, b.hi), max(a.err, b.err))

    return bound


def _divide_bound(a: Bound, b: Bound, dtype: str) -> Bound:
    # b > b.err > 0 (the guard): a / b moves by a.err / b + |a| b.err / (b (b - b.err)).
    low = b.lo - b.err
    lo, hi = hull(a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi)
    return computed(dtype, lo, hi, a.err / low + a.magnitude * b.err / (b.lo * low))


def _floor_divide_bound(a: Bound, b: Bound, dtype: str) -> Bound:
    lo, hi = hull(a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi)
    return Bound(math.floor(lo), math.floor(hi))


def _floor_mod_bound(a: Bound, b: Bound, dtype: str) -> Bound:
    return Bound(0, b.hi - 1)


def _bitwise_bound(a: Bound, b: Bound, dtype: str) -> Bound:
    # Two's complement results stay within the smallest power of two holding both operands.
    power = 2 ** math.ceil(math.log2(max(a.magnitude, b.magnitude, 1) + 1))
    return Bound(-power, power - 1)


def _limit_operand(builder, operand: Operand, magnitude: float) -> Operand:
    if operand.value is None:
        return operand
    return common.of_value(common.limit(builder, operand.value, magnitude))


def _magnitude_guard(share_of_dtype: Callable[[str], float]):
    """Clips both operands so that the result fits the dtype (sums: half each; products: the root)."""

    def guard(builder, a, b: Operand):
        magnitude = share_of_dtype(a.dtype)
        return common.limit(builder, a, magnitude), _limit_operand(builder, b, magnitude)

    return guard


def _divisor_guard(low: float):
    def guard(builder, a, b: Operand):
        if b.value is None:
            return a, b
        return a, common.of_value(common.at_least(builder, b.value, low))

    return guard


_SUMS = _magnitude_guard(lambda dtype: MAX_MAGNITUDE[dtype] / 2)
_PRODUCTS = _magnitude_guard(lambda dtype: math.sqrt(MAX_MAGNITUDE[dtype]))

BINARY_OPS: tuple[Binary, ...] = (
    Binary("R.add", np.add, _add_bound, ("float", "int"), _SUMS),
    Binary("R.subtract", np.subtract, _subtract_bound, ("float", "int"), _SUMS),
    Binary("R.multiply", np.multiply, _multiply_bound, ("float", "int"), _PRODUCTS),
    Binary("R.maximum", np.maximum, _extreme_bound(max), ("float", "int")),
    Binary("R.minimum", np.minimum, _extreme_bound(min), ("float", "int")),
    Binary("R.divide", np.divide, _divide_bound, ("float",), _divisor_guard(0.5), divides=True),
    Binary("R.floor_divide", np.floor_divide, _floor_divide_bound, ("int",), _divisor_guard(1), divides=True),
    Binary("R.floor_mod", np.mod, _floor_mod_bound, ("int",), _divisor_guard(1), divides=True),
    Binary("R.bitwise_and", np.bitwise_and, _bitwise_bound, ("int",)),
    Binary("R.bitwise_xor", np.bitwise_xor, _bitwise_bound, ("int",)),
    Binary("R.logical_and", np.logical_and, lambda a, b, d: Bound(0, 1), ("bool",)),
    Binary("R.logical_or", np.logical_or, lambda a, b, d: Bound(0, 1), ("bool",)),
    Binary("R.logical_xor", np.logical_xor, lambda a, b, d: Bound(0, 1), ("bool",)),
)


def _constant(builder, a, positive: bool) -> Operand:
    """A scalar constant operand: small, and a valid divisor when `positive`."""
    if a.kind == "int":
        low = 1 if positive else int(a.bound.lo)
        number = builder.draw(st.integers(low, max(low, int(a.bound.hi), 3)))
    else:
        number = builder.draw(st.sampled_from((0.5, 2.0, 1.0, 3.0) if positive else (0.5, 1.0, -1.5, 2.0, 0.0)))
    return common.of_constant(number, a.dtype)


def partner(builder, a, accept=lambda v: True, positive: bool = False) -> Operand:
    """The second operand of a broadcasting call with `a`: an existing value, a new
    input of a shape that broadcasts, or a scalar constant (`positive`: for a divisor)."""
    source = builder.draw(st.sampled_from(("value", "value", "constant")))
    if source == "constant" and a.dtype != "bool":
        return _constant(builder, a, positive)
    b = builder.operand(lambda v: v.dtype == a.dtype and common.broadcasts_with(a.shape)(v) and accept(v),
                        lambda: common.broadcast_partner_shape(builder, a.shape), (a.dtype,))
    return common.of_value(b)


def binary(builder) -> None:
    """A broadcasting binary operator; operands in either order but for a divisor."""
    a = builder.operand(lambda v: True, builder.shape, DTYPES)
    op = builder.draw(st.sampled_from([op for op in BINARY_OPS if a.kind in op.kinds]))
    b = partner(builder, a, positive=op.divides)
    if op.guard is not None:
        a, b = op.guard(builder, a, b)
    operands = (common.of_value(a), b)
    if not op.divides and builder.draw(st.booleans()):
        operands = operands[::-1]
    lhs, rhs = operands
    shape = common.broadcast_shape(lhs.shape, rhs.shape)
    common.emit_call(builder, f"{op.call}({lhs.text}, {rhs.text})", operands, shape, a.dtype,
                     op.bound(lhs.bound, rhs.bound, a.dtype), op.numpy)


# -- comparisons, where, astype --------------------------------------------------------
COMPARISONS = (("R.equal", np.equal), ("R.not_equal", np.not_equal), ("R.less", np.less),
               ("R.less_equal", np.less_equal), ("R.greater", np.greater), ("R.greater_equal", np.greater_equal))


def compare(builder) -> None:
    """A comparison of exact values (a rounding difference would flip it), giving bool."""
    a = builder.operand(lambda v: v.bound.exact and v.kind != "bool", builder.shape, NUMERIC_DTYPES)
    call, function = builder.draw(st.sampled_from(COMPARISONS))
    b = partner(builder, a, lambda v: v.bound.exact)
    shape = common.broadcast_shape(a.shape, b.shape)
    common.emit_call(builder, f"{call}({a.name}, {b.text})", (common.of_value(a), b), shape, "bool",
                     Bound(0, 1), function)


def where(builder) -> None:
    """`R.where(condition, x, y)`, all three broadcasting."""
    x = builder.operand(lambda v: True, builder.shape)
    y = partner(builder, x)
    shape = common.broadcast_shape(x.shape, y.shape)
    condition = builder.operand(lambda v: v.dtype == "bool" and common.broadcasts_with(shape)(v),
                                lambda: common.broadcast_partner_shape(builder, shape), ("bool",))
    shape = common.broadcast_shape(shape, condition.shape)
    bound = Bound(min(x.bound.lo, y.bound.lo), max(x.bound.hi, y.bound.hi), max(x.bound.err, y.bound.err))
    operands = (common.of_value(condition), common.of_value(x), y)
    common.emit_call(builder, f"R.where({condition.name}, {x.name}, {y.text})", operands, shape, x.dtype,
                     bound, np.where)


def _cast_bound(x, dtype: str) -> Bound | None:
    """The bound of `x` cast to `dtype`, or None when the cast is not well defined here."""
    if dtype == x.dtype or (dtype != "bool" and x.bound.magnitude > MAX_MAGNITUDE[dtype]):
        return None
    if is_float(dtype):
        widening = x.dtype == "float16" and dtype == "float32"
        small_integers = not is_float(x.dtype) and x.bound.magnitude <= 2048  # exact in float16 too
        if widening or small_integers:
            return x.bound
        return computed(dtype, x.bound.lo, x.bound.hi, x.bound.err, 1)
    if not x.bound.exact:  # truncation and != 0 are discontinuous
        return None
    if dtype == "bool":
        return Bound(0, 1)
    return Bound(math.trunc(x.bound.lo), math.trunc(x.bound.hi))


def _cast_function(dtype: str):
    if dtype == "bool":
        return lambda a: a != 0
    if is_float(dtype):
        return lambda a: a
    return lambda a: np.trunc(a.astype(np.float64))


def astype(builder) -> None:
    """`R.astype` between float32, float16, int32 and bool, where the cast is continuous or exact."""
    x = builder.operand(lambda v: True, builder.shape)
    choices = [d for d in ("float32", "float16", "int32", "bool") if _cast_bound(x, d) is not None]
    if not choices:
        x = builder.new_input(x.shape, "int32")
        choices = ["float32", "float16", "bool"]
    dtype = builder.draw(st.sampled_from(choices))
    builder.emit(f'R.astype({x.name}, dtype="{dtype}")', x.shape, dtype, _cast_bound(x, dtype), (x,),
                 _cast_function(dtype))
