"""`T.<name>(...)` in TIR expressions: typed constants (`T.int64(3)`), casts, node
constructors (`T.Select`, `T.Ramp`, `T.Let`, ...) and intrinsic calls from the
shared table (tir_intrinsics.INTRINSICS).

PrimCallParser is a part of PrimExprParser (prim_expr.py), kept apart because the
vocabulary of calls is long; it relies on the expression parser's `value`,
`parse`, `finish` and `dtype_string`.
"""

from __future__ import annotations

import ast
import difflib
import math
from typing import Callable

from ..ir import dtype as dt
from ..ir import tir
from . import tir_ops
from .literal_limits import LiteralError
from .tir_intrinsics import BINARY_MATH, INTRINSICS, Intrinsic, describe_arity
from .tir_ops import Operand

# `T.<name>(a, b)` functions: TVM's operator functions, which fold constants.
_BINARY_FUNCTIONS: dict[str, type] = {
    "max": tir.Max,
    "min": tir.Min,
    "floordiv": tir.FloorDiv,
    "floormod": tir.FloorMod,
    "truncdiv": tir.Div,
    "truncmod": tir.Mod,
}
# `T.<Node>(a, b)` constructors: the node as written, constants included.
_BINARY_CONSTRUCTORS: dict[str, type] = {
    "Max": tir.Max, "Min": tir.Min, "FloorDiv": tir.FloorDiv, "FloorMod": tir.FloorMod,
    "Div": tir.Div, "Mod": tir.Mod, "Add": tir.Add, "Sub": tir.Sub, "Mul": tir.Mul,
    "And": tir.And, "Or": tir.Or, "EQ": tir.EQ, "NE": tir.NE, "LT": tir.LT, "LE": tir.LE,
    "GT": tir.GT, "GE": tir.GE,
}
_BINARY_CALLS = {**_BINARY_FUNCTIONS, **_BINARY_CONSTRUCTORS}
# Type names that are not values: `T.handle` and `T.void` only annotate.
_NOT_VALUE_TYPES = ("handle", "void")

# The bit widths each kind of scalar comes in; "float33" parses but is no type.
_KNOWN_BITS = {
    "int": (1, 4, 8, 16, 32, 64),
    "uint": (1, 4, 8, 16, 32, 64),
    "float": (8, 16, 32, 64),
    "bfloat": (16,),
    "e4m3_float": (8,),
    "e5m2_float": (8,),
}


def is_known_dtype(name: str) -> bool:
    """Whether `name` is a data type TVM knows: "float32", "int64x4", "bool", "handle"."""
    if not dt.is_valid(name):
        return False
    kind, bits, _ = dt.parse(name)
    return kind not in _KNOWN_BITS or bits in _KNOWN_BITS[kind]


def is_dtype_name(name: str) -> bool:
    """Whether `T.<name>` names a scalar or vector data type (`T.int64`, `T.float32x4`)."""
    return is_known_dtype(name) and name not in _NOT_VALUE_TYPES


def known_call_names() -> list[str]:
    """Every `T.<name>` this module builds an expression for (for suggestions)."""
    return sorted(set(INTRINSICS) | set(_BINARY_CALLS) | set(PrimCallParser.SPECIAL_CALLS))


class PrimCallParser:
    """The `T.<name>(...)` calls of PrimExprParser."""

    SPECIAL_CALLS = (
        "Cast", "Select", "Ramp", "Broadcast", "Let", "abs", "min_value", "max_value",
        "tvm_struct_get", "StringImm", "Not", "Shuffle",
    )

    def _call(self, node: ast.Call) -> Operand:
        dialect = self.ctx.dialect_of(node.func)
        if dialect is None or dialect[0] != "tir":
            raise self.ctx.fail(f"'{_describe(node.func)}' is not a TIR function", node.func)
        name = dialect[1]
        if is_dtype_name(name):
            return self._typed(name, node)
        special = _SPECIAL_HANDLERS.get(name)
        if special is not None:
            return special(self, node)
        if name in _BINARY_CALLS:
            self.check_arity(node, name, 2, 2)
            # Arguments become constants first: T.truncmod(2.0, 1.5) is not Python's 2.0 % 1.5.
            a, b = (tir_ops.as_expr(self.value(arg)) for arg in node.args)
            if name in _BINARY_CONSTRUCTORS:
                a, b = tir_ops.match_types(a, b)
                return _BINARY_CONSTRUCTORS[name](a, b)
            return tir_ops.binary(_BINARY_FUNCTIONS[name], a, b)
        intrinsic = INTRINSICS.get(name)
        if intrinsic is not None:
            return self._intrinsic(intrinsic, node)
        raise self.ctx.fail(unknown_name_message(name, known_call_names()), node.func)

    def check_arity(self, node: ast.Call, name: str, low: int, high: int | None) -> None:
        if node.keywords:
            raise self.ctx.fail(f"T.{name} takes no keyword argument '{node.keywords[0].arg}'", node.keywords[0])
        count = len(node.args)
        if count < low or (high is not None and count > high):
            expected = describe_arity(Intrinsic(name, "", low, high, ""))
            raise self.ctx.fail(f"T.{name} takes {expected}, got {count}", node)

    def _typed(self, dtype: str, node: ast.Call) -> tir.PrimExpr:
        """`T.int64(3)` is a constant, `T.float32(x)` a cast; `T.int64()` declares a variable."""
        if not node.args and not node.keywords:
            raise self.ctx.fail(f"'T.{dtype}()' declares a variable and is not an expression", node)
        self.check_arity(node, dtype, 1, 1)
        argument = node.args[0]
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            text = argument.value.strip().lower()
            if text not in ("inf", "-inf", "nan", "+inf") or not dt.is_float(dtype):
                raise self.ctx.fail(f"'{argument.value}' is not a {dtype} constant", argument)
            return tir_ops.make_const(float(text), dtype)
        value = self.value(argument)
        try:
            return tir_ops.cast(dtype, value)
        except LiteralError as error:
            raise self.ctx.fail(str(error), argument) from None

    def _intrinsic(self, intrinsic: Intrinsic, node: ast.Call) -> tir.PrimExpr:
        self.check_arity(node, intrinsic.name, intrinsic.min_args, intrinsic.max_args)
        if intrinsic.result == "dtype_arg":
            dtype = self.dtype_string(node.args[0])
            return tir.Call(dtype, intrinsic.op, tuple(self.parse(a) for a in node.args[1:]))
        values = [self.value(a) for a in node.args]
        if intrinsic.name in BINARY_MATH:
            values = list(tir_ops.match_types(values[0], values[1]))
        elif intrinsic.result == "second":
            values[1], values[2] = tir_ops.match_types(values[1], values[2])
        args = tuple(self.finish(v) for v in values)
        return tir.Call(self.result_dtype(intrinsic, args), intrinsic.op, args)

    @staticmethod
    def result_dtype(intrinsic: Intrinsic, args: tuple[tir.PrimExpr, ...]) -> str:
        if intrinsic.result == "same":
            return args[0].dtype
        if intrinsic.result == "bool":
            return dt.with_lanes("bool", dt.lanes(args[0].dtype))
        if intrinsic.result == "second":
            return args[1].dtype
        return intrinsic.result

    # Handlers of the calls that build nodes other than tir.Call.
    def _cast(self, node: ast.Call) -> tir.PrimExpr:
        self.check_arity(node, "Cast", 2, 2)
        dtype, value = self.dtype_string(node.args[0]), self.parse(node.args[1])
        if "handle" in (dtype, value.dtype) and dtype != value.dtype:
            raise self.ctx.fail(tir_ops.handle_conversion_message(value.dtype, dtype), node)
        return tir.Cast(dtype, value)

    def _select(self, node: ast.Call) -> tir.PrimExpr:
        self.check_arity(node, "Select", 3, 3)
        condition = self.parse(node.args[0])
        true_value, false_value = tir_ops.match_types(self.value(node.args[1]), self.value(node.args[2]))
        return tir.Select(condition, true_value, false_value)

    def _ramp(self, node: ast.Call) -> tir.PrimExpr:
        self.check_arity(node, "Ramp", 3, 3)
        base, stride = tir_ops.match_types(self.value(node.args[0]), self.value(node.args[1]))
        return tir.Ramp(base, stride, self.lane_count(node.args[2]))

    def _broadcast(self, node: ast.Call) -> tir.PrimExpr:
        self.check_arity(node, "Broadcast", 2, 2)
        return tir.Broadcast(self.parse(node.args[0]), self.lane_count(node.args[1]))

    def _let(self, node: ast.Call) -> tir.PrimExpr:
        """`T.Let(body, where={x: value})`: x is bound while reading body. TVM declares x
        first (`x = T.float32()`); an undeclared x gets the value's type."""
        where = next((k.value for k in node.keywords if k.arg == "where"), None)
        if len(node.args) != 1 or not isinstance(where, ast.Dict) or len(where.keys) != 1:
            raise self.ctx.fail("T.Let takes a body and where={var: value}", node)
        var_node = where.keys[0]
        if not isinstance(var_node, ast.Name):
            raise self.ctx.fail("T.Let binds a name", var_node)
        value = self.parse(where.values[0])
        declared = self.scope.lookup(var_node.id)
        if isinstance(declared, tir.Var):
            var = declared
            value = tir_ops.cast(var.dtype, value)
        else:
            var = tir.Var(var_node.id, value.dtype, span=self.ctx.span(var_node))
        inner = type(self)(self.ctx, self.scope.child(), self.default_int_dtype)
        inner.scope.define(var_node.id, var)
        return tir.Let(var, value, inner.parse(node.args[0]))

    def _abs(self, node: ast.Call) -> Operand:
        """T.abs and T.fabs as TVM's abs: a constant folds, a float calls fabs, a signed
        integer selects, an unsigned one is itself."""
        name = node.func.attr
        self.check_arity(node, name, 1, 1)
        value = self.value(node.args[0])
        if not isinstance(value, tir.PrimExpr):
            return abs(value)
        if isinstance(value, (tir.IntImm, tir.FloatImm)):
            return tir_ops.make_const(abs(value.value), value.dtype)
        if dt.is_float(value.dtype):
            return tir.Call(value.dtype, "tir.fabs", (value,))
        if dt.is_int(value.dtype):
            # C++'s -x, which TVM builds as 0 - x (Python's -x is x * -1).
            negated = tir.Sub(tir_ops.make_const(0, value.dtype), value)
            return tir.Select(tir_ops.binary(tir.GE, value, 0), value, negated)
        return value

    def _rounding(self, node: ast.Call) -> Operand:
        """T.floor / T.ceil / T.round / T.nearbyint / T.trunc: an integer is itself and a
        float constant folds, as TVM's functions do; otherwise the intrinsic call."""
        name = node.func.attr
        self.check_arity(node, name, 1, 1)
        value = self.finish(self.value(node.args[0]))
        if not dt.is_float(value.dtype):
            return value
        if isinstance(value, tir.FloatImm) and math.isfinite(value.value):
            return tir_ops.make_const(float(_ROUNDING[name](value.value)), value.dtype)
        return tir.Call(value.dtype, f"tir.{name}", (value,))

    def _if_then_else(self, node: ast.Call) -> Operand:
        """A constant condition picks its branch, as TVM's if_then_else does."""
        self.check_arity(node, "if_then_else", 3, 3)
        condition = self.parse(node.args[0])
        true_value, false_value = tir_ops.match_types(self.value(node.args[1]), self.value(node.args[2]))
        if isinstance(condition, tir.IntImm):
            return true_value if condition.value else false_value
        return tir.Call(true_value.dtype, "tir.if_then_else", (condition, true_value, false_value))

    def _likely(self, node: ast.Call) -> Operand:
        """T.likely(cond) marks a branch hint; a constant needs none (TVM returns it)."""
        self.check_arity(node, "likely", 1, 1)
        condition = self.finish(self.value(node.args[0]))
        if isinstance(condition, (tir.IntImm, tir.FloatImm)):
            return condition
        return tir.Call(condition.dtype, "tir.likely", (condition,))

    def _float_class(self, node: ast.Call) -> Operand:
        """T.isnan / T.isinf / T.isfinite as TVM builds them: only isnan is a call; isinf
        is |x| == inf and not nan; an integer is never nan or inf."""
        name = node.func.attr
        self.check_arity(node, name, 1, 1)
        value = self.finish(self.value(node.args[0]))
        if not dt.is_float(value.dtype):
            return tir_ops.make_const(name == "isfinite", dt.with_lanes("bool", dt.lanes(value.dtype)))
        return _float_class(name, value)

    def _shuffle(self, node: ast.Call) -> tir.PrimExpr:
        """`T.Shuffle([vectors], [lane indices])`."""
        self.check_arity(node, "Shuffle", 2, 2)
        vectors_node, indices_node = node.args
        if not isinstance(vectors_node, (ast.List, ast.Tuple)) or not isinstance(indices_node, (ast.List, ast.Tuple)):
            raise self.ctx.fail("T.Shuffle takes a list of vectors and a list of lane indices", node)
        if not vectors_node.elts or not indices_node.elts:
            raise self.ctx.fail("T.Shuffle needs at least one vector and one index", node)
        vectors = tuple(self.parse(v) for v in vectors_node.elts)
        indices = tuple(self.parse(i) for i in indices_node.elts)
        return tir.Shuffle(vectors, indices)

    def _not(self, node: ast.Call) -> Operand:
        self.check_arity(node, "Not", 1, 1)
        return tir_ops.logical_not(self.value(node.args[0]))

    def _limit(self, node: ast.Call) -> tir.PrimExpr:
        name = node.func.attr
        self.check_arity(node, name, 1, 1)
        dtype = self.dtype_string(node.args[0])
        return tir_ops.make_const(dtype_limit(dtype, name == "max_value"), dtype)

    def _struct_get(self, node: ast.Call) -> tir.PrimExpr:
        # T.tvm_struct_get(array, index, field, "dtype"): the type comes last.
        self.check_arity(node, "tvm_struct_get", 4, 4)
        dtype = self.dtype_string(node.args[3])
        return tir.Call(dtype, "tir.tvm_struct_get", tuple(self.parse(a) for a in node.args[:3]))

    def _string(self, node: ast.Call) -> tir.PrimExpr:
        self.check_arity(node, "StringImm", 1, 1)
        argument = node.args[0]
        if not isinstance(argument, ast.Constant) or not isinstance(argument.value, str):
            raise self.ctx.fail("T.StringImm takes a string", argument)
        return tir.StringImm(argument.value)

    def lane_count(self, node: ast.expr) -> int:
        lanes = self.constant_int(node)
        if lanes < 1:
            raise self.ctx.fail("a vector has at least one lane", node)
        return lanes

    def constant_int(self, node: ast.expr) -> int:
        value = self.value(node)
        if isinstance(value, tir.IntImm):
            value = value.value
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.ctx.fail("expected a constant integer", node)
        return value


_SPECIAL_HANDLERS: dict[str, Callable[[PrimCallParser, ast.Call], Operand]] = {
    "Cast": PrimCallParser._cast,
    "Select": PrimCallParser._select,
    "Ramp": PrimCallParser._ramp,
    "Broadcast": PrimCallParser._broadcast,
    "Let": PrimCallParser._let,
    "abs": PrimCallParser._abs,
    "min_value": PrimCallParser._limit,
    "max_value": PrimCallParser._limit,
    "tvm_struct_get": PrimCallParser._struct_get,
    "StringImm": PrimCallParser._string,
    "Not": PrimCallParser._not,
    "Shuffle": PrimCallParser._shuffle,
    "fabs": PrimCallParser._abs,
    "floor": PrimCallParser._rounding,
    "ceil": PrimCallParser._rounding,
    "round": PrimCallParser._rounding,
    "nearbyint": PrimCallParser._rounding,
    "trunc": PrimCallParser._rounding,
    "if_then_else": PrimCallParser._if_then_else,
    "likely": PrimCallParser._likely,
    "isnan": PrimCallParser._float_class,
    "isinf": PrimCallParser._float_class,
    "isfinite": PrimCallParser._float_class,
}


# How TVM folds each rounding function on a constant (round is nearbyint: half to even).
_ROUNDING = {"floor": math.floor, "ceil": math.ceil, "round": round, "nearbyint": round, "trunc": math.trunc}


def _float_class(name: str, value: tir.PrimExpr) -> tir.PrimExpr:
    """TVM's isnan / isinf / isfinite of a float: a constant folds; isnan of a 16-bit
    float is taken in float32; isinf is |x| == inf and not isnan(x)."""
    if isinstance(value, tir.FloatImm):
        test = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}[name]
        return tir_ops.make_const(test(value.value), "bool")
    if name == "isfinite":
        return tir.And(tir.Not(_float_class("isinf", value)), tir.Not(_float_class("isnan", value)))
    bool_dtype = dt.with_lanes("bool", dt.lanes(value.dtype))
    widened = tir_ops.cast(dt.with_lanes("float32", dt.lanes(value.dtype)), value) if dt.bits(value.dtype) == 16 else value
    is_nan = tir.Call(bool_dtype, "tir.isnan", (widened,))
    if name == "isnan":
        return is_nan
    magnitude = tir.Call(value.dtype, "tir.fabs", (value,))
    return tir.And(tir.EQ(magnitude, tir_ops.make_const(float("inf"), value.dtype)), tir.Not(is_nan))


def dtype_limit(dtype: str, largest: bool):
    """The largest or smallest finite value of a scalar dtype (T.max_value / T.min_value)."""
    kind, bits, _ = dt.parse(dtype)
    if dt.is_float(dtype):
        import numpy as np

        info = np.finfo({16: np.float16, 32: np.float32, 64: np.float64}.get(bits, np.float32))
        return float(info.max if largest else info.min)
    if kind == "bool":
        return 1 if largest else 0
    if kind == "uint":
        return 2**bits - 1 if largest else 0
    return 2 ** (bits - 1) - 1 if largest else -(2 ** (bits - 1))


def unknown_name_message(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1)
    hint = f"; did you mean 'T.{close[0]}'?" if close else ""
    return f"unknown TIR function 'T.{name}'{hint}"


def _describe(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - only used for messages
        return type(node).__name__
