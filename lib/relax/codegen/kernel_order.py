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

from collections.abc import Iterator

from ..ir import tir
from ..tir.loop_nests import statements
from .kernel_dedup import SharedBodies


def reduction_work(func: tir.PrimFunc) -> int:
    """The summed iteration counts of the blocks of `func` that reduce (0 when none does; a
    block with an extent that is not a constant counts nothing)."""
    total = 0
    for node in statements(func.body):  # blocks are statements: expressions need no search
        if isinstance(node, tir.Block) and any(iv.iter_type == "CommReduce" for iv in node.iter_vars):
            total += _iterations(node)
    return total


def _iterations(block: tir.Block) -> int:
    count = 1
    for iter_var in block.iter_vars:
        extent = iter_var.dom.extent if iter_var.dom is not None else None
        if not isinstance(extent, tir.IntImm):
            return 0
        count *= extent.value
    return count


def generation_groups(funcs: dict) -> Iterator[list[str]]:
    """The kernels' groups (build_kernels.kernel_groups) in generation order: decreasing
    reduction_work of a group's first kernel, ties by its name. Group by group: the
    kernels that share a group's body are looked for as it comes, so that the first group
    is generated, and LLVM starts on it, before the others are compared. Kernels of one
    body have the same work and the group's first has the first name, so the kernels' own
    order, heaviest first and then by name, meets each group at its first."""
    bodies = SharedBodies(funcs)
    for name in sorted(funcs, key=lambda name: (-reduction_work(funcs[name]), name)):
        if bodies.owner(name) == name:
            yield bodies.group(name)
