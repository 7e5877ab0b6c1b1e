"""convert-blocks-to-loops: blocks become the plain statements they stand for.

Block iterators are replaced by their bound values; `init` runs when every
reduction (CommReduce) iterator is at the start of its domain (always, if the
block has none); a predicate other than `True` becomes an IfThenElse around the
block; `alloc_buffers` become Allocate + DeclBuffer around the block body (the
root block's allocations so end up around the whole function body).
"""

from __future__ import annotations

from ..ir import tir
from .errors import LoweringError
from .rewrite import Rewriter, substitute


def _is_true(expr) -> bool:
    return isinstance(expr, tir.IntImm) and expr.value == 1


def _conjunction(conditions):
    result = None
    for condition in conditions:
        result = condition if result is None else tir.And(result, condition)
    return result


def allocation(buffer: tir.Buffer, body: tir.Stmt) -> tir.Stmt:
    """Allocate + DeclBuffer of `buffer` around `body`."""
    return tir.Allocate(buffer.data, buffer.dtype, tuple(buffer.shape), tir.const(True, "bool"),
                        tir.DeclBuffer(buffer, body), scope=buffer.scope)


class BufferData(Rewriter):
    """Gives every buffer without a `data` variable one (allocations need a handle)."""

    def __init__(self):
        self.memo: dict[int, tir.Buffer] = {}

    def visit_Buffer(self, buffer):
        if id(buffer) not in self.memo:
            self.memo[id(buffer)] = buffer if buffer.data is not None else buffer.with_fields(
                data=tir.Var(buffer.name, "handle"))
        return self.memo[id(buffer)]


class _Converter(Rewriter):
    statements_only = True

    def visit_BlockRealize(self, realize: tir.BlockRealize) -> tir.Stmt:
        block = realize.block
        if block.match_buffers:
            raise LoweringError(f"block '{block.name_hint}': match_buffer is not supported yet")
        mapping = {iv.var: value for iv, value in zip(block.iter_vars, realize.iter_values)}
        body = self.visit(block.body)
        if block.init is not None:
            init = self.visit(block.init)
            condition = _conjunction(
                tir.EQ(mapping[iv.var], substitute(iv.dom.min, mapping))
                for iv in block.iter_vars if iv.iter_type == "CommReduce"
            )
            init = init if condition is None else tir.IfThenElse(condition, init)
            body = tir.SeqStmt((init, body))
        body = substitute(body, mapping)
        for buffer in reversed(block.alloc_buffers):
            body = allocation(buffer, body)
        if not _is_true(realize.predicate):
            body = tir.IfThenElse(realize.predicate, body)
        return body

    def visit_Block(self, block: tir.Block) -> tir.Stmt:
        raise LoweringError(f"block '{block.name_hint}' outside a BlockRealize")


class ConvertBlocksToLoops:
    """The pass object: `ConvertBlocksToLoops().run(func)`.

    Before:

        for i, k in T.grid(4, 8):
            with T.block("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.where(i < 3)
                with T.init():
                    B[vi] = 0.0
                B[vi] = B[vi] + A[vi, vk]

    After:

        for i, k in T.grid(4, 8):
            if i < 3:
                if k == 0:
                    B[i] = 0.0
                B[i] = B[i] + A[i, k]
    """

    name = "convert-blocks-to-loops"

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        data = BufferData()
        buffer_map = tuple((var, data.visit(buffer)) for var, buffer in func.buffer_map)
        body = _Converter().visit(data.visit(func.body))
        return func.with_fields(body=body, buffer_map=buffer_map)
