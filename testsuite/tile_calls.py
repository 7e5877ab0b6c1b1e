"""The multiply-adds of a scheduled kernel as LLVM will see them: a register tile is one
statement in a loop of kind `unrolled` (LLVM repeats it for every vector of the tile), so
each call counts once per iteration of the unrolled loops around it."""

from __future__ import annotations

from relax.ir import tir
from relax.ir.node import Node
from relax.tir.rewrite import node_fields


def fma_calls(stmt) -> list:
    """The `tir.fma` calls under `stmt`, each repeated by the extents of its unrolled loops."""
    calls, stack = [], [(stmt, 1)]
    while stack:
        node, copies = stack.pop()
        if isinstance(node, tuple):
            stack.extend((item, copies) for item in node)
            continue
        if not isinstance(node, Node) or isinstance(node, tir.Buffer):
            continue
        if isinstance(node, tir.Call) and node.op == "tir.fma":
            calls.extend([node] * copies)
        if isinstance(node, tir.For) and node.kind == "unrolled":
            copies *= node.extent.value
        stack.extend((getattr(node, name), copies) for name in node_fields(type(node)))
    return calls
