"""Refuses a TIR kernel whose loops take a buffer access outside the buffer, at the access.

A kernel written in the source (a T.prim_func) is compiled as written: one whose loop
runs past its buffer (an extent larger than the dimension it indexes) would read or write
out of bounds when it runs, a crash or silent corruption. For every load and store whose
index range follows from the enclosing loops, block iterators and lets (interval
arithmetic over constant extents, tir/arith/bounds.py) and whose buffer dimension is a
constant, a range reaching outside [0, dimension) is an error. An access under a
condition (an if, a block predicate, T.if_then_else, a select) is not judged: the
condition may keep it in range. Indices read from data are unbounded here; kernels check
those at run time (T.checked_index).
"""

from __future__ import annotations

from ..diagnostics import Diagnostic
from ..ir import tir_expr as tir
from ..ir import tir_stmt as stmt
from .arith.bounds import UNBOUNDED, Interval, bound

# Calls whose operands are evaluated only under a condition.
CONDITIONAL_CALLS = frozenset({"tir.if_then_else"})


def out_of_bounds_diagnostics(mod) -> list[Diagnostic]:
    """One error per access of `mod`'s PrimFuncs that every bound places outside its buffer."""
    diagnostics: list[Diagnostic] = []
    for name, func in mod.functions.items():
        if isinstance(func, stmt.PrimFunc):
            _Checker(name, diagnostics).statement(func.body, {})
    return diagnostics


def _range(low, extent) -> Interval:
    if isinstance(low, tir.IntImm) and isinstance(extent, tir.IntImm) and extent.value > 0:
        return Interval(low.value, low.value + extent.value - 1)
    return UNBOUNDED


class _Checker:
    def __init__(self, func_name: str, diagnostics: list[Diagnostic]):
        self.func_name = func_name
        self.diagnostics = diagnostics

    def statement(self, node, env: dict) -> None:
        if isinstance(node, stmt.For):
            self.expression(node.min, env)
            self.expression(node.extent, env)
            self.statement(node.body, {**env, node.loop_var: _range(node.min, node.extent)})
        elif isinstance(node, stmt.BlockRealize):
            self.block(node, env)
        elif isinstance(node, stmt.IfThenElse):
            self.expression(node.condition, env)  # the branches are guarded: not judged
        elif isinstance(node, stmt.LetStmt):
            self.expression(node.value, env)
            self.statement(node.body, {**env, node.var: bound(node.value, env)})
        elif isinstance(node, stmt.SeqStmt):
            for item in node.seq:
                self.statement(item, env)
        elif isinstance(node, stmt.BufferStore):
            self.access(node, env)
            self.expression(node.value, env)
        elif isinstance(node, stmt.Evaluate):
            self.expression(node.value, env)
        elif getattr(node, "body", None) is not None:
            self.statement(node.body, env)

    def block(self, realize: stmt.BlockRealize, env: dict) -> None:
        if not (isinstance(realize.predicate, tir.IntImm) and realize.predicate.value == 1):
            return  # a predicated block (T.where) is guarded
        inner = dict(env)
        for iter_var, value in zip(realize.block.iter_vars, realize.iter_values):
            declared = _range(iter_var.dom.min, iter_var.dom.extent) if iter_var.dom is not None else UNBOUNDED
            bound_value = bound(value, env)
            # The tighter of the declared domain and what the binding takes.
            inner[iter_var.var] = bound_value if declared == UNBOUNDED else declared
        if realize.block.init is not None:
            self.statement(realize.block.init, inner)
        self.statement(realize.block.body, inner)

    def expression(self, expr, env: dict) -> None:
        if isinstance(expr, tir.BufferLoad):
            self.access(expr, env)
            for index in expr.indices:
                self.expression(index, env)
        elif isinstance(expr, tir.Select):
            self.expression(expr.condition, env)
        elif isinstance(expr, tir.Call):
            if expr.op not in CONDITIONAL_CALLS:
                for arg in expr.args:
                    self.expression(arg, env)
        elif isinstance(expr, tir.Let):
            self.expression(expr.value, env)
            self.expression(expr.body, {**env, expr.var: bound(expr.value, env)})
        elif isinstance(expr, (tir.BinaryOp, tir.Not, tir.Cast)):
            for child in (getattr(expr, "a", None), getattr(expr, "b", None), getattr(expr, "value", None)):
                if child is not None:
                    self.expression(child, env)

    def access(self, node, env: dict) -> None:
        buffer = node.buffer
        if len(node.indices) != len(buffer.shape):
            return  # a flattened or reshaped view: judged by its own form
        for axis, (index, dim) in enumerate(zip(node.indices, buffer.shape)):
            if not isinstance(dim, tir.IntImm):
                continue
            interval = bound(index, env)
            if interval.lo is None or interval.hi is None or (interval.lo >= 0 and interval.hi < dim.value):
                continue
            self.diagnostics.append(Diagnostic(
                "error", f"'{self.func_name}' indexes dimension {axis} of buffer '{buffer.name}' (size {dim.value}) "
                         f"with values from {interval.lo} to {interval.hi}: its loops run past the buffer",
                node.span or buffer.span))
            return
