"""Rule: a pooling window whose padding test always holds loses the test, then reduces in a register.

Legalized max_pool2d (and other window reductions) guard every term with
`if_then_else(inside the input, A[...], lowest)` even when there is no padding, as in
the CNN's 2 x 2 stride-2 pools: every one of the window's terms pays four compares
and a select, and LLVM cannot unroll or vectorize around them. Where interval bounds
of the block's iterators (each in [0, extent)) prove the condition true for the
whole nest, the rule replaces the guarded term by its load and hands the nest to the
rest of the rule. (Lowering's simplifier often drops such a test already; the rule
does not rely on it.)

When the term is then a single float32 load whose last index is `s * w + ...` (w the
output's last axis, not used elsewhere in the load) and the output row has at least half
a vector of columns, the row is computed `lanes` outputs at a time (the target's float32 lanes, or half
of them for a shorter row: 16 or 8 with AVX-512, 8 or 4 with AVX2; cpu.py):
a vector accumulator, and per window position the contiguous span of s * (lanes - 1) + 1
floats read as whole vectors (the last overlapping) from which every s-th element is
picked (a shuffle; a plain vector load when s == 1), leftover columns one at a time. Every other pool goes to the row-reduction
rule (a register accumulator; the constant window loops unroll). Each output combines the
same terms in the same order as the plain nest (max and min are exact), so results
are bit for bit the plain nest's: the dropped branch was never taken.
Pools with padding keep the guarded form (row-reduction alone).

    for n, c, h, w, rh, rw in T.grid(1, 16, 16, 16, 2, 2):
        pool_max[n, c, h, w] = T.max(pool_max[n, c, h, w],
            T.if_then_else(0 <= h*2 + rh < 32 and 0 <= w*2 + rw < 32, A[n, c, h*2 + rh, w*2 + rw], lowest))
->
    for n, c, h in T.grid(1, 16, 16):
        for strip in range(1):
            acc[0:16] = T.Broadcast(-inf, 16)
            for rh, rw in T.grid(2, 2):
                acc[0:16] = T.max(acc[0:16], T.Shuffle([A[n, c, h*2 + rh, strip*32 + rw : +31]], [0, 2, .., 30]))
            pool_max[n, c, h, strip*16 : +16] = acc[0:16]
"""

from __future__ import annotations

from ...ir import tir
from ..arith.bounds import Interval, bound
from ..arith.linear import from_expr
from ..convert_blocks_to_loops import allocation
from ..loop_nests import uses
from . import row_reduction
from .cpu import CpuInfo
from .nest import Nest, fresh, loop, seq
from .reduction_order import reduction_parts

MIN_LANES = 4  # outputs per vector, at least: narrower rows take the row-reduction rule

_COMBINERS = (tir.Max, tir.Min, tir.Add)


def _env(nest: Nest) -> dict | None:
    """Each block iterator's interval [0, extent - 1], or None when an extent is not constant."""
    env = {}
    for iv in nest.block.iter_vars:
        extent = nest.loop_of(iv).extent
        if not isinstance(extent, tir.IntImm) or extent.value < 1:
            return None
        env[iv.var] = Interval(0, extent.value - 1)
    return env


def always_true(condition, env: dict) -> bool:
    """Whether `condition` (comparisons joined by `and`) holds for every value of the variables in `env`."""
    if isinstance(condition, tir.And):
        return always_true(condition.a, env) and always_true(condition.b, env)
    if not isinstance(condition, (tir.LT, tir.LE, tir.GT, tir.GE)):
        return False
    difference = bound(condition.a - condition.b, env)
    if isinstance(condition, tir.LT):
        return difference.hi is not None and difference.hi < 0
    if isinstance(condition, tir.LE):
        return difference.hi is not None and difference.hi <= 0
    if isinstance(condition, tir.GT):
        return difference.lo is not None and difference.lo > 0
    return difference.lo is not None and difference.lo >= 0


def _guarded_term(nest: Nest):
    """The `if_then_else` call of `C = combine(C, if_then_else(cond, load, fill))`, or None."""
    parts = reduction_parts(nest)
    if parts is None:
        return None
    store = parts[0]
    if not isinstance(store.value, _COMBINERS):
        return None
    term = store.value.b
    if not (isinstance(term, tir.Call) and term.op == "tir.if_then_else" and len(term.args) == 3):
        return None
    return term


def _unguarded(nest: Nest) -> Nest:
    """`nest` with a padding test that always holds replaced by its load (the nest itself otherwise)."""
    term, env = _guarded_term(nest), _env(nest)
    if term is None or env is None or not always_true(term.args[0], env):
        return nest
    store = nest.block.body
    unguarded = store.with_fields(value=store.value.with_fields(b=term.args[1]))
    return Nest(nest.loops, nest.realize.with_fields(block=nest.block.with_fields(body=unguarded)))


def _lanes(cpu, columns: int) -> int:
    """Outputs per vector: the target's lanes, half of them for a narrower row, 0 below MIN_LANES."""
    for lanes in (cpu.lanes, cpu.lanes // 2):
        if columns >= lanes >= MIN_LANES:
            return lanes
    return 0


def _row_form(nest: Nest, cpu):
    """(w iterator, stride s, lanes) when the output row vectorizes as the module docstring says, else None."""
    parts = reduction_parts(nest)
    if parts is None or _env(nest) is None:
        return None
    store, spatial, reduce = parts
    term = store.value.b
    if (not isinstance(store.value, (tir.Max, tir.Min)) or store.buffer.dtype != "float32"
            or not isinstance(term, tir.BufferLoad) or term.buffer.dtype != "float32" or not term.indices
            or not store.indices  # a max over every axis stores a 0-d result: there is no output row
            or not isinstance(nest.block.init.value, tir.FloatImm)):
        return None
    w = store.indices[-1]
    w_iter = next((iv for iv in spatial if iv.var is w), None)
    if w_iter is None or any(uses(index, w) for index in (*store.indices[:-1], *term.indices[:-1])):
        return None
    linear = from_expr(term.indices[-1])
    stride = sum(coeff for atom, coeff in linear.nonzero() if atom is w)
    if stride < 1 or any(uses(atom, w) for atom, coeff in linear.nonzero() if atom is not w):
        return None
    columns = nest.loop_of(w_iter).extent.value
    lanes = _lanes(cpu if cpu is not None else CpuInfo(), columns)
    return (w_iter, stride, lanes) if lanes else None


def matches(nest: Nest, cpu=None) -> bool:
    if not row_reduction.matches(nest, cpu):
        return False
    unguarded = _unguarded(nest)
    return unguarded is not nest or _row_form(unguarded, cpu) is not None


def _strided(term: tir.BufferLoad, start, stride: int, lanes: int):
    """(vectors, lane indices) picking term's elements start, start + stride, ... (`lanes` of them).

    The span of stride * (lanes - 1) + 1 elements is read as whole vectors of `lanes`
    (the last one overlapping the one before), so nothing past the last picked element
    is read and every load is a power-of-two vector.
    """
    width = stride * (lanes - 1) + 1
    offsets = list(range(0, width - lanes, lanes)) + [width - lanes]
    vectors = tuple(term.with_fields(indices=(*term.indices[:-1], tir.Ramp(
        start + tir.IntImm(start.dtype, offset), tir.IntImm(start.dtype, 1), lanes))) for offset in offsets)
    picks = []
    for lane in range(lanes):
        element = stride * lane
        chunk = max(c for c, offset in enumerate(offsets) if offset <= element)
        picks.append(tir.IntImm("int32", chunk * lanes + element - offsets[chunk]))
    return vectors, tuple(picks)


def _vector_rows(nest: Nest, w_iter, stride: int, lanes: int) -> tir.Stmt:
    """Every output row: whole vectors of `lanes` outputs, then the leftover columns one at a time."""
    store, spatial, reduce = reduction_parts(nest)
    outer = [iv for iv in spatial if iv is not w_iter]
    values = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in outer + reduce}
    w_loop = nest.loop_of(w_iter)
    index = w_loop.loop_var.dtype
    columns = w_loop.extent.value
    strips = columns // lanes
    strip = fresh(w_loop.loop_var, f"x{lanes}")
    first = strip * tir.IntImm(index, lanes)  # the strip's first output column
    term = nest.bound(store.value.b, {**values, w_iter.var: first})
    start = term.indices[-1]
    picked = tir.Shuffle(*_strided(term, start, stride, lanes)) if stride > 1 else term.with_fields(
        indices=(*term.indices[:-1], tir.Ramp(start, tir.IntImm(start.dtype, 1), lanes)))
    name = f"{store.buffer.name}_rows"
    acc = tir.Buffer(name, (tir.IntImm(index, lanes),), "float32", tir.Var(name, "handle"), scope="local")
    whole = (tir.Ramp(tir.IntImm(index, 0), tir.IntImm(index, 1), lanes),)
    update = tir.BufferStore(acc, type(store.value)(tir.BufferLoad(acc, whole), picked), whole)
    for iv in reversed(reduce):
        update = loop(values[iv.var], nest.loop_of(iv).extent, update)
    output = nest.bound(store, {**values, w_iter.var: tir.Ramp(first, tir.IntImm(index, 1), lanes)})
    body = allocation(acc, tir.SeqStmt((
        tir.BufferStore(acc, tir.Broadcast(nest.block.init.value, lanes), whole), update,
        output.with_fields(value=tir.BufferLoad(acc, whole)))))
    row = [loop(strip, tir.IntImm(index, strips), body, independent=True)]
    if strips * lanes < columns:  # leftover columns: one register accumulator each
        rest = fresh(w_loop.loop_var, "rest")
        column = rest + tir.IntImm(index, strips * lanes)
        single = (tir.IntImm(index, 0),)
        name = f"{store.buffer.name}_rest"
        one = tir.Buffer(name, (tir.IntImm(index, 1),), "float32", tir.Var(name, "handle"), scope="local")
        term = nest.bound(store.value.b, {**values, w_iter.var: column})
        update = tir.BufferStore(one, type(store.value)(tir.BufferLoad(one, single), term), single)
        for iv in reversed(reduce):
            update = loop(values[iv.var], nest.loop_of(iv).extent, update)
        output = nest.bound(store, {**values, w_iter.var: column})
        body = allocation(one, tir.SeqStmt((tir.BufferStore(one, nest.block.init.value, single), update,
                                            output.with_fields(value=tir.BufferLoad(one, single)))))
        row.append(loop(rest, tir.IntImm(index, columns - strips * lanes), body, independent=True))
    stmt = seq(row)
    for iv in reversed(outer):
        stmt = loop(values[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    unguarded = _unguarded(nest)
    form = _row_form(unguarded, cpu)
    if form is None:
        return row_reduction.apply(unguarded, cpu)
    return _vector_rows(unguarded, *form)
