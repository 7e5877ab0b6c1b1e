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
import keyword
from typing import Callable

from ..ir import dtype as dt
from ..ir import tir
from ..records import record
from . import literal_limits, tir_expr_queries, tir_ops
from .ast_nodes import METADATA_MESSAGE, is_metadata
from .context import ParseAbort, ParseContext, Scope
from .literal_limits import LiteralError
from .tir_ops import Operand
from .tir_prim_calls import (  # noqa: F401 - the dtype-name helpers are used from here too
    PrimCallParser, _describe, is_dtype_name, is_known_dtype, known_call_names, unknown_name_message,
)

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
@record
class LocalScalar:
    """What a scope holds for `x: T.int32 = v`: a one-element local buffer that reads
    as `x` (a load of x[0]) and is assigned with `x = ...` (a store to x[0])."""

    buffer: tir.Buffer

    def load(self, span=None) -> tir.BufferLoad:
        return tir.BufferLoad(self.buffer, (tir.IntImm("int32", 0),), span=span)


class Poisoned:
    """What a scope holds for a name whose declaration had an error: its uses are
    skipped quietly instead of being reported once more."""


POISONED = Poisoned()




def parse_prim_expr(
    node: ast.expr, ctx: ParseContext, scope: Scope, default_int_dtype: str = "int32"
) -> tir.PrimExpr:
    """The PrimExpr that `node` spells; bare integer literals take default_int_dtype."""
    return PrimExprParser(ctx, scope, default_int_dtype).parse(node)


def embedded_expression(node: ast.Constant, ctx: ParseContext, report: bool = True) -> ast.expr:
    """The expression inside a string, as TVM prints symbolic dims: `("n * T.int64(8)",)`.

    Locations are moved onto the string in the source, so errors point into it.
    """
    text = node.value.strip()
    try:
        # A bare name (a dtype, a size variable) is most strings: its tree needs no parse
        # (ASCII only: the parser would NFKC-normalize other names).
        parsed = (ast.Name(text, ast.Load(), lineno=1, col_offset=0, end_lineno=1, end_col_offset=len(text))
                  if text.isascii() and text.isidentifier() and not keyword.iskeyword(text)
                  else ast.parse(text, mode="eval").body)
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


class PrimExprParser(PrimCallParser):
    """Parses expressions in one scope; `value()` keeps bare literals as Python numbers."""

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
        value = self.value(node)
        try:
            return self.finish(value)
        except LiteralError as error:
            raise self.ctx.fail(str(error), node) from None

    def finish(self, value: Operand) -> tir.PrimExpr:
        return tir_ops.as_expr(value, self.default_int_dtype)

    def value(self, node: ast.expr) -> Operand:
        visitor = self._visitors.get(type(node))
        if visitor is None:
            raise self.ctx.fail(f"'{_describe(node)}' is not a TIR expression", node)
        try:
            result = visitor(node)
        except (LiteralError, OverflowError) as error:  # where a literal meets its type: at the innermost node
            raise self.ctx.fail(str(error), node) from None
        if isinstance(result, tir.PrimExpr) and result.span is None:
            result = _with_span(result, self.ctx.span(node))
        return result

    def dtype_string(self, node: ast.expr) -> str:
        """A dtype written as a string ("float32") or as a type name (T.float32)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        else:
            if isinstance(node, ast.Attribute) and node.attr == "ty" and isinstance(node.value, ast.Call):
                node = node.value.func  # `T.handle("float32", "global").ty`: a pointer is a handle
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
            literal_limits.check_float_text(node.value)  # 1e999: read by Python as inf
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
        if isinstance(found, Poisoned):
            raise ParseAbort(node.id)
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
        if isinstance(node.op, ast.Pow) and not isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
            return literal_limits.power(a, b)  # plain Python arithmetic on literals, as evaluating the text would
        intrinsic = _BITWISE_OPERATORS.get(type(node.op))
        if intrinsic is None:
            raise self.ctx.fail(f"operator '{_describe_op(node.op)}' is not supported in TIR", node)
        if not isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
            if isinstance(a, float) or isinstance(b, float):
                raise self.ctx.fail(f"operator '{_describe_op(node.op)}' needs integers, not floats", node)
            return _PYTHON_BITWISE[intrinsic](a, b)
        a, b = tir_ops.match_types(a, b)
        tir_ops.require_number(a, f"operator '{_describe_op(node.op)}'")
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
            if isinstance(operand, float):
                raise self.ctx.fail("operator '~' needs an integer, not a float", node)
            return ~operand
        tir_ops.require_number(operand, "operator '~'")
        return tir.Call(operand.dtype, "tir.bitwise_not", (operand,))

    def _boolop(self, node: ast.BoolOp) -> Operand:
        node_type = tir.And if isinstance(node.op, ast.And) else tir.Or
        result = self.value(node.values[0])
        for operand in node.values[1:]:
            result = self._logical(node_type, result, lambda operand=operand: self.value(operand))
        return result

    @staticmethod
    def _logical(node_type: type, left: Operand, right: Callable[[], Operand]) -> Operand:
        """`left and right` / `left or right`. A Python value on the left decides as
        Python does (TVM evaluates the text so): `True or x` is True, x is not read."""
        if not isinstance(left, tir.PrimExpr):
            decided = (not left) if node_type is tir.And else bool(left)
            return left if decided else right()
        return tir_ops.binary(node_type, left, right())

    def _compare(self, node: ast.Compare) -> Operand:
        # `a < b < c` means `a < b and b < c`, each operand read once.
        left = self.value(node.left)
        result: Operand | None = None
        for op, right_node in zip(node.ops, node.comparators):
            node_type = _COMPARISONS.get(type(op))
            if node_type is None:
                raise self.ctx.fail(f"operator '{_describe_op(op)}' is not supported in TIR", node)
            right = self.value(right_node)
            term = tir_ops.compare(node_type, left, right)
            result = term if result is None else self._logical(tir.And, result, lambda term=term: term)
            left = right
        return result

    # -- buffer loads ------------------------------------------------------------
    def _subscript(self, node: ast.Subscript) -> Operand:
        if is_metadata(node):
            raise self.ctx.fail(METADATA_MESSAGE, node)
        buffer = self.buffer(node.value)
        indices = self.indices(node, buffer)
        return tir.BufferLoad(buffer, indices)

    def buffer(self, node: ast.expr) -> tir.Buffer:
        if isinstance(node, ast.Name):
            found = self.scope.lookup(node.id)
            if isinstance(found, tir.Buffer):
                return found
            if isinstance(found, Poisoned):
                raise ParseAbort(node.id)
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
        indices = tuple(self.vector_index(n) if isinstance(n, ast.Slice) else self.parse(n) for n in nodes)
        for index, node in zip(indices, nodes):
            require_integer(self.ctx, index, node, "a buffer index", vector=True)
        return indices

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
        lanes = tir_expr_queries.constant_difference(stop, start)
        if lanes is None or not isinstance(stride, tir.IntImm) or stride.value <= 0:
            raise self.ctx.fail("a vector index needs a constant length and step", node)
        count = -(-lanes // stride.value)
        return start if count == 1 else tir.Ramp(start, stride, count)

    # -- T.<name>(...) calls -------------------------------------------------------
_PYTHON_BITWISE: dict[str, Callable] = {
    "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
    "shift_left": literal_limits.shift_left,
    "shift_right": literal_limits.shift_right,
}


def require_integer(ctx: ParseContext, value, node: ast.expr, what: str, vector: bool = False):
    """`value`, refused unless of an integer type (of one lane unless `vector`), as TVM's parser
    requires of loop bounds, buffer dimensions and indices: a float there once reached LLVM
    code generation (T.grid(8, 1e-45) as an integer add of floats, A[T.float32(1.5)] as a
    float-to-i64 cast) and failed with an internal error."""
    if dt.kind(value.dtype) not in ("int", "uint") or (not vector and dt.lanes(value.dtype) != 1):
        raise ctx.fail(f"{what} must be an integer, not {value.dtype}", node)
    return value


def _with_span(expr: tir.PrimExpr, span) -> tir.PrimExpr:
    # Variables are shared by identity: never copy one to attach a use-site span.
    if isinstance(expr, tir.Var) or span is None:
        return expr
    return expr.with_fields(span=span)


def _describe_op(op: ast.AST) -> str:
    return {ast.Pow: "**", ast.MatMult: "@", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
            ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}.get(
        type(op), type(op).__name__
    )
