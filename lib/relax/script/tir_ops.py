"""Building TIR expressions the way TVM's operator functions do.

The parser turns `a + b` into `tir.Add` through these helpers rather than through
the node constructors, so that operand types are matched (an int32 index added to
an int64 one is widened, an int added to a float becomes float) and constants are
folded (`T.int64(2) * 3` is `T.int64(6)`), as TVM's `tvm.tir` operators do. The
text TVM prints was built by those operators, so the same rules read it back into
the same IR.

Python numbers stay Python numbers while they meet only each other (`2 * 3` is 6).
Meeting a typed operand they become int32 / float32 / bool constants and join the
usual promotion, as in TVM 0.27: `n + 1` with an int64 `n` is `n + T.int64(1)`, a
uint8 plus 1 is int32, a float16 times 0.5 is float32.
"""

from __future__ import annotations

import math
import operator
from typing import Callable, Union

from ..ir import dtype as dt
from ..ir import tir
from .literal_limits import LiteralError, check_literal

Number = Union[bool, int, float]
Operand = Union[tir.PrimExpr, Number]


class HandleError(LiteralError):
    """A handle (a pointer) where a number is needed: in arithmetic, or converted to or
    from a number. TVM builds such nodes and its LLVM code generation then fails; the
    parser reports it where a LiteralError is, at the expression."""


def _is_handle(value: Operand) -> bool:
    return isinstance(value, tir.PrimExpr) and value.dtype == "handle"


def require_number(value: Operand, what: str) -> None:
    """HandleError if `value` is a handle (`what` says where it was used)."""
    if _is_handle(value):
        raise HandleError(f"{what} cannot take a handle (a pointer)")


def handle_conversion_message(source: str, target: str) -> str:
    return f"a value of type {source} cannot be converted to {target}: a handle (a pointer) is not a number"


def make_const(value: Number, dtype: str) -> tir.PrimExpr:
    """A constant of `dtype` (a vector dtype broadcasts a scalar constant)."""
    if dt.lanes(dtype) > 1:
        return tir.Broadcast(make_const(value, dt.element(dtype)), dt.lanes(dtype))
    if dt.is_float(dtype):
        return tir.FloatImm(dtype, float(value))
    if dt.is_bool(dtype):
        return tir.IntImm("bool", int(bool(value)))
    return tir.IntImm(dtype, int(value))


def literal(value: Number, dtype: str) -> tir.PrimExpr:
    """A literal of the source as a constant of `dtype`; LiteralError if it does not fit."""
    check_literal(value, dtype)
    return make_const(value, dtype)


def literal_dtype(value: Number, default_int_dtype: str = "int32") -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        # As TVM's conversion does: an int that does not fit int32 becomes int64.
        if default_int_dtype == "int32" and not -(2**31) <= value < 2**31:
            return "int64"
        return default_int_dtype
    return "float32"


def as_expr(value: Operand, default_int_dtype: str = "int32") -> tir.PrimExpr:
    if isinstance(value, tir.PrimExpr):
        return value
    return literal(value, literal_dtype(value, default_int_dtype))


def cast(dtype: str, value: Operand) -> tir.PrimExpr:
    """`value` as `dtype`: constants are converted, equal types are left alone."""
    if not isinstance(value, tir.PrimExpr):
        return literal(value, dtype)
    if value.dtype == dtype:
        return value
    if "handle" in (value.dtype, dtype):  # no LLVM conversion turns a pointer into a number or back
        raise HandleError(handle_conversion_message(value.dtype, dtype))
    if isinstance(value, (tir.IntImm, tir.FloatImm)) and dt.lanes(dtype) == 1:
        return literal(value.value, dtype)
    if isinstance(value, tir.Broadcast) and dt.lanes(dtype) > 1:
        return tir.Broadcast(cast(dt.element(dtype), value.value), dt.lanes(dtype))
    return tir.Cast(dtype, value)


def _rank(dtype: str) -> tuple[int, int]:
    """Orders scalar types for promotion: floats over integers, then wider first."""
    kind, bits, _ = dt.parse(dtype)
    return (1 if dt.is_float(dtype) else 0, bits)


def match_types(a: Operand, b: Operand) -> tuple[tir.PrimExpr, tir.PrimExpr]:
    """Both operands as PrimExprs of one type (TVM's BinaryOpMatchTypes)."""
    if not isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
        return as_expr(a), as_expr(b)
    if not isinstance(a, tir.PrimExpr):
        a = as_expr(a)
    if not isinstance(b, tir.PrimExpr):
        b = as_expr(b)
    if a.dtype == b.dtype:
        return a, b
    if "handle" in (a.dtype, b.dtype):
        other = b.dtype if a.dtype == "handle" else a.dtype
        raise HandleError(f"a handle (a pointer) cannot be combined with a value of type {other}")
    lanes_a, lanes_b = dt.lanes(a.dtype), dt.lanes(b.dtype)
    if lanes_a != lanes_b:
        if lanes_a == 1:
            a = tir.Broadcast(a, lanes_b)
        elif lanes_b == 1:
            b = tir.Broadcast(b, lanes_a)
        if a.dtype == b.dtype:
            return a, b
    target = max(a.dtype, b.dtype, key=_rank)
    return cast(target, a), cast(target, b)


def _fold_div(a, b):
    return a / b if isinstance(a, float) or isinstance(b, float) else int(a / b) if b else None


def _truncmod(a, b):
    return math.fmod(a, b) if isinstance(a, float) or isinstance(b, float) else a - int(a / b) * b


# How each node type folds two constants (None: leave it unfolded).
_FOLD: dict[type, Callable] = {
    tir.Add: operator.add,
    tir.Sub: operator.sub,
    tir.Mul: operator.mul,
    tir.Div: lambda a, b: _fold_div(a, b) if b else None,
    tir.Mod: lambda a, b: _truncmod(a, b) if b else None,
    tir.FloorDiv: lambda a, b: (a // b if not isinstance(a, float) else math.floor(a / b)) if b else None,
    tir.FloorMod: lambda a, b: (a % b) if b else None,
    tir.Min: min,
    tir.Max: max,
    tir.EQ: operator.eq,
    tir.NE: operator.ne,
    tir.LT: operator.lt,
    tir.LE: operator.le,
    tir.GT: operator.gt,
    tir.GE: operator.ge,
    # Python's own `and` / `or` on two Python numbers: the deciding operand.
    tir.And: lambda a, b: a and b,
    tir.Or: lambda a, b: a or b,
}


def _round_to(value, dtype: str):
    """A folded value as its type holds it: floats rounded to their precision,
    integers wrapped to their width (T.int8(100) + T.int8(100) is T.int8(-56))."""
    kind, bits, _ = dt.parse(dtype)
    if kind in ("int", "uint") and isinstance(value, int):
        value &= (1 << bits) - 1
        return value - (1 << bits) if kind == "int" and value >= 1 << (bits - 1) else value
    if isinstance(value, float) and dt.is_float(dtype) and dt.bits(dtype) in (16, 32):
        import numpy as np

        with np.errstate(over="ignore"):
            return float((np.float16 if dt.bits(dtype) == 16 else np.float32)(value))
    return value


def _constant(expr: tir.PrimExpr):
    return expr.value if isinstance(expr, (tir.IntImm, tir.FloatImm)) else None


# TVM folds a remainder only on integers; a float remainder stays as written.
_INTEGER_ONLY_FOLDS = (tir.Mod, tir.FloorMod)
_ARITHMETIC = (tir.Add, tir.Sub, tir.Mul, tir.Div, tir.FloorDiv)
# `==`, `!=`, `and`, `or` build their node as written (TVM's EqualOp and the
# script's And/Or constructors), constants included.
_NEVER_FOLDED = (tir.EQ, tir.NE, tir.And, tir.Or)


def _fold_identity(cls: type, a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr | None:
    """TVM's folds with one constant operand (for floats too): x + 0, x - 0, x * 1,
    x * 0, x / 1, 0 / x; on integers x % 1 and 0 % x."""
    ca, cb = _constant(a), _constant(b)
    if cls is tir.Add:
        return b if ca == 0 else a if cb == 0 else None
    if cls is tir.Sub:
        return a if cb == 0 else None
    if cls is tir.Mul:
        if ca == 1 or cb == 0:
            return b
        if cb == 1 or ca == 0:
            return a
        return None
    if cls in (tir.Div, tir.FloorDiv):
        return a if ca == 0 or cb == 1 else None
    if cls in _INTEGER_ONLY_FOLDS and not dt.is_float(a.dtype):
        if ca == 0:
            return a
        if cb == 1:
            return make_const(0, a.dtype)
    return None


def binary(cls: type, a: Operand, b: Operand) -> tir.PrimExpr | Number:
    """`cls(a, b)` with matched types and constants folded; two Python numbers give
    a Python number, as evaluating the text would."""
    if not isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
        folded = _FOLD[cls](a, b)
        if folded is not None:
            return folded
    if cls in (tir.And, tir.Or):
        a, b = cast_bool(a), cast_bool(b)
        require_number(a, "'and' or 'or'")
        require_number(b, "'and' or 'or'")
    else:
        a, b = match_types(a, b)
        if not issubclass(cls, tir.CompareOp):  # pointers compare, they do not compute
            require_number(a, "arithmetic")
    if cls in _NEVER_FOLDED:
        return cls(a, b)
    ca, cb = _constant(a), _constant(b)
    foldable = not (cls in _INTEGER_ONLY_FOLDS and dt.is_float(a.dtype))
    # TVM leaves arithmetic on two 16-bit float constants unfolded (comparisons fold).
    foldable = foldable and not (cls in _ARITHMETIC and dt.is_float(a.dtype) and dt.bits(a.dtype) == 16)
    if ca is not None and cb is not None and dt.lanes(a.dtype) == 1 and foldable:
        folded = _FOLD[cls](ca, cb)
        if folded is not None:
            result_dtype = "bool" if issubclass(cls, tir.CompareOp) else a.dtype
            return make_const(_round_to(folded, result_dtype), result_dtype)
    identity = _fold_identity(cls, a, b)
    if identity is not None:
        return identity
    return cls(a, b)


def folds(node: tir.BinaryOp) -> bool:
    """Whether `binary` builds another expression than `node` from its operands: the
    printed operator (or T.min, T.max, T.truncmod) reads back as something else."""
    ca, cb = _constant(node.a), _constant(node.b)
    if ca is None and cb is None:
        return False
    if (ca is None or cb is None) and (cb if ca is None else ca) not in (0, 1):
        return False  # beside an expression, only 0 and 1 fold (_fold_identity)
    try:
        built = binary(type(node), node.a, node.b)
    except Exception:  # the text would not even read back
        return True
    return not (type(built) is type(node) and built.a is node.a and built.b is node.b)


def compare(cls: type, a: Operand, b: Operand) -> tir.PrimExpr | bool:
    """`a < b`, `a == b`, ... as TVMScript builds them. `==` and `!=` are nodes as
    written; so is an ordering with a Python number on the left (`2 < m`). Both take a
    Python number in the other side's type. An ordering with an expression on the
    left is TVM's operator: types promoted, constants folded."""
    if not isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
        return _FOLD[cls](a, b)
    if cls in (tir.EQ, tir.NE) or not isinstance(a, tir.PrimExpr):
        a, b = match_types(_literal_like(a, b), _literal_like(b, a))
        return cls(a, b)
    return binary(cls, a, b)


def _literal_like(value: Operand, other: Operand) -> tir.PrimExpr:
    """A Python number as a constant of the other operand's type (TVMScript's
    `_auto_broadcast`): an int takes any type, a float only a float type."""
    if isinstance(value, tir.PrimExpr):
        return value
    scalar = dt.element(other.dtype)
    if isinstance(value, float) and not dt.is_float(scalar):
        return literal(value, "float32")
    return literal(value, scalar)


def cast_bool(value: Operand) -> tir.PrimExpr:
    if not isinstance(value, tir.PrimExpr):
        return make_const(bool(value), "bool")
    return value


def logical_not(value: Operand) -> tir.PrimExpr | bool:
    """`not value`; like `and` and `or`, TVM builds the node even on a constant."""
    if not isinstance(value, tir.PrimExpr):
        return not value
    return tir.Not(value)


def negate(value: Operand) -> tir.PrimExpr | Number:
    """`-value`: a constant is negated in place; otherwise `x * -1` as TVM's ExprOp does."""
    if not isinstance(value, tir.PrimExpr):
        return -value
    require_number(value, "negation")
    constant = _constant(value)
    if constant is not None:
        return make_const(-constant, value.dtype)
    return tir.Mul(value, make_const(-1, value.dtype))
