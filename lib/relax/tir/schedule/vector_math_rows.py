"""Rule: an elementwise nest that calls exp or erf computes whole vectors of the target's width.

LLVM's loop vectorizer picks 8 float32 lanes on AVX-512 hosts (it prefers 256-bit
vectors), so exp runs through libmvec's 8-lane `_ZGVdN8v_expf`. Written with
explicit 16-lane vectors, exp becomes `llvm.exp.v16f32`, which vector_math.py maps
to the AVX-512 `_ZGVeN16v_expf`, and erf's lanes are inlined (fast_math.py) and
packed 16 wide.

Matches a spatial nest (no reduction) with a float32 store whose last index is the
innermost loop's iterator, whose value is float32 arithmetic (+ - * / max min),
constants, exp/erf calls (at least one) and loads that either read contiguously
along that iterator (last index exactly the iterator, no other index using it) or
do not use it at all (broadcast); at least one vector's iterations; targets whose
CPU model (cpu.py) has vectors of MIN_VECTOR_BITS (AVX-512: 16 lanes) only. Each element
computes the same operations as before; the leftover iterations (extent % lanes) run
as scalars.

    for i, k in T.grid(512, 128):                      for i in range(512):
        out[i, k] = T.exp(A[i, k] - m[i])      ->          for k in range(8):
                                                               out[i, k*16:k*16+16] = T.exp(A[i, k*16:k*16+16] - T.Broadcast(m[i], 16))
"""

from __future__ import annotations

from ...ir import tir
from ...ir.node import FrozenDict
from ..loop_nests import uses
from ..rewrite import collect, substitute
from .nest import Nest, fresh, loop, seq

# LLVM's own vectorizer prefers 256-bit vectors: the rule pays only on wider registers.
MIN_VECTOR_BITS = 512
VECTOR_CALLS = frozenset({"tir.exp", "tir.erf"})  # calls whose vector form this rule writes
_ARITHMETIC = (tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Max, tir.Min)


def innermost_iter(nest: Nest) -> tir.IterVar | None:
    last = nest.loops[-1].loop_var
    return next((iv for iv in nest.block.iter_vars
                 if nest.realize.iter_values[nest.block.iter_vars.index(iv)] is last), None)


def _vectorizable(expr, k: tir.Var) -> bool:
    if isinstance(expr, tir.BufferLoad):
        if expr.dtype != "float32" or any(uses(index, k) for index in expr.indices[:-1]):
            return False
        return not expr.indices or expr.indices[-1] is k or not uses(expr.indices[-1], k)
    if isinstance(expr, tir.FloatImm):
        return expr.dtype == "float32"
    if isinstance(expr, _ARITHMETIC):
        return _vectorizable(expr.a, k) and _vectorizable(expr.b, k)
    if isinstance(expr, tir.Call):
        return (expr.op in VECTOR_CALLS and expr.dtype == "float32" and len(expr.args) == 1
                and _vectorizable(expr.args[0], k))
    return False


def _has_vector_call(expr) -> bool:
    return any(call.op in VECTOR_CALLS for call in collect(expr, tir.Call))


def matches(nest: Nest, cpu=None) -> bool:
    if cpu is None or cpu.vector_bits < MIN_VECTOR_BITS:
        return False
    return contiguous_rows(nest, cpu.lanes) and _has_vector_call(nest.block.body.value)


def contiguous_rows(nest: Nest, lanes: int) -> bool:
    """Whether `nest` is elementwise float32 work that whole vectors of `lanes` can compute along
    its innermost loop (the store and every load contiguous along it, or loads not using it)."""
    if nest.block.init is not None or any(iv.iter_type != "DataPar" for iv in nest.block.iter_vars):
        return False
    inner = innermost_iter(nest)
    store = nest.block.body
    extent = nest.loops[-1].extent
    if inner is None or not isinstance(extent, tir.IntImm) or extent.value < lanes:
        return False
    if store.buffer.dtype != "float32" or not store.indices or store.indices[-1] is not inner.var:
        return False
    if any(uses(index, inner.var) for index in store.indices[:-1]):
        return False
    if any(load.buffer is store.buffer and not _same_indices(load.indices, store.indices)
           for load in collect(store.value, tir.BufferLoad)):
        return False  # another element of the output, which a whole vector would read too early
    return _vectorizable(store.value, inner.var)


def _same_indices(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _vector(expr, k: tir.Var, start: tir.PrimExpr, lanes: int):
    """`expr` over the `lanes` iterations from `start` of k."""
    if isinstance(expr, tir.BufferLoad):
        if expr.indices and expr.indices[-1] is k:
            return expr.with_fields(indices=(*expr.indices[:-1], tir.Ramp(start, tir.IntImm(start.dtype, 1), lanes)))
        return tir.Broadcast(expr, lanes)
    if isinstance(expr, tir.FloatImm):
        return tir.Broadcast(expr, lanes)
    if isinstance(expr, _ARITHMETIC):
        return type(expr)(_vector(expr.a, k, start, lanes), _vector(expr.b, k, start, lanes))
    return tir.Call(f"float32x{lanes}", expr.op, tuple(_vector(arg, k, start, lanes) for arg in expr.args))


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    return vector_rows(nest, cpu.lanes)


def vector_rows(nest: Nest, lanes: int, chunk_vectors: int = 0, annotations: FrozenDict = FrozenDict()) -> tir.Stmt:
    """`nest` (contiguous_rows) with its innermost loop in whole vectors of `lanes`, the loops over
    vectors carrying `annotations`; a row of more than `chunk_vectors` vectors (when given) runs as
    independent chunks of that many, so that one long row can be parallel."""
    inner = innermost_iter(nest)
    outer = [iv for iv in nest.block.iter_vars if iv is not inner]
    outer = sorted(outer, key=lambda iv: nest.loops.index(nest.loop_of(iv)))
    values = {iv.var: fresh(nest.loop_of(iv).loop_var, "s") for iv in outer}
    k_loop = nest.loops[-1]
    index = k_loop.loop_var.dtype
    extent = k_loop.extent.value
    # The block's statement with the outer iterators bound and k left as the iterator itself.
    store = nest.bound(nest.block.body, {**values, inner.var: inner.var})

    def vectors(first_vector: tir.PrimExpr | None, count: int, name: str) -> tir.For:
        var = fresh(k_loop.loop_var, name)
        start = var * tir.IntImm(index, lanes)
        if first_vector is not None:
            start = first_vector * tir.IntImm(index, lanes) + start
        vector_store = store.with_fields(
            value=_vector(store.value, inner.var, start, lanes),
            indices=(*store.indices[:-1], tir.Ramp(start, tir.IntImm(index, 1), lanes)))
        body = loop(var, tir.IntImm(index, count), vector_store)
        return body.with_fields(annotations=annotations) if annotations else body

    whole = extent // lanes
    parts = []
    if chunk_vectors and whole > chunk_vectors:
        chunk = fresh(k_loop.loop_var, "chunk")
        first = chunk * tir.IntImm(index, chunk_vectors)
        parts.append(loop(chunk, tir.IntImm(index, whole // chunk_vectors),
                          vectors(first, chunk_vectors, "vector"), independent=True))
        if whole % chunk_vectors:
            parts.append(vectors(tir.IntImm(index, whole // chunk_vectors * chunk_vectors), whole % chunk_vectors,
                                 "vector_rest"))
    else:
        parts.append(vectors(None, whole, "vector"))
    if extent % lanes:
        rest_k = fresh(k_loop.loop_var, "rest")
        scalar = substitute(store, {inner.var: rest_k + tir.IntImm(index, whole * lanes)})
        parts.append(loop(rest_k, tir.IntImm(index, extent % lanes), scalar))
    stmt = seq(parts)
    for iv in reversed(outer):
        stmt = loop(values[iv.var], nest.loop_of(iv).extent, stmt, independent=True)
    return stmt
