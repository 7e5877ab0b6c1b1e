"""Hand-written loop-nest kernels, for operators a tensor expression cannot say
(scans such as cumsum, scatters that write where an index tensor points).

    x, out = buffer("A", dims, "float32"), buffer("out", dims, "float32")
    body = loop_nest(dims, lambda idx: tir.BufferStore(out, x_load(idx), idx))
    func = prim_func([x, out], body)

The loops run in row-major order, serially: a kernel may read what an earlier
iteration wrote. The body sits in the root block, as TVM's opaque kernels do.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..ir import tir
from ..ir.node import FrozenDict
from .te import INDEX_DTYPE, as_index


def buffer(name: str, dims: Sequence, dtype: str) -> tir.Buffer:
    return tir.Buffer(name, tuple(as_index(d) for d in dims), dtype, tir.Var(name, "handle"))


def loop_nest(dims: Sequence, body: Callable[[tuple[tir.Var, ...]], tir.Stmt], prefix: str = "i") -> tir.Stmt:
    """Serial loops over every index of `dims`, outermost first, around `body(index)`."""
    index = tuple(tir.Var(f"{prefix}{axis}", INDEX_DTYPE) for axis in range(len(dims)))
    stmt = body(index)
    for var, extent in reversed(list(zip(index, dims))):
        stmt = tir.For(var, as_index(0), as_index(extent), "serial", stmt)
    return stmt


def sequence(*stmts: tir.Stmt) -> tir.Stmt:
    return stmts[0] if len(stmts) == 1 else tir.SeqStmt(tuple(stmts))


def prim_func(buffers: Sequence[tir.Buffer], body: tir.Stmt) -> tir.PrimFunc:
    root = tir.Block("root", (), (), (), body)
    realize = tir.BlockRealize((), tir.IntImm("bool", 1), root)
    params = tuple(tir.Var(b.name, "handle") for b in buffers)  # handles apart from the data, as te's
    return tir.PrimFunc(params, realize, None, tuple(zip(params, buffers)),
                        FrozenDict({"tirx.noalias": True}))
