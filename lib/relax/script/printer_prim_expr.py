"""Printing PrimExprs: TIR index arithmetic, constants, casts and intrinsic calls.

The same expressions appear in two settings. Inside a PrimFunc, int32 constants are
bare and other types are wrapped (`T.int64(3)`); inside Relax (shapes, prim values)
int64 is the bare one. Operators print as Python operators with TVM's
parenthesization, except when both operands are constants, where TVM prints the
call form (`T.Add(1, 2)`) so that Python does not fold it on re-parse.

The parser builds operators and `T.min`, `T.max`, `T.truncmod` through TVM's folding
operators (tir_ops.binary), so a node such as `x % 1` or `T.min(2, 3)` that a pass
built as written reads back as another expression (`0`, `2`). The printer notes each
such node in its context (`PrintContext.reads_back_folded`): what it printed then does
not read back as itself (driver/printed_kernels.py reads such a kernel back).
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from . import printer_doc as doc
from . import tir_ops
from .printer_doc import Expr

# Binary node -> (operator, precedence, name of the call form).
_OPERATORS = {
    tir.Add: ("+", doc.PREC_ADD, "Add"),
    tir.Sub: ("-", doc.PREC_ADD, "Sub"),
    tir.Mul: ("*", doc.PREC_MULT, "Mul"),
    tir.FloorDiv: ("//", doc.PREC_MULT, "FloorDiv"),
    tir.FloorMod: ("%", doc.PREC_MULT, "FloorMod"),
    tir.LT: ("<", doc.PREC_COMPARE, "LT"),
    tir.LE: ("<=", doc.PREC_COMPARE, "LE"),
    tir.GT: (">", doc.PREC_COMPARE, "GT"),
    tir.GE: (">=", doc.PREC_COMPARE, "GE"),
    tir.EQ: ("==", doc.PREC_COMPARE, "EQ"),
    tir.NE: ("!=", doc.PREC_COMPARE, "NE"),
    tir.And: ("and", doc.PREC_AND, "And"),
    tir.Or: ("or", doc.PREC_OR, "Or"),
}

# Intrinsic calls that TVM prints as Python operators.
_OPERATOR_CALLS = {
    "tir.bitwise_and": ("&", 9),
    "tir.bitwise_or": ("|", 7),
    "tir.bitwise_xor": ("^", 8),
    "tir.shift_left": ("<<", 10),
    "tir.shift_right": (">>", 10),
}

# Intrinsics whose result type is written as their first argument.
_DTYPE_FIRST = frozenset({
    "tir.call_extern", "tir.call_pure_extern", "tir.call_llvm_intrin", "tir.call_llvm_pure_intrin",
    "tir.call_intrin", "tir.reinterpret", "tir.type_annotation",
})


def is_constant(expr) -> bool:
    return isinstance(expr, (tir.IntImm, tir.FloatImm))


class PrimExprPrinter:
    """Prints PrimExprs; `bare_int` is the dtype printed without a `T.` wrapper."""

    def __init__(self, ctx, bare_int: str = "int32", on_free_var=None):
        self.ctx = ctx
        self.bare_int = bare_int
        self.on_free_var = on_free_var  # called with an undefined Var, returns its name
        self.scalars: set = set()  # local scalar buffers, which read as their bare name

    # -- leaves ------------------------------------------------------------------
    def var(self, var: tir.Var) -> Expr:
        name = self.ctx.name_of(var)
        if name is None:
            if self.on_free_var is None:
                name = self.ctx.define(var, var.name)
            else:
                name = self.on_free_var(var)
        return Expr(name)

    def int_imm(self, node: tir.IntImm) -> Expr:
        if node.dtype == "bool" and self.bare_int == "int64":
            return Expr(doc.bool_text(bool(node.value)))  # Relax prints prim bools bare
        if node.dtype == "bool":
            return Expr(f"{self.ctx.tir('bool')}({doc.bool_text(bool(node.value))})")
        if node.dtype == self.bare_int:
            return Expr(doc.int_text(node.value))
        return Expr(f"{self.ctx.tir(node.dtype)}({doc.int_text(node.value)})")

    def float_imm(self, node: tir.FloatImm) -> Expr:
        return Expr(f"{self.ctx.tir(node.dtype)}({doc.float_text(node.value)})")

    # -- the dispatcher ----------------------------------------------------------
    def expr(self, node) -> Expr:
        method = _DISPATCH.get(type(node))
        if method is None:
            for cls in type(node).__mro__:
                method = _DISPATCH.get(cls)
                if method is not None:
                    break
        if method is None:
            raise TypeError(f"cannot print {type(node).__name__} as a PrimExpr")
        return method(self, node)

    def binary_op(self, node: tir.BinaryOp) -> Expr:
        op, precedence, call_name = _OPERATORS[type(node)]
        left, right = self.expr(node.a), self.expr(node.b)
        if is_constant(node.a) and is_constant(node.b):
            return doc.call(self.ctx.tir(call_name), [left, right])
        self._note_fold(node)
        return doc.binary(left, op, right, precedence)

    def div(self, node: tir.Div) -> Expr:
        left, right = self.expr(node.a), self.expr(node.b)
        if dt.is_float(node.a.dtype) and not (is_constant(node.a) and is_constant(node.b)):
            self._note_fold(node)
            return doc.binary(left, "/", right, doc.PREC_MULT)
        return doc.call(self.ctx.tir("Div"), [left, right])

    def mod(self, node: tir.Mod) -> Expr:
        self._note_fold(node)
        return doc.call(self.ctx.tir("truncmod"), [self.expr(node.a), self.expr(node.b)])

    def min_max(self, node) -> Expr:
        name = "min" if isinstance(node, tir.Min) else "max"
        self._note_fold(node)
        return doc.call(self.ctx.tir(name), [self.expr(node.a), self.expr(node.b)])

    def _note_fold(self, node: tir.BinaryOp) -> None:
        """Notes `node` when the parser's builder of its printed form (an operator, or
        T.min, T.max, T.truncmod) gives another expression."""
        if not self.ctx.reads_back_folded and tir_ops.folds(node):
            self.ctx.reads_back_folded = True

    def not_(self, node: tir.Not) -> Expr:
        return doc.unary("not ", self.expr(node.a), doc.PREC_NOT)

    def cast(self, node: tir.Cast) -> Expr:
        return doc.call(self.ctx.tir("Cast"), [doc.string_text(node.dtype), self.expr(node.value)])

    def select(self, node: tir.Select) -> Expr:
        args = [self.expr(node.condition), self.expr(node.true_value), self.expr(node.false_value)]
        return doc.call(self.ctx.tir("Select"), args)

    def ramp(self, node: tir.Ramp) -> Expr:
        args = [self.expr(node.base), self.expr(node.stride), doc.int_text(node.lanes)]
        return doc.call(self.ctx.tir("Ramp"), args)

    def broadcast(self, node: tir.Broadcast) -> Expr:
        return doc.call(self.ctx.tir("Broadcast"), [self.expr(node.value), doc.int_text(node.lanes)])

    def shuffle(self, node: tir.Shuffle) -> Expr:
        """`T.Shuffle([vectors...], [lane indices...])`, as TVM 0.27 prints it."""
        vectors = doc.list_text([str(self.expr(v)) for v in node.vectors])
        indices = doc.list_text([str(self.expr(i)) for i in node.indices])
        return doc.call(self.ctx.tir("Shuffle"), [vectors, indices])

    def let(self, node: tir.Let) -> Expr:
        value = self.expr(node.value)
        with self.ctx.scope():
            name = self.ctx.define(node.var, node.var.name)
            body = self.expr(node.body)
        return doc.call(self.ctx.tir("Let"), [body], [("where", f"{{{name}: {value}}}")])

    def string_imm(self, node: tir.StringImm) -> Expr:
        return Expr(doc.string_text(node.value))

    def buffer_load(self, node: tir.BufferLoad) -> Expr:
        buffer = self.buffer_name(node.buffer)
        if node.buffer in self.scalars:
            return Expr(buffer)
        return Expr(f"{buffer}[{index_text(self.indices(node.indices))}]")

    def buffer_name(self, buffer: tir.Buffer) -> str:
        name = self.ctx.name_of(buffer)
        if name is None:
            name = self.ctx.define(buffer, buffer.name)
        return name

    def indices(self, indices) -> list[str]:
        """Buffer indices; a constant-stride Ramp prints as a slice."""
        texts = []
        for index in indices:
            if isinstance(index, tir.Ramp) and isinstance(index.stride, tir.IntImm):
                start = self.expr(index.base)
                stop = self.expr(_plus(index.base, index.lanes * index.stride.value))
                step = "" if index.stride.value == 1 else f":{self.expr(index.stride)}"
                texts.append(f"{start}:{stop}{step}")
            else:
                texts.append(self.expr(index))
        return texts

    def call(self, node: tir.Call) -> Expr:
        args = [self.expr(arg) for arg in node.args]
        if not isinstance(node.op, str):  # a call to another function of the module
            callee = node.op.name_hint
            return doc.call(f"{self.ctx.module_name}.{callee}" if self.ctx.module_name else callee, args)
        operator = _OPERATOR_CALLS.get(node.op)
        if operator is not None and len(args) == 2:
            return doc.binary(args[0], operator[0], args[1], operator[1])
        if node.op == "tir.bitwise_not" and len(args) == 1:
            return doc.unary("~", args[0], doc.PREC_UNARY)
        name = node.op[4:] if node.op.startswith("tir.") else node.op
        if node.op in _DTYPE_FIRST:
            args = [doc.string_text(node.dtype)] + args
        return doc.call(self.ctx.tir(name), args)


def index_text(indices: list[str]) -> str:
    """The inside of `A[...]`; a 0-d buffer is indexed with `()`, as TVM prints it."""
    return ", ".join(indices) if indices else "()"


def _plus(base, offset: int):
    """base + offset, folded when base is a constant (as TVM's arithmetic does)."""
    if isinstance(base, tir.IntImm):
        return tir.IntImm(base.dtype, base.value + offset)
    if offset == 0:
        return base
    return tir.Add(base, tir.IntImm(base.dtype, offset))


_DISPATCH = {
    tir.Var: PrimExprPrinter.var,
    tir.IntImm: PrimExprPrinter.int_imm,
    tir.FloatImm: PrimExprPrinter.float_imm,
    tir.StringImm: PrimExprPrinter.string_imm,
    tir.Cast: PrimExprPrinter.cast,
    tir.Div: PrimExprPrinter.div,
    tir.Mod: PrimExprPrinter.mod,
    tir.Min: PrimExprPrinter.min_max,
    tir.Max: PrimExprPrinter.min_max,
    tir.Not: PrimExprPrinter.not_,
    tir.Select: PrimExprPrinter.select,
    tir.Ramp: PrimExprPrinter.ramp,
    tir.Broadcast: PrimExprPrinter.broadcast,
    tir.Shuffle: PrimExprPrinter.shuffle,
    tir.Let: PrimExprPrinter.let,
    tir.BufferLoad: PrimExprPrinter.buffer_load,
    tir.Call: PrimExprPrinter.call,
    **{cls: PrimExprPrinter.binary_op for cls in _OPERATORS},
}
