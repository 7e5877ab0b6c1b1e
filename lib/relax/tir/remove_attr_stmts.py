"""remove-attr-stmts: AttrStmt hints are dropped, their bodies kept.

Before:

    with T.attr(0, "pragma_unroll", 1):
        B[0] = A[0]

After:

    B[0] = A[0]

The lowered form carries its facts elsewhere (loop kinds and thread tags on For,
storage annotations on Allocate), so a stray hint must not reach the code generator.
"""

from __future__ import annotations

from ..ir import tir
from .rewrite import Rewriter


class _Remover(Rewriter):
    def visit_AttrStmt(self, stmt: tir.AttrStmt):
        return self.visit(stmt.body)


class RemoveAttrStmts:
    """The pass object: `RemoveAttrStmts().run(func)`."""

    name = "remove-attr-stmts"

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        return func.with_fields(body=_Remover().visit(func.body))
