"""lower-attr-stmts: thread launches become thread-bound loops; other hints go away.

The lowered form states launches one way only (For of kind "thread_binding" with its
`thread_tag`), and carries no other AttrStmt: loop kinds, thread tags and storage
annotations hold every fact a code generator needs. "virtual_thread" launches
become thread-bound loops too, tagged "vthread".
"""

from __future__ import annotations

from ..ir import tir
from .rewrite import Rewriter

THREAD_LAUNCH_KEYS = ("thread_extent", "virtual_thread")


class _Lowerer(Rewriter):
    statements_only = True

    def visit_AttrStmt(self, stmt: tir.AttrStmt):
        body = self.visit(stmt.body)
        if stmt.attr_key in THREAD_LAUNCH_KEYS and isinstance(stmt.node, tir.IterVar):
            iter_var = stmt.node
            tag = iter_var.thread_tag or ("vthread" if stmt.attr_key == "virtual_thread" else "")
            start = iter_var.dom.min if iter_var.dom is not None else tir.IntImm(stmt.value.dtype, 0)
            return tir.For(iter_var.var, start, stmt.value, "thread_binding", body, thread_tag=tag,
                           span=stmt.span)
        return body


class LowerAttrStmts:
    """The pass object: `LowerAttrStmts().run(func)`.

    Before:

        bx = T.launch_thread("blockIdx.x", 8)          # AttrStmt "thread_extent"
        with T.attr(0, "pragma_unroll", 1):
            B[bx] = A[bx]

    After:

        for bx in T.thread_binding(8, thread="blockIdx.x"):
            B[bx] = A[bx]
    """

    name = "lower-attr-stmts"

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        return func.with_fields(body=_Lowerer().visit(func.body))
