"""TIR expressions from TVMScript syntax trees: `i * 4 + T.exp(A[i, j])` -> PrimExpr.

Used by the TIR parser for kernel bodies and by the Relax parser for symbolic
shapes (`R.Tensor((n * 2, 4))`, which passes default_int_dtype="int64"). Names
are looked up in a Scope; `T.<name>(...)` calls are typed constants, casts, the
expression constructors below, or intrinsics from the shared table
(tir_intrinsics.INTRINSICS). Arithmetic goes through tir_ops, which matches
operand types and folds constants as TVM does.

Errors are recorded in the ParseContext. An undefined name is reported and read
as a placeholder variable so that the rest of the expression is still checked;
any other error abandons the expression (ParseAbort).
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from typing import Callable

from ..ir import dtype as dt
from ..ir import tir
from . import tir_ops
from .context import ParseAbort, ParseContext, Scope
from .tir_intrinsics import BINARY_MATH, INTRINSICS, Intrinsic, describe_arity
from .tir_ops import Operand

_BINARY_OPERATORS: dict[type, type] = {
    ast.Add: tir.Add,
    ast.Sub: tir.Sub,
    ast.Mult: tir.Mul,
    ast.Div: tir.Div,
    ast.FloorDiv: tir.FloorDiv,
    ast.Mod: tir.FloorMod,
}
# Bitwise operators are intrinsic calls in TIR, not nodes.
_BITWISE_OPERATORS: dict[type, str] = {
    ast.BitAnd: "bitwise_and",
    ast.BitOr: "bitwise_or",
    ast.BitXor: "bitwise_xor",
    ast.LShift: "shift_left",
    ast.RShift: "shift_right",
}
_COMPARISONS: dict[type, type] = {
    ast.Eq: tir.EQ,
    ast.NotEq: tir.NE,
    ast.Lt: tir.LT,
    ast.LtE: tir.LE,
    ast.Gt: tir.GT,
    ast.GtE: tir.GE,
}
# `T.<name>(a, b)` spellings of binary nodes.
_BINARY_CALLS: dict[str, type] = {
    "max": tir.Max,
    "min": tir.Min,
    "floordiv": tir.FloorDiv,
    "floormod": tir.FloorMod,
    "truncdiv": tir.Div,
    "truncmod": tir.Mod,
    "Max": tir.Max,
    "Min": tir.Min,
    "FloorDiv": tir.FloorDiv,
    "FloorMod": tir.FloorMod,
    "Div": tir.Div,
    "Mod": tir.Mod,
    "Add": tir.Add,
    "Sub": tir.Sub,
    "Mul": tir.Mul,
    "And": tir.And,
    "Or": tir.Or,
    "EQ": tir.EQ,
    "NE": tir.NE,
    "LT": tir.LT,
    "LE": tir.LE,
    "GT": tir.GT,
    "GE": tir.GE,
}
@dataclass(frozen=True)
class LocalScalar:
    """What a scope holds for `x: T.int32 = v`: a one-element local buffer that reads
    as `x` (a load of x[0]) and is assigned with `x = ...` (a store to x[0])."""

    buffer: tir.Buffer

    def load(self, span=None) -> tir.BufferLoad:
        return tir.BufferLoad(self.buffer, (tir.IntImm("int32", 0),), span=span)


# Type names that are not values: `T.handle` and `T.void` only annotate.
_NOT_VALUE_TYPES = ("handle", "void")


def parse_prim_expr(
    node: ast.expr, ctx: ParseContext, scope: Scope, default_int_dtype: str = "int32"
) -> tir.PrimExpr:
    """The PrimExpr that `node` spells; bare integer literals take default_int_dtype."""
    return PrimExprParser(ctx, scope, default_int_dtype).parse(node)


# The bit widths each kind of scalar comes in; "float33" parses but is no type.
_KNOWN_BITS = {
    "int": (1, 4, 8, 16, 32, 64),
    "uint": (1, 4, 8, 16, 32, 64),
    "float": (8, 16, 32, 64),
    "bfloat": (16,),
    "e4m3_float": (8,),
    "e5m2_float": (8,),
}


def embedded_expression(node: ast.Constant, ctx: ParseContext, report: bool = True) -> ast.expr:
    """The expression inside a string, as TVM prints symbolic dims: `("n * T.int64(8)",)`.

    Locations are moved onto the string in the source, so errors point into it.
    """
    try:
        parsed = ast.parse(node.value.strip(), mode="eval").body
    except SyntaxError:
        if not report:
            raise ParseAbort(node.value) from None
        raise ctx.fail(f"'{node.value}' is not an expression", node) from None
    indent = len(node.value) - len(node.value.lstrip())
    for child in ast.walk(parsed):
        if hasattr(child, "lineno"):
            # Only single-line strings occur in shapes; columns shift past the quote.
            child.lineno = child.end_lineno = node.lineno
            child.col_offset += node.col_offset + 1 + indent
            child.end_col_offset += node.col_offset + 1 + indent
    return parsed


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
    return sorted(set(INTRINSICS) | set(_BINARY_CALLS) | set(PrimExprParser.SPECIAL_CALLS))


class PrimExprParser:
    """Parses expressions in one scope; `value()` keeps bare literals as Python numbers."""

    SPECIAL_CALLS = (
        "Cast", "Select", "Ramp", "Broadcast", "Let", "abs", "min_value", "max_value",
        "tvm_struct_get", "StringImm", "Not", "Shuffle",
    )

    def __init__(self, ctx: ParseContext, scope: Scope, default_int_dtype: str = "int32"):
        self.ctx = ctx
        self.scope = scope
        self.default_int_dtype = default_int_dtype
        self._visitors: dict[type, Callable[[ast.AST], Operand]] = {
            ast.Constant: self._constant,
            ast.Name: self._name,
            ast.BinOp: self._binop,
            ast.UnaryOp: self._unaryop,
            ast.BoolOp: self._boolop,
            ast.Compare: self._compare,
            ast.Call: self._call,
            ast.Subscript: self._subscript,
            ast.Attribute: self._attribute,
        }

    # -- entry points ------------------------------------------------------------
    def parse(self, node: ast.expr) -> tir.PrimExpr:
        return self.finish(self.value(node))

    def finish(self, value: Operand) -> tir.PrimExpr:
        return tir_ops.as_expr(value, self.default_int_dtype)

    def value(self, node: ast.expr) -> Operand:
        visitor = self._visitors.get(type(node))
        if visitor is None:
            raise self.ctx.fail(f"'{_describe(node)}' is not a TIR expression", node)
        result = visitor(node)
        if isinstance(result, tir.PrimExpr) and result.span is None:
            result = _with_span(result, self.ctx.span(node))
        return result

    def dtype_string(self, node: ast.expr) -> str:
        """A dtype written as a string ("float32") or as a type name (T.float32)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        else:
            dialect = self.ctx.dialect_of(node)
            if dialect is None or dialect[0] != "tir":
                raise self.ctx.fail("expected a data type such as \"float32\"", node)
            name = dialect[1]
        if not is_known_dtype(name):
            raise self.ctx.fail(f"unknown data type '{name}'", node)
        return name

    # -- leaves ----------------------------------------------------------------
    def _constant(self, node: ast.Constant) -> Operand:
        if isinstance(node.value, (bool, int, float)):
            return node.value
        if isinstance(node.value, str):
            return tir.StringImm(node.value)
        raise self.ctx.fail(f"'{_describe(node)}' is not a TIR expression", node)

    def _name(self, node: ast.Name) -> Operand:
        found = self.scope.lookup(node.id)
        if found is None:
            self.ctx.error(f"undefined variable '{node.id}'", node)
            return tir.Var(node.id, self.default_int_dtype)
        if isinstance(found, tir.PrimExpr) or isinstance(found, (bool, int, float)):
            return found
        if isinstance(found, LocalScalar):
            return found.load(self.ctx.span(node))
        if isinstance(found, tir.Buffer):
            raise self.ctx.fail(f"buffer '{node.id}' is not a value; index it as {node.id}[...]", node)
        raise self.ctx.fail(f"'{node.id}' is not a TIR expression", node)

    def _attribute(self, node: ast.Attribute) -> Operand:
        if isinstance(node.value, ast.Name):
            buffer = self.scope.lookup(node.value.id)
            if isinstance(buffer, tir.Buffer):
                if node.attr == "data" and buffer.data is not None:
                    return buffer.data
                if node.attr == "elem_offset" and buffer.elem_offset is not None:
                    return buffer.elem_offset
                raise self.ctx.fail(f"buffer '{node.value.id}' has no attribute '{node.attr}' usable here", node)
        dialect = self.ctx.dialect_of(node)
        if dialect is not None and dialect[0] == "tir" and is_dtype_name(dialect[1]):
            raise self.ctx.fail(f"'T.{dialect[1]}' is a type; write T.{dialect[1]}(value) for a constant", node)
        raise self.ctx.fail(f"'{_describe(node)}' is not a TIR expression", node)

    # -- operators -------------------------------------------------------------
    def _binop(self, node: ast.BinOp) -> Operand:
        a, b = self.value(node.left), self.value(node.right)
        node_type = _BINARY_OPERATORS.get(type(node.op))
        if node_type is not None:
            return tir_ops.binary(node_type, a, b)
        intrinsic = _BITWISE_OPERATORS.get(type(node.op))
        if intrinsic is None:
            raise self.ctx.fail(f"operator '{_describe_op(node.op)}' is not supported in TIR", node)
        if not isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
            return _PYTHON_BITWISE[intrinsic](a, b)
        a, b = tir_ops.match_types(a, b)
        return tir.Call(a.dtype, f"tir.{intrinsic}", (a, b))

    def _unaryop(self, node: ast.UnaryOp) -> Operand:
        operand = self.value(node.operand)
        if isinstance(node.op, ast.USub):
            return tir_ops.negate(operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            return tir_ops.logical_not(operand)
        if not isinstance(operand, tir.PrimExpr):
            return ~operand
        return tir.Call(operand.dtype, "tir.bitwise_not", (operand,))

    def _boolop(self, node: ast.BoolOp) -> Operand:
        node_type = tir.And if isinstance(node.op, ast.And) else tir.Or
        result = self.value(node.values[0])
        for operand in node.values[1:]:
            result = tir_ops.binary(node_type, result, self.value(operand))
        return result

    def _compare(self, node: ast.Compare) -> Operand:
        # `a < b < c` means `a < b and b < c`, each operand read once.
        left = self.value(node.left)
        result: Operand | None = None
        for op, right_node in zip(node.ops, node.comparators):
            node_type = _COMPARISONS.get(type(op))
            if node_type is None:
                raise self.ctx.fail(f"operator '{_describe_op(op)}' is not supported in TIR", node)
            right = self.value(right_node)
            term = tir_ops.binary(node_type, left, right)
            result = term if result is None else tir_ops.binary(tir.And, result, term)
            left = right
        return result

    # -- buffer loads ------------------------------------------------------------
    def _subscript(self, node: ast.Subscript) -> Operand:
        buffer = self.buffer(node.value)
        indices = self.indices(node, buffer)
        return tir.BufferLoad(buffer, indices)

    def buffer(self, node: ast.expr) -> tir.Buffer:
        if isinstance(node, ast.Name):
            found = self.scope.lookup(node.id)
            if isinstance(found, tir.Buffer):
                return found
            if found is None:
                raise self.ctx.fail(f"undefined buffer '{node.id}'", node)
            raise self.ctx.fail(f"'{node.id}' is not a buffer and cannot be indexed", node)
        raise self.ctx.fail(f"'{_describe(node)}' is not a buffer and cannot be indexed", node)

    def index_nodes(self, subscript: ast.Subscript) -> list[ast.expr]:
        index = subscript.slice
        return list(index.elts) if isinstance(index, ast.Tuple) else [index]

    def indices(self, subscript: ast.Subscript, buffer: tir.Buffer) -> tuple[tir.PrimExpr, ...]:
        """The indices of `A[i, j]`; a slice `A[i:i + 4]` is a vector index (Ramp)."""
        nodes = self.index_nodes(subscript)
        self.check_index_count(subscript, buffer, len(nodes))
        return tuple(self.vector_index(n) if isinstance(n, ast.Slice) else self.parse(n) for n in nodes)

    def check_index_count(self, subscript: ast.Subscript, buffer: tir.Buffer, count: int) -> None:
        # A flattened (lowered) buffer may be indexed with one index whatever its shape.
        if count != buffer.ndim:
            raise self.ctx.fail(
                f"buffer '{buffer.name}' has {buffer.ndim} dimension{'s' if buffer.ndim != 1 else ''}"
                f" but is indexed with {count} ind{'ices' if count != 1 else 'ex'}",
                subscript,
            )

    def vector_index(self, node: ast.Slice) -> tir.PrimExpr:
        if node.lower is None or node.upper is None:
            raise self.ctx.fail("a vector index needs both bounds: A[start:stop]", node)
        start = self.parse(node.lower)
        stop = tir_ops.cast(start.dtype, self.value(node.upper))
        stride = tir_ops.cast(start.dtype, self.value(node.step)) if node.step is not None else tir_ops.make_const(1, start.dtype)
        lanes = tir_ops.constant_difference(stop, start)
        if lanes is None or not isinstance(stride, tir.IntImm) or stride.value <= 0:
            raise self.ctx.fail("a vector index needs a constant length and step", node)
        count = -(-lanes // stride.value)
        return start if count == 1 else tir.Ramp(start, stride, count)

    # -- T.<name>(...) calls -------------------------------------------------------
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
            return tir_ops.binary(_BINARY_CALLS[name], self.value(node.args[0]), self.value(node.args[1]))
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
        return tir_ops.cast(dtype, self.value(argument))

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
        return tir.Cast(self.dtype_string(node.args[0]), self.parse(node.args[1]))

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
        """`T.Let(body, where={x: value})`: x is bound while reading body."""
        where = next((k.value for k in node.keywords if k.arg == "where"), None)
        if len(node.args) != 1 or not isinstance(where, ast.Dict) or len(where.keys) != 1:
            raise self.ctx.fail("T.Let takes a body and where={var: value}", node)
        var_node = where.keys[0]
        if not isinstance(var_node, ast.Name):
            raise self.ctx.fail("T.Let binds a name", var_node)
        value = self.parse(where.values[0])
        var = tir.Var(var_node.id, value.dtype, span=self.ctx.span(var_node))
        inner = PrimExprParser(self.ctx, self.scope.child(), self.default_int_dtype)
        inner.scope.define(var_node.id, var)
        return tir.Let(var, value, inner.parse(node.args[0]))

    def _abs(self, node: ast.Call) -> Operand:
        # As TVM's abs: a float calls fabs, a signed integer selects, unsigned is itself.
        self.check_arity(node, "abs", 1, 1)
        value = self.value(node.args[0])
        if not isinstance(value, tir.PrimExpr):
            return abs(value)
        if dt.is_float(value.dtype):
            return tir.Call(value.dtype, "tir.fabs", (value,))
        if dt.is_int(value.dtype):
            return tir.Select(tir_ops.binary(tir.GE, value, 0), value, tir_ops.negate(value))
        return value

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


_SPECIAL_HANDLERS: dict[str, Callable[[PrimExprParser, ast.Call], Operand]] = {
    "Cast": PrimExprParser._cast,
    "Select": PrimExprParser._select,
    "Ramp": PrimExprParser._ramp,
    "Broadcast": PrimExprParser._broadcast,
    "Let": PrimExprParser._let,
    "abs": PrimExprParser._abs,
    "min_value": PrimExprParser._limit,
    "max_value": PrimExprParser._limit,
    "tvm_struct_get": PrimExprParser._struct_get,
    "StringImm": PrimExprParser._string,
    "Not": PrimExprParser._not,
    "Shuffle": PrimExprParser._shuffle,
}

_PYTHON_BITWISE: dict[str, Callable] = {
    "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
    "shift_left": lambda a, b: a << b,
    "shift_right": lambda a, b: a >> b,
}


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


def _with_span(expr: tir.PrimExpr, span) -> tir.PrimExpr:
    # Variables are shared by identity: never copy one to attach a use-site span.
    if isinstance(expr, tir.Var) or span is None:
        return expr
    return expr.with_fields(span=span)


def _describe(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - only used for messages
        return type(node).__name__


def _describe_op(op: ast.AST) -> str:
    return {ast.Pow: "**", ast.MatMult: "@", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}.get(
        type(op), type(op).__name__
    )
