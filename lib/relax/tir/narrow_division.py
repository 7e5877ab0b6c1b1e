"""narrow-division: floor division becomes C division where the two agree.

For a dividend that is provably non-negative (from loop ranges and sizes, as in
simplify) and a positive constant divisor, floor and truncating division give the
same result, and the truncating one is a single machine instruction (sdiv/srem,
which LLVM strength-reduces for constants) where floor division needs a sign
correction. This is what TVM's intrinsic lowering does before code generation. It
runs after simplify, whose rules are written for the floor forms.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from .arith.bounds import bound
from .rewrite import Rewriter
from .simplify import shape_env, Simplifier


class _DivisionNarrower(Rewriter):
    def __init__(self, env: dict):
        self.env = env

    def _narrow(self, node):
        node = self.generic_visit(node)
        kind, _, lanes = dt.parse(node.dtype)
        divisor = node.b.value if isinstance(node.b, tir.IntImm) else None
        if kind != "int" or lanes != 1 or divisor is None or divisor <= 0:
            return node
        low = bound(node.a, self.env).lo
        if low is None or low < 0:
            return node
        narrow = tir.Div if isinstance(node, tir.FloorDiv) else tir.Mod
        return narrow(node.a, node.b, span=node.span)

    visit_FloorDiv = visit_FloorMod = _narrow


class _Narrower(Simplifier):
    """Walks statements with the loop ranges of simplify; rewrites only divisions."""

    def expr(self, expr):
        return _DivisionNarrower(self.env).visit(expr)


class NarrowDivision:
    """The pass object: `NarrowDivision().run(func)`.

    Before:

        for i in range(64):
            B[i // 4] = A[i % 4]            # FloorDiv, FloorMod

    After:

        for i in range(64):
            B[T.truncdiv(i, 4)] = A[T.truncmod(i, 4)]     # Div, Mod
    """

    name = "narrow-division"

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        return func.with_fields(body=_Narrower(shape_env(func)).visit(func.body))
