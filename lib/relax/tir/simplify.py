"""simplify: arithmetic simplification of every expression, knowing loop ranges.

Expressions are rewritten by arith.ExprSimplifier with the interval of every loop
variable in scope (`min <= v < min + extent`, from whatever bounds of min and extent
are known), symbolic buffer extents known to be non-negative, and the bounds a
condition `v < c` (and its kin) gives inside its `then` branch. Statements: a loop
of extent 0 disappears, a loop of extent 1 becomes its body with the variable
replaced by `min` (not thread-bound loops), an `if` on a constant keeps one branch,
`assert True` disappears, nested SeqStmts are flattened and no-ops dropped. Buffer
shapes are simplified once per buffer, so one buffer stays one object.
"""

from __future__ import annotations

from ..ir import tir
from .arith.bounds import Interval, bound
from .arith.simplifier import ExprSimplifier
from .rewrite import Rewriter, Substituter


def _no_op() -> tir.Stmt:
    return tir.Evaluate(tir.IntImm("int32", 0))


def _is_no_op(stmt) -> bool:
    return isinstance(stmt, tir.Evaluate) and isinstance(stmt.value, (tir.IntImm, tir.FloatImm))


def _const(expr):
    return expr.value if isinstance(expr, tir.IntImm) else None


def _refine(env: dict, condition) -> dict:
    """Bounds that hold where `condition` (a conjunction of `var OP const`) is true."""
    if isinstance(condition, tir.And):
        return _refine(_refine(env, condition.a), condition.b)
    if not isinstance(condition, (tir.LT, tir.LE, tir.GT, tir.GE, tir.EQ)):
        return env
    var, value, op = condition.a, _const(condition.b), type(condition).__name__
    if not isinstance(var, tir.Var) or value is None:
        return env
    lo, hi = bound(var, env)
    if op in ("LT", "LE"):
        limit = value - 1 if op == "LT" else value
        hi = limit if hi is None else min(hi, limit)
    elif op in ("GT", "GE"):
        limit = value + 1 if op == "GT" else value
        lo = limit if lo is None else max(lo, limit)
    else:
        lo = hi = value
    return {**env, var: Interval(lo, hi)}


class Simplifier(Rewriter):
    def __init__(self, env: dict):
        self.env = env
        self.ranges: dict = {}
        # The variables of enclosing loops of extent 1, each replaced by its loop's start as
        # the body is visited (one walk, not a substitution and then a walk of the result).
        self.replace: dict = {}
        self._replacer: Substituter | None = None
        self._buffers: dict[int, tuple] = {}  # id -> (buffer, simplified): held, so ids stay unique

    def expr(self, expr):
        return _ExprSimplifier(self, self.env, self.ranges).visit(expr)

    def visit_Buffer(self, buffer):
        if self._replacer is not None:
            buffer = self._replacer.visit_Buffer(buffer)  # the same buffer when its shape has none
        entry = self._buffers.get(id(buffer))
        if entry is None:
            shape = tuple(ExprSimplifier({}).visit(extent) for extent in buffer.shape)
            same = all(a is b for a, b in zip(shape, buffer.shape))
            entry = self._buffers[id(buffer)] = (buffer, buffer if same else buffer.with_fields(shape=shape))
        return entry[1]

    def generic_visit(self, node):
        if isinstance(node, tir.PrimExpr):
            return self.expr(node)
        return super().generic_visit(node)

    def _scoped(self, env, node, ranges=None):
        saved = self.env, self.ranges
        self.env = env
        self.ranges = ranges if ranges is not None else self.ranges
        try:
            return self.visit(node)
        finally:
            self.env, self.ranges = saved

    def visit_For(self, loop):
        start, extent = self.expr(loop.min), self.expr(loop.extent)
        count = _const(extent)
        if count is not None and count <= 0:
            return _no_op()
        if count == 1 and loop.kind != "thread_binding":
            return self._replacing(loop.loop_var, start, loop.body)
        low, high = bound(start, self.env).lo, None
        start_hi, extent_hi = bound(start, self.env).hi, bound(extent, self.env).hi
        if start_hi is not None and extent_hi is not None:
            high = start_hi + extent_hi - 1
        last = self.expr(tir.Sub(tir.Add(start, extent), tir.IntImm(extent.dtype, 1))) \
            if start.dtype == extent.dtype else None
        ranges = {**self.ranges, loop.loop_var: (start, last)}
        body = self._scoped({**self.env, loop.loop_var: Interval(low, high)}, loop.body, ranges)
        if _is_no_op(body):
            return _no_op()
        return loop.with_fields(min=start, extent=extent, body=body)

    def _replacing(self, var, value, body):
        """`body` visited with `var` replaced by `value` wherever it occurs."""
        saved = self.replace, self._replacer
        self.replace = {**self.replace, var: value}
        self._replacer = Substituter(self.replace)
        try:
            return self.visit(body)
        finally:
            self.replace, self._replacer = saved

    def visit_IfThenElse(self, stmt):
        condition = self.expr(stmt.condition)
        value = _const(condition)
        if value is not None:
            chosen = stmt.then_case if value else stmt.else_case
            return self.visit(chosen) if chosen is not None else _no_op()
        then_case = self._scoped(_refine(self.env, condition), stmt.then_case)
        else_case = self.visit(stmt.else_case) if stmt.else_case is not None else None
        if else_case is not None and _is_no_op(else_case):
            else_case = None
        if _is_no_op(then_case) and else_case is None:
            return _no_op()
        return stmt.with_fields(condition=condition, then_case=then_case, else_case=else_case)

    def visit_LetStmt(self, stmt):
        value = self.expr(stmt.value)
        env = {**self.env, stmt.var: bound(value, self.env)}
        return stmt.with_fields(value=value, body=self._scoped(env, stmt.body))

    def visit_AssertStmt(self, stmt):
        condition = self.expr(stmt.condition)
        if _const(condition) == 1:
            return self.visit(stmt.body)
        return stmt.with_fields(condition=condition, body=self.visit(stmt.body))

    def visit_SeqStmt(self, stmt):
        flat = []
        for child in stmt.seq:
            child = self.visit(child)
            if isinstance(child, tir.SeqStmt):
                flat.extend(child.seq)
            elif not _is_no_op(child):
                flat.append(child)
        if not flat:
            return _no_op()
        return flat[0] if len(flat) == 1 else tir.SeqStmt(tuple(flat), span=stmt.span)


class _ExprSimplifier(ExprSimplifier):
    """ExprSimplifier that also gives the buffers inside an expression their memoized
    simplified form (`owner.visit_Buffer`). Every node it simplifies has its children
    visited first, so the buffers are swapped in the same walk, not in a separate
    rewrite of each expression beforehand."""

    def __init__(self, owner: Simplifier, env: dict, ranges: dict):
        super().__init__(env, ranges)
        self.owner = owner

    def visit_Var(self, var):
        owner = self.owner
        value = owner.replace.get(var)
        if value is None:
            return var
        # The start is simplified again where it lands, as a substituted copy would be, and
        # nothing in it is replaced in turn (a substitution replaces once).
        saved = owner.replace, owner._replacer
        owner.replace, owner._replacer = {}, None
        try:
            return self.visit(value)
        finally:
            owner.replace, owner._replacer = saved

    visit_SizeVar = visit_Var

    def visit_Buffer(self, buffer):
        return self.owner.visit_Buffer(buffer)


def shape_env(func: tir.PrimFunc) -> dict:
    """Symbolic extents of parameter buffers are sizes: at least zero."""
    env = {}
    for _, buffer in func.buffer_map:
        for extent in buffer.shape:
            if isinstance(extent, tir.Var):
                env[extent] = Interval(0, None)
    return env


class Simplify:
    """The pass object: `Simplify().run(func)`.

    Before:

        for i in range(16):
            for j in range(128):
                for k in range(1):
                    if i < 16:
                        B[floordiv(i * 128 + j, 128) * 128 + floormod(i * 128 + j, 128) + k * 0] = A[...]

    After:

        for i in range(16):
            for j in range(128):
                B[i * 128 + j] = A[...]
    """

    name = "simplify"

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        simplifier = Simplifier(shape_env(func))
        return func.with_fields(body=simplifier.visit(func.body))
