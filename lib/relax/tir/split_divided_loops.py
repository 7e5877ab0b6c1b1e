"""split-divided-loops: a loop whose variable is divided by a constant c becomes two loops.

A reshape after a transpose merges axes: the transformer's head merge writes
`out[i * 256 + j]` for j < 256 from `in[j // 64 * 8192 + i * 64 + j % 64]`, one loop
over j whose source index jumps every 64 elements. Each element's address needs a
division, and LLVM vectorized it poorly for Zen: 10.6 us on Zen 4, where the head
split before it, a plain copy of rows, took 3. When the body divides the loop's variable by
one constant c only (`v // c`, `v % c`), c divides the extent, and the loop starts at
0, the loop becomes

    for v_outer in range(extent // c):
        for v_inner in range(c):      # v // c -> v_outer, v % c -> v_inner, v -> v_outer * c + v_inner

which runs the same iterations in the same order with no division left. Only serial
loops without annotations are split (a parallel or vectorized loop keeps the trip
count its schedule chose), and not when a buffer's shape names the variable. Runs
after simplify, whose canonical indices spell the divisions on the bare variable,
and before narrow-division.
"""

from __future__ import annotations

from ..ir import tir
from .loop_nests import uses
from .rewrite import Rewriter, collect, walk

_DIVISIONS = (tir.FloorDiv, tir.FloorMod)


def divisors_by_variable(body) -> dict:
    """{variable: the set of divisors (IntImm values, or None for another divisor)} of every
    `v // c` and `v % c` (floor forms) in `body` whose dividend is a bare variable."""
    found: dict = {}

    def look(node):
        if isinstance(node.a, tir.Var):
            found.setdefault(node.a, set()).add(node.b.value if isinstance(node.b, tir.IntImm) else None)

    walk(body, look, _DIVISIONS)
    return found


def single_divisor(loop: tir.For, divisors: set) -> int | None:
    """The constant c the loop's variable is divided by (`divisors`: what the body divides it
    by), when there is exactly one, it splits the loop evenly, the loop starts at 0 and no
    buffer's shape names the variable; otherwise None."""
    var, extent = loop.loop_var, loop.extent
    if len(divisors) != 1 or not (isinstance(extent, tir.IntImm) and isinstance(loop.min, tir.IntImm)
                                  and loop.min.value == 0):
        return None
    (divisor,) = divisors
    if divisor is None or not 1 < divisor < extent.value or extent.value % divisor:
        return None
    if any(uses((buffer.shape, buffer.strides, buffer.elem_offset), var) for buffer in collect(loop.body, tir.Buffer)):
        return None
    return divisor


class _Replace(Rewriter):
    def __init__(self, var, divisor: int, outer, inner):
        self.var, self.divisor, self.outer, self.inner = var, divisor, outer, inner

    def _division(self, node):
        if node.a is self.var:  # by the divisor: single_divisor saw no other
            return self.outer if isinstance(node, tir.FloorDiv) else self.inner
        return self.generic_visit(node)

    visit_FloorDiv = visit_FloorMod = _division

    def visit_Var(self, var):
        if var is not self.var:
            return var
        return tir.Add(tir.Mul(self.outer, tir.IntImm(var.dtype, self.divisor)), self.inner)


class _Splitter(Rewriter):
    statements_only = True

    def __init__(self, divisors: dict):
        self.divisors = divisors

    def visit_For(self, loop):
        loop = self.generic_visit(loop)
        divided = self.divisors.get(loop.loop_var)
        if divided is None or loop.kind != "serial" or loop.annotations or loop.thread_tag:
            return loop
        divisor = single_divisor(loop, divided)
        if divisor is None:
            return loop
        var, dtype = loop.loop_var, loop.extent.dtype
        outer, inner = tir.Var(f"{var.name}_outer", var.dtype), tir.Var(f"{var.name}_inner", var.dtype)
        body = _Replace(var, divisor, outer, inner).visit(loop.body)
        zero = tir.IntImm(dtype, 0)
        inner_loop = tir.For(inner, zero, tir.IntImm(dtype, divisor), "serial", body, span=loop.span)
        return tir.For(outer, zero, tir.IntImm(dtype, loop.extent.value // divisor), "serial", inner_loop,
                       span=loop.span)


class SplitDividedLoops:
    """The pass object: `SplitDividedLoops().run(func)`.

    Before:

        for i, j in T.grid(128, 256):
            B[i * 256 + j] = A[j // 64 * 8192 + i * 64 + j % 64]

    After:

        for i, j_outer, j_inner in T.grid(128, 4, 64):
            B[i * 256 + (j_outer * 64 + j_inner)] = A[j_outer * 8192 + i * 64 + j_inner]
    """

    name = "split-divided-loops"

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        return func.with_fields(body=_Splitter(divisors_by_variable(func.body)).visit(func.body))
