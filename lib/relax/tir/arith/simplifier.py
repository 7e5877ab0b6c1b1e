"""The expression simplifier: bottom-up rewriting with linear forms and bounds.

    i * 128 + j - j + 0          ->  i * 128
    floordiv(i * 128 + j, 128)   ->  i            (when 0 <= j < 128)
    floormod(i * 128 + j, 128)   ->  j            (when 0 <= j < 128)
    floordiv(i, 4) * 4 + floormod(i, 4)  ->  i
    min(i, 200)                  ->  i            (when i < 200)
    select(1 < 2, a, b)          ->  a

`ExprSimplifier(env, ranges)` knows the intervals of variables in `env` (Var ->
Interval) and their symbolic ranges in `ranges` (Var -> (min, max) expressions, so
`i < n` is true inside `for i in range(n)`); the statement-level pass fills both
from loop extents. See arith/__init__.py for
what is assumed about overflow and what is done to floats (almost nothing).
"""

from __future__ import annotations

import math
from functools import reduce

from ...ir import dtype as dt
from ...ir import tir
from .. import semantics
from ..rewrite import Rewriter
from .bounds import Interval, bound
from .linear import Linear, expr_key, from_expr, to_expr


def _is_scalar_int(expr) -> bool:
    kind, _, lanes = dt.parse(expr.dtype)
    return lanes == 1 and kind in ("int", "uint")


def _int_const(expr):
    return expr.value if isinstance(expr, tir.IntImm) and dt.lanes(expr.dtype) == 1 else None


def _bool(value: bool) -> tir.IntImm:
    return tir.IntImm("bool", int(bool(value)))


def _fold(node):
    """The constant value of a binary node on two constants, or None."""
    a, b = node.a, node.b
    if isinstance(a, tir.IntImm) and isinstance(b, tir.IntImm):
        if isinstance(node, (tir.Div, tir.Mod, tir.FloorDiv, tir.FloorMod)) and b.value == 0:
            return None
        value = semantics.binary(type(node).__name__, a.value, b.value, a.dtype)
    elif isinstance(a, tir.FloatImm) and isinstance(b, tir.FloatImm):
        with _quiet():
            value = semantics.binary(type(node).__name__, semantics.wrap(a.value, a.dtype),
                                     semantics.wrap(b.value, b.dtype), a.dtype)
    else:
        return None
    if isinstance(node, tir.CompareOp):
        return _bool(value)
    if dt.is_float(node.dtype):
        return tir.FloatImm(node.dtype, float(value))
    return tir.IntImm(node.dtype, int(value))


def _quiet():
    import numpy as np

    return np.errstate(all="ignore")


def _is_float_const(expr, value: float, sign: int | None = None) -> bool:
    if not isinstance(expr, tir.FloatImm) or expr.value != value:
        return False
    return sign is None or math.copysign(1.0, expr.value) == sign


class ExprSimplifier(Rewriter):
    """Simplifies expressions; `env` maps variables to their Interval."""

    def __init__(self, env: dict | None = None, ranges: dict | None = None):
        self.env = env if env is not None else {}
        self.ranges = ranges if ranges is not None else {}

    def difference_bound(self, a, b) -> Interval:
        """An interval of `a - b`, using symbolic loop ranges (`i <= n - 1`) too."""
        diff = from_expr(a).plus(from_expr(b), -1)
        lo, hi = bound(to_expr(diff), self.env)
        if self.ranges:
            upper, lower = self._extreme(diff, upper=True), self._extreme(diff, upper=False)
            hi = upper if hi is None else (hi if upper is None else min(hi, upper))
            lo = lower if lo is None else (lo if lower is None else max(lo, lower))
        return Interval(lo, hi)

    def _extreme(self, diff: Linear, upper: bool):
        """Bound of `diff` after putting each ranged variable at its worst end."""
        result = Linear(diff.dtype, const=diff.const)
        for atom, coeff in diff.nonzero():
            ends = self.ranges.get(atom) if isinstance(atom, tir.Var) else None
            end = None if ends is None else ends[1] if (coeff > 0) == upper else ends[0]
            if end is None:
                result.add_term(atom, coeff)
            else:
                result = result.plus(from_expr(end), coeff)
        interval = bound(to_expr(result), self.env)
        return interval.hi if upper else interval.lo

    def __call__(self, expr):
        return self.visit(expr)

    # -- + - * --------------------------------------------------------------------------
    def _arith(self, node):
        if _is_scalar_int(node):
            return to_expr(from_expr(self._chain(node, True)))
        node = self.generic_visit(node)
        folded = _fold(node)
        if folded is not None:
            return folded
        if dt.is_float(node.dtype):
            return self._float_identity(node)
        return node

    def _chain(self, node, scalar_int: bool = False):
        """An integer + - * expression with its operands outside the chain simplified, the
        chain itself left for one linear form at its root (not one per node on the way up).
        `scalar_int`: node's dtype is known to be a scalar integer's (a binary node's dtype is
        its left operand's, read down the left spine each time)."""
        if not (isinstance(node, (tir.Add, tir.Sub, tir.Mul)) and (scalar_int or _is_scalar_int(node))):
            return self.visit(node)
        a, b = self._chain(node.a, True), self._chain(node.b)
        if isinstance(node, tir.Mul) and not isinstance(a, tir.IntImm) and not isinstance(b, tir.IntImm):
            linear_a, linear_b = from_expr(a), from_expr(b)
            if not (linear_a.is_const or linear_b.is_const):  # a product of two: an atom of canonical operands
                a, b = to_expr(linear_a), to_expr(linear_b)
        return node if a is node.a and b is node.b else type(node)(a, b)

    visit_Add = visit_Sub = visit_Mul = _arith

    def _float_identity(self, node):
        a, b = node.a, node.b
        if isinstance(node, tir.Mul) and _is_float_const(b, 1.0):
            return a
        if isinstance(node, tir.Mul) and _is_float_const(a, 1.0):
            return b
        if isinstance(node, tir.Sub) and _is_float_const(b, 0.0, sign=1):
            return a
        if isinstance(node, tir.Add) and _is_float_const(b, 0.0, sign=-1):
            return a
        if isinstance(node, tir.Div) and _is_float_const(b, 1.0):
            return a
        return node

    # -- division -----------------------------------------------------------------------
    def _division(self, node):
        node = self.generic_visit(node)
        folded = _fold(node)
        if folded is not None:
            return folded
        d = _int_const(node.b)
        if not _is_scalar_int(node) or d is None or d <= 0:
            return self._float_identity(node) if dt.is_float(node.dtype) else node
        truncating = isinstance(node, (tir.Div, tir.Mod))
        if truncating and (bound(node.a, self.env).lo is None or bound(node.a, self.env).lo < 0):
            return node
        if isinstance(node, (tir.FloorDiv, tir.Div)):
            return self._floordiv(from_expr(node.a), d)
        return self._floormod(from_expr(node.a), d)

    visit_Div = visit_Mod = visit_FloorDiv = visit_FloorMod = _division

    def _floordiv(self, linear: Linear, d: int):
        dtype = linear.dtype
        linear, d = _divide_common_factor(linear, d)
        if d == 1:
            return to_expr(linear)
        quotient, rest = Linear(dtype), Linear(dtype)
        for atom, coeff in linear.nonzero():
            (quotient.add_term(atom, coeff // d) if coeff % d == 0 else rest.add_term(atom, coeff))
        quotient.const, rest.const = linear.const // d, linear.const % d
        rest_expr = to_expr(rest)
        interval = bound(rest_expr, self.env)
        if interval.lo is not None and interval.hi is not None and interval.lo // d == interval.hi // d:
            quotient.const += interval.lo // d
            return to_expr(quotient)
        quotient.add_term(_make_floordiv(rest_expr, d), 1)
        return to_expr(quotient)

    def _floormod(self, linear: Linear, d: int):
        dtype = linear.dtype
        reduced, factor_d = _divide_common_factor(linear, d)
        factor = d // factor_d
        rest = Linear(dtype)
        for atom, coeff in reduced.nonzero():
            # Terms divisible by d vanish; the others stay whole (not reduced modulo d)
            # so that floordiv(x, d) * d + floormod(x, d) can still be recognized as x.
            if coeff % factor_d:
                rest.add_term(atom, coeff)
        rest.const = reduced.const % factor_d
        if factor_d == 1:
            return tir.IntImm(dtype, 0)
        rest_expr = to_expr(rest)
        interval = bound(rest_expr, self.env)
        if interval.lo is not None and interval.hi is not None and interval.lo // factor_d == interval.hi // factor_d:
            rest.const -= (interval.lo // factor_d) * factor_d
            result = to_expr(rest)
        else:
            result = _make_floormod(rest_expr, factor_d)
        return result if factor == 1 else to_expr(from_expr(result).scaled(factor))

    # -- min / max ------------------------------------------------------------------------
    def _min_max(self, node):
        node = self.generic_visit(node)
        folded = _fold(node)
        if folded is not None:
            return folded
        if not _is_scalar_int(node):
            return node
        if expr_key(node.a) == expr_key(node.b):
            return node.a
        interval = self.difference_bound(node.a, node.b)
        a_smaller = interval.hi is not None and interval.hi <= 0
        b_smaller = interval.lo is not None and interval.lo >= 0
        if isinstance(node, tir.Min):
            return node.a if a_smaller else node.b if b_smaller else node
        return node.b if a_smaller else node.a if b_smaller else node

    visit_Min = visit_Max = _min_max

    # -- comparisons and logic ---------------------------------------------------------------
    def _compare(self, node):
        node = self.generic_visit(node)
        folded = _fold(node)
        if folded is not None:
            return folded
        if not _is_scalar_int(node.a) or node.a.dtype != node.b.dtype:
            return node
        interval = self.difference_bound(node.a, node.b)
        decided = _decide(type(node).__name__, interval.lo, interval.hi)
        return node if decided is None else _bool(decided)

    visit_EQ = visit_NE = visit_LT = visit_LE = visit_GT = visit_GE = _compare

    def visit_And(self, node):
        node = self.generic_visit(node)
        a, b = _int_const(node.a), _int_const(node.b)
        if a == 0 or b == 0:
            return _bool(False)
        if a is not None:
            return node.b
        if b is not None:
            return node.a
        return node

    def visit_Or(self, node):
        node = self.generic_visit(node)
        a, b = _int_const(node.a), _int_const(node.b)
        if (a is not None and a != 0) or (b is not None and b != 0):
            return _bool(True)
        if a is not None:
            return node.b
        if b is not None:
            return node.a
        return node

    def visit_Not(self, node):
        node = self.generic_visit(node)
        value = _int_const(node.a)
        if value is not None:
            return _bool(not value)
        if isinstance(node.a, tir.Not):
            return node.a.a
        return node

    def visit_Select(self, node):
        node = self.generic_visit(node)
        condition = _int_const(node.condition)
        if condition is not None:
            return node.true_value if condition else node.false_value
        if expr_key(node.true_value) == expr_key(node.false_value):
            return node.true_value
        return node

    def visit_Call(self, node):
        node = self.generic_visit(node)
        if node.op == "tir.if_then_else":
            condition = _int_const(node.args[0])
            if condition is not None:
                return node.args[1] if condition else node.args[2]
        return node

    def visit_Cast(self, node):
        node = self.generic_visit(node)
        if node.value.dtype == node.dtype:
            return node.value
        if isinstance(node.value, (tir.IntImm, tir.FloatImm)) and dt.lanes(node.dtype) == 1:
            value = semantics.cast(semantics.wrap(node.value.value, node.value.dtype), node.dtype)
            if dt.is_float(node.dtype):
                return tir.FloatImm(node.dtype, float(value))
            return tir.IntImm(node.dtype, int(value))
        return node


def _only_zero(lo, hi) -> bool:
    return lo is not None and lo == hi == 0


def _excludes_zero(lo, hi) -> bool:
    return (lo is not None and lo > 0) or (hi is not None and hi < 0)


# For `diff OP 0` with diff in [lo, hi] (None: unbounded): (always holds, never holds).
_DECISIONS = {
    "LT": (lambda lo, hi: hi is not None and hi < 0, lambda lo, hi: lo is not None and lo >= 0),
    "LE": (lambda lo, hi: hi is not None and hi <= 0, lambda lo, hi: lo is not None and lo > 0),
    "GT": (lambda lo, hi: lo is not None and lo > 0, lambda lo, hi: hi is not None and hi <= 0),
    "GE": (lambda lo, hi: lo is not None and lo >= 0, lambda lo, hi: hi is not None and hi < 0),
    "EQ": (_only_zero, _excludes_zero),
    "NE": (_excludes_zero, _only_zero),
}


def _decide(op: str, lo, hi):
    """The truth of `diff OP 0` for diff in [lo, hi], or None when undecided."""
    always, never = _DECISIONS[op]
    return True if always(lo, hi) else False if never(lo, hi) else None


def _divide_common_factor(linear: Linear, d: int) -> tuple[Linear, int]:
    """floordiv(g*L, g*d) = floordiv(L, d): divides out the gcd of d, coefficients, constant."""
    g = reduce(math.gcd, [coeff for _, coeff in linear.nonzero()] + [linear.const], d)
    if g <= 1:
        return linear, d
    result = Linear(linear.dtype, const=linear.const // g)
    for atom, coeff in linear.nonzero():
        result.add_term(atom, coeff // g)
    return result, d // g


def _make_floordiv(x, d: int):
    """floordiv(floordiv(y, c), d) = floordiv(y, c * d) for positive c and d."""
    inner = _int_const(x.b) if isinstance(x, tir.FloorDiv) else None
    if inner is not None and inner > 0:
        return tir.FloorDiv(x.a, tir.IntImm(x.dtype, inner * d))
    return tir.FloorDiv(x, tir.IntImm(x.dtype, d))


def _make_floormod(x, d: int):
    """floormod(floormod(y, c), d) = floormod(y, d) when d divides c."""
    inner = _int_const(x.b) if isinstance(x, tir.FloorMod) else None
    if inner is not None and inner > 0 and inner % d == 0:
        return tir.FloorMod(x.a, tir.IntImm(x.dtype, d))
    return tir.FloorMod(x, tir.IntImm(x.dtype, d))


def simplify_expr(expr, env: dict | None = None, ranges: dict | None = None):
    """`expr` simplified, knowing variable intervals (`env`: Var -> Interval) and
    symbolic ranges (`ranges`: Var -> (min expr or None, max expr or None))."""
    return ExprSimplifier(env, ranges).visit(expr)
