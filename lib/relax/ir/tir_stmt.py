"""TIR statements and PrimFunc: the loop nests that become kernels.

Blocks (`Block` inside `BlockRealize`) carry iterators, read/write regions and an
optional `init` statement, as TVM's schedulable TIR does; codegen lowers them to
plain loops first. Loop kinds are the strings of FOR_KINDS.
"""

from __future__ import annotations

from .node import EMPTY, FrozenDict, Node, node
from .tir_expr import Buffer, IterVar, PrimExpr, Range, Var


@node
class Stmt(Node):
    """Base of every TIR statement."""


FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread_binding")


@node
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]


@node
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt
    thread_tag: str = ""  # for kind "thread_binding": "blockIdx.x", "threadIdx.x", ...
    annotations: FrozenDict = EMPTY


@node
class While(Stmt):
    condition: PrimExpr
    body: Stmt


@node
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@node
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt


@node
class Allocate(Stmt):
    """Allocates `extents` elements of `dtype` bound to the handle `buffer_var`."""

    buffer_var: Var
    dtype: str
    extents: tuple[PrimExpr, ...]
    condition: PrimExpr
    body: Stmt
    annotations: FrozenDict = EMPTY
    scope: str = "global"


@node
class DeclBuffer(Stmt):
    buffer: Buffer
    body: Stmt


@node
class AttrStmt(Stmt):
    node: object
    attr_key: str
    value: PrimExpr
    body: Stmt


@node
class AssertStmt(Stmt):
    condition: PrimExpr
    message: PrimExpr
    body: Stmt


@node
class Evaluate(Stmt):
    value: PrimExpr


@node
class SeqStmt(Stmt):
    seq: tuple[Stmt, ...]


@node
class BufferRegion(Node):
    buffer: Buffer
    region: tuple[Range, ...]


@node
class MatchBufferRegion(Node):
    buffer: Buffer
    source: BufferRegion


@node
class Block(Stmt):
    name_hint: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple[Buffer, ...] = ()
    match_buffers: tuple[MatchBufferRegion, ...] = ()
    annotations: FrozenDict = EMPTY


@node
class BlockRealize(Stmt):
    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block


@node
class PrimFunc(Node):
    """A TIR function. `buffer_map` binds handle parameters to the buffers they back."""

    params: tuple[Var, ...]
    body: Stmt
    ret_type: str | None = None
    buffer_map: tuple[tuple[Var, Buffer], ...] = ()
    attrs: FrozenDict = EMPTY

    def buffer_of(self, param: Var) -> Buffer | None:
        for var, buffer in self.buffer_map:
            if var is param:
                return buffer
        return None
