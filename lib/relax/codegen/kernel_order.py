"""The order in which a module's kernels are generated: the most arithmetic first.

Kernels are generated one after the other and compiled by LLVM in parts on worker
threads as they come (object_parts.py); the build ends when the last part is
compiled. A register-tiled matmul or convolution is the most LLVM work (many times
the IR of a transpose), so when one of them is generated last, its compilation is
the tail of the build. Kernels are taken in decreasing order of the arithmetic of
their reduction blocks (the product of every block iterator's extent: M*N*K for a
matmul), the others after them, ties by name: a deterministic order that needs no
lowering (figures: docs/performance-notes.md).
"""

from __future__ import annotations

from ..ir import tir
from ..tir.rewrite import walk


def reduction_work(func: tir.PrimFunc) -> int:
    """The summed iteration counts of the blocks of `func` that reduce (0 when none does; a
    block with an extent that is not a constant counts nothing)."""
    total = [0]

    def visit(node) -> None:
        if any(iv.iter_type == "CommReduce" for iv in node.iter_vars):
            count = 1
            for iter_var in node.iter_vars:
                extent = iter_var.dom.extent if iter_var.dom is not None else None
                if not isinstance(extent, tir.IntImm):
                    return
                count *= extent.value
            total[0] += count

    walk(func.body, visit, tir.Block)
    return total[0]


def generation_order(groups: list[list[str]], funcs: dict) -> list[list[str]]:
    """`groups` (lists of kernel names, the first one's body built) in generation order."""
    return sorted(groups, key=lambda names: (-reduction_work(funcs[names[0]]), names[0]))
