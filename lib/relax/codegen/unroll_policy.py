"""Which loops LLVM is asked not to unroll (`llvm.loop.unroll.disable`).

At O3, LLVM's loop vectorizer turns a scalar loop into a vector loop and its
unroller then replicates loops whose trip count is constant, fully when the copy
stays under its size threshold: a 4-trip loop around a register-tiled
micro-kernel became four micro-kernels, a 128x128 transpose a straight run of
copies. That costs a large share of the optimized IR and of LLVM's time, and gains
run time only in two kinds of loops, which this policy leaves to LLVM:

- small constant loop nests (at most ROLLED_ABOVE iterations in all): a 3x3
  convolution window, the 10-wide output row of a classifier matmul, a
  256-element row;
- innermost loops whose body holds vector code (Ramp, Broadcast, Shuffle): the
  k loop of a schedule's micro-kernel.

A loop of kind `unrolled` (a register tile's statement for each of its vectors) is
straight-line code here, as it is after LLVM has unrolled it: its copies count in the
iterations of the loops around it, and its vector code makes the loop around it an
innermost vector loop (the micro-kernel's k loop).

A loop whose body holds a shuffle network (at least SHUFFLE_NETWORK shuffles, a
transpose block: each trip already dozens of vector instructions) stays rolled even
then: unrolled, it only multiplied LLVM's shuffle lowering, the largest share of a
transpose kernel's build. Every other loop of kind serial (or parallel, nested in a
parallel loop, where it runs serially) stays rolled; LLVM still vectorizes it, and
the kernels run as fast (figures: docs/performance-notes.md). A float reduction in a
rolled loop may add up in another order (reassociation is allowed) than when LLVM
unrolled it.
"""

from __future__ import annotations

import math

from ..ir import tir
from ..ir.node import Node
from ..tir.rewrite import node_fields

ROLLED_ABOVE = 256
SHUFFLE_NETWORK = 8  # shuffles in a loop's body that make it a transpose block (SSE's 4 x 4 has 8)
# A parallel loop nested in another runs serially (ParallelCodegen); it is treated as a
# serial one, so that a kernel and its parallel variant add up a reduction in one order.
ROLLABLE_KINDS = ("serial", "parallel")
_VECTOR_NODES = (tir.Ramp, tir.Broadcast, tir.Shuffle)


def rolled_loops(body: tir.Stmt, limit: int = ROLLED_ABOVE) -> frozenset[int]:
    """The ids of the serial For nodes under `body` to leave rolled (see the module docstring)."""
    rolled: set[int] = set()
    _scan(body, rolled, limit)
    return frozenset(rolled)


def _scan(node, rolled: set[int], limit: int) -> tuple[float, bool, int, bool]:
    """(iterations of the deepest loop nest at `node`, whether it holds vector code outside
    loops, how many shuffles it holds, in loops or not, whether it holds a loop). A loop of
    kind `unrolled` is straight-line code to the loops around it (LLVM unrolls it fully):
    its copies count in the iterations, its vector code as outside loops."""
    if isinstance(node, (tuple, list)):
        trips, vector, shuffles, loops = 1, False, 0, False
        for item in node:
            item_trips, item_vector, item_shuffles, item_loops = _scan(item, rolled, limit)
            trips, vector, shuffles = max(trips, item_trips), vector or item_vector, shuffles + item_shuffles
            loops = loops or item_loops
        return trips, vector, shuffles, loops
    if not isinstance(node, Node) or isinstance(node, tir.Buffer):
        return 1, False, 0, False
    if isinstance(node, tir.PrimExpr):
        return (1, *_vector_code(node), False)
    if isinstance(node, tir.For):
        inner, vector, shuffles, loops = _scan(node.body, rolled, limit)
        trips = node.extent.value * inner if isinstance(node.extent, tir.IntImm) else math.inf
        if node.kind == "unrolled":
            return trips, vector, shuffles, loops
        innermost_vector = vector and not loops
        unrolled_gains = trips <= limit or innermost_vector
        if node.kind in ROLLABLE_KINDS and (not unrolled_gains or shuffles >= SHUFFLE_NETWORK):
            rolled.add(id(node))
        return trips, False, shuffles, True
    return _scan(tuple(getattr(node, name) for name in node_fields(type(node))), rolled, limit)


def _vector_code(expr) -> tuple[bool, int]:
    """Whether `expr` holds vector code, and how many shuffles."""
    vector, shuffles, stack = False, 0, [expr]
    while stack:
        value = stack.pop()
        if isinstance(value, (tuple, list)):
            stack.extend(value)
        elif isinstance(value, Node) and not isinstance(value, tir.Buffer):
            vector = vector or isinstance(value, _VECTOR_NODES)
            shuffles += isinstance(value, tir.Shuffle)
            stack.extend(getattr(value, name) for name in node_fields(type(value)))
    return vector, shuffles
