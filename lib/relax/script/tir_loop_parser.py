"""TIR loops: `for i in range(...)`, `T.grid(...)`, `T.serial/parallel/vectorized/unroll(...)`
and `T.thread_binding(...)`, each a For over a fresh loop variable.

A mixin of the statement parser (tir_stmt_parser.StmtParser): it reads the loop's
iterator call (kind, annotations, thread tag, bounds) and parses the body in a scope
holding the loop variables. Bounds must be integers, as TVM's parser requires.
"""

from __future__ import annotations

import ast

from ..ir import EMPTY, tir
from . import tir_expr_queries, tir_ops
from .context import Scope
from .prim_expr import PrimExprParser, require_integer
from .tir_values import parse_attr_dict

# `for i in T.<name>(...)` -> For kind.
LOOP_KINDS = {
    "serial": "serial",
    "parallel": "parallel",
    "vectorized": "vectorized",
    "unroll": "unrolled",
    "thread_binding": "thread_binding",
}


class LoopParser:
    """The loop statements of StmtParser (which provides ctx, exprs, body and loop_ranges)."""

    def _for(self, stmt: ast.For, scope: Scope) -> tir.Stmt:
        if stmt.orelse:
            raise self.ctx.fail("a TIR loop has no 'else'", stmt.orelse[0])
        call = stmt.iter
        if not isinstance(call, ast.Call):
            raise self.ctx.fail("a TIR loop iterates over range(...), T.grid(...) or T.serial(...)", call)
        targets = stmt.target.elts if isinstance(stmt.target, ast.Tuple) else [stmt.target]
        kind, annotations, thread, bounds = self.loop_header(call, scope)
        if kind != "grid" and len(targets) != 1:
            raise self.ctx.fail("only T.grid binds several loop variables", stmt.target)
        if kind == "grid" and len(targets) != len(bounds):
            raise self.ctx.fail(f"T.grid has {len(bounds)} extents but {len(targets)} loop variables", stmt.target)
        inner = scope.child()
        loops = []
        for target, (low, extent) in zip(targets, bounds):
            if not isinstance(target, ast.Name):
                raise self.ctx.fail("a loop variable is a name", target)
            var = tir.Var(target.id, extent.dtype, span=self.ctx.span(target))
            inner.define(target.id, var)
            self.loop_ranges[var] = tir.Range(low, extent)
            loops.append((var, low, extent))
        body = self.body(stmt.body, inner)
        for var, low, extent in reversed(loops):
            body = tir.For(var, low, extent, "serial" if kind == "grid" else kind, body, thread_tag=thread,
                           annotations=annotations, span=self.ctx.span(stmt))
        return body

    def loop_header(self, call: ast.Call, scope: Scope):
        """(kind, annotations, thread tag, [(min, extent)]) of a loop's iterator call."""
        if isinstance(call.func, ast.Name) and call.func.id == "range":
            name = "serial"
        else:
            dialect = self.ctx.dialect_of(call.func)
            name = dialect[1] if dialect and dialect[0] == "tir" else None
            if name != "grid" and name not in LOOP_KINDS:
                shown = f"T.{name}" if name else ast.unparse(call.func)
                raise self.ctx.fail(f"'{shown}' is not a TIR loop; expected range, T.grid, " + ", ".join(f"T.{k}" for k in LOOP_KINDS), call.func)
        keywords = {k.arg: k.value for k in call.keywords}
        allowed = {"annotations", "thread"} if name == "thread_binding" else {"annotations"}
        for key, value in keywords.items():
            if key not in allowed:
                raise self.ctx.fail(f"unexpected keyword '{key}' in a loop", value)
        annotations = parse_attr_dict(keywords["annotations"], self.ctx, scope) if "annotations" in keywords else EMPTY
        exprs = self.exprs(scope)
        if name == "grid":
            return "grid", EMPTY, "", [self.bounds([e], exprs, call) for e in call.args]
        args = list(call.args)
        thread = ""
        if name == "thread_binding":
            if "thread" in keywords:
                thread = self.string_literal(keywords["thread"])
            elif args and isinstance(args[-1], ast.Constant) and isinstance(args[-1].value, str):
                thread = args.pop().value
            else:
                raise self.ctx.fail("T.thread_binding needs thread=\"threadIdx.x\" (or another thread)", call)
        return LOOP_KINDS[name], annotations, thread, [self.bounds(args, exprs, call)]

    def bounds(self, args: list[ast.expr], exprs: PrimExprParser, call: ast.Call):
        """(min, extent) from `(extent)`, `(start, stop)` or a `(start, stop)` tuple in T.grid."""
        if len(args) == 1 and isinstance(args[0], ast.Tuple):
            args = args[0].elts
        if len(args) == 1:
            extent = require_integer(self.ctx, exprs.parse(args[0]), args[0], "a loop bound")
            return tir_ops.make_const(0, extent.dtype), extent
        if len(args) == 2:
            start, stop = tir_ops.match_types(exprs.value(args[0]), exprs.value(args[1]))
            for value, node in ((start, args[0]), (stop, args[1])):
                require_integer(self.ctx, value, node, "a loop bound")
            return start, tir_expr_queries.extent_between(start, stop)
        raise self.ctx.fail("a loop takes an extent or a start and a stop", call)
