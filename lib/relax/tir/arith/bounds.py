"""Interval bounds of integer expressions.

`bound(expr, env)` gives an Interval (lo, hi), either end None for unbounded,
from the intervals of variables in `env` (a dict Var -> Interval). Size variables
are at least 0. Anything that is not integer arithmetic the analysis understands is
unbounded. Used to prove `0 <= r < d` (so floordiv(r, d) is 0) and to decide
comparisons and min/max.
"""

from __future__ import annotations

from typing import NamedTuple

from ...ir import dtype as dt
from ...ir import tir


class Interval(NamedTuple):
    lo: int | None
    hi: int | None

    @property
    def is_const(self) -> bool:
        return self.lo is not None and self.lo == self.hi


UNBOUNDED = Interval(None, None)


def _add(a, b):
    return None if a is None or b is None else a + b


def _neg(a):
    return None if a is None else -a


def _scale(interval: Interval, factor: int) -> Interval:
    lo = None if interval.lo is None else interval.lo * factor
    hi = None if interval.hi is None else interval.hi * factor
    return Interval(lo, hi) if factor >= 0 else Interval(hi, lo)


def _floordiv(interval: Interval, d: int) -> Interval:
    return Interval(None if interval.lo is None else interval.lo // d,
                    None if interval.hi is None else interval.hi // d)


def _min_end(a, b, unbounded_wins: bool):
    if a is None or b is None:
        return None if unbounded_wins else (b if a is None else a)
    return min(a, b)


def _max_end(a, b, unbounded_wins: bool):
    if a is None or b is None:
        return None if unbounded_wins else (b if a is None else a)
    return max(a, b)


def _const(expr) -> int | None:
    return expr.value if isinstance(expr, tir.IntImm) else None


def bound(expr, env: dict) -> Interval:
    """The interval of the integer expression `expr`; UNBOUNDED when unknown."""
    if not isinstance(expr, tir.PrimExpr) or dt.lanes(expr.dtype) != 1:
        return UNBOUNDED
    kind = dt.kind(expr.dtype)
    if kind not in ("int", "uint", "bool"):
        return UNBOUNDED
    result = _bound(expr, env)
    if kind == "uint" and (result.lo is None or result.lo < 0):
        result = Interval(0, result.hi)
    return result


def _bound(expr, env) -> Interval:
    if isinstance(expr, tir.IntImm):
        return Interval(expr.value, expr.value)
    if isinstance(expr, tir.Var):
        if expr in env:
            return env[expr]
        return Interval(0, None) if isinstance(expr, tir.SizeVar) else UNBOUNDED
    if isinstance(expr, tir.Add):
        a, b = bound(expr.a, env), bound(expr.b, env)
        return Interval(_add(a.lo, b.lo), _add(a.hi, b.hi))
    if isinstance(expr, tir.Sub):
        a, b = bound(expr.a, env), bound(expr.b, env)
        return Interval(_add(a.lo, _neg(b.hi)), _add(a.hi, _neg(b.lo)))
    if isinstance(expr, tir.Mul):
        return _bound_mul(bound(expr.a, env), bound(expr.b, env))
    if isinstance(expr, (tir.FloorDiv, tir.FloorMod, tir.Div, tir.Mod)):
        return _bound_division(expr, env)
    if isinstance(expr, (tir.Min, tir.Max)):
        a, b = bound(expr.a, env), bound(expr.b, env)
        if isinstance(expr, tir.Min):
            return Interval(_min_end(a.lo, b.lo, True), _min_end(a.hi, b.hi, False))
        return Interval(_max_end(a.lo, b.lo, False), _max_end(a.hi, b.hi, True))
    if isinstance(expr, tir.Select):
        a, b = bound(expr.true_value, env), bound(expr.false_value, env)
        return Interval(_min_end(a.lo, b.lo, True), _max_end(a.hi, b.hi, True))
    if isinstance(expr, tir.Cast):
        return _bound_cast(expr, env)
    if isinstance(expr, tir.CompareOp) or isinstance(expr, tir.Not):
        return Interval(0, 1)
    return UNBOUNDED


def _bound_mul(a: Interval, b: Interval) -> Interval:
    if a.is_const:
        return _scale(b, a.lo)
    if b.is_const:
        return _scale(a, b.lo)
    if None not in (a.lo, a.hi, b.lo, b.hi):
        products = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
        return Interval(min(products), max(products))
    if a.lo is not None and b.lo is not None and a.lo >= 0 and b.lo >= 0:
        return Interval(a.lo * b.lo, None if a.hi is None or b.hi is None else a.hi * b.hi)
    return UNBOUNDED


def _bound_division(expr, env) -> Interval:
    d = _const(expr.b)
    if d is None or d <= 0:
        return UNBOUNDED
    a = bound(expr.a, env)
    non_negative = a.lo is not None and a.lo >= 0
    if isinstance(expr, tir.FloorDiv) or (isinstance(expr, tir.Div) and non_negative):
        return _floordiv(a, d)
    if isinstance(expr, tir.FloorMod) or (isinstance(expr, tir.Mod) and non_negative):
        if a.lo is not None and a.hi is not None and a.lo // d == a.hi // d:
            return Interval(a.lo % d, a.hi % d)
        return Interval(0, d - 1)
    if isinstance(expr, tir.Mod):
        return Interval(-(d - 1), d - 1)
    # Truncated division of a possibly negative value: between the floor and the ceiling.
    low = _floordiv(a, d)
    return Interval(low.lo, None if a.hi is None else -((-a.hi) // d))


def _bound_cast(expr, env) -> Interval:
    inner = bound(expr.value, env)
    source, target = expr.value.dtype, expr.dtype
    if dt.kind(source) not in ("int", "uint", "bool") or dt.kind(target) not in ("int", "uint"):
        return UNBOUNDED
    bits = dt.bits(target)
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt.is_int(target) else (0, (1 << bits) - 1)
    if inner.lo is not None and inner.hi is not None and low <= inner.lo and inner.hi <= high:
        return inner
    return Interval(low, high)
