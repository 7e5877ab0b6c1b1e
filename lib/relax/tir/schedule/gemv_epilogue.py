"""Elementwise nests after a product (gemv, register-tiled matmul), applied to its result vectors before the one store.

FuseOps and FuseTIR leave a dense layer as the product's nest followed by one nest
per elementwise operator over its output (bias add, relu; GELU's add, multiply and
erf, which inline.py may already have merged into one nest):

    for i, j in T.grid(1, N):  C[i, j] += A[i, k] * B[k, j]            (the gemv nest)
    for i, j in T.grid(1, N):  T_add[i, j] = C[0, j] + bias[j]         Stage: value(current) =
    for i, j in T.grid(1, N):  out[i, j] = T.max(T_add[i, j], 0.0)       max(current + bias[j:j+16], 0)

A Stage is one such nest: spatial only, writing every element of a buffer of the
product's shape at its own iterators, reading the previous buffer (the product's
output or the stage before) at the element it writes. Its other loads are vectors
along the last axis (their last index is the last iterator, no other index uses it)
or broadcasts (free of it). `value(current, position, lanes)` builds its expression
for `lanes` consecutive columns, `current` standing for the previous buffer's
vector; the operators allowed are those that work lane by lane (arithmetic,
comparisons, selects, fma, lets), so each element computes what the nest computes.
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir import tir
from ..loop_nests import uses
from ..rewrite import collect
from .nest import Nest, match_nest
from .parallel import parallelize, strip_marks
from .vector_exprs import broadcast, ramp

_BINARY = (tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Max, tir.Min,
           tir.LT, tir.LE, tir.GT, tir.GE, tir.EQ, tir.NE)
_LANE_CALLS = ("tir.fma", "tir.erf")  # calls that work lane by lane on vectors in the code generator


class Stage:
    """One elementwise nest over the product's output shape (see the module docstring)."""

    def __init__(self, nest: Nest, previous: tir.Buffer):
        self.nest, self.previous = nest, previous
        self.store = nest.block.body
        self.vars = self.store.indices
        self.extents = [nest.loop_of(self._iter(v)).extent.value for v in self.vars]

    @property
    def buffer(self) -> tir.Buffer:
        return self.store.buffer

    def _iter(self, var):
        return next(iv for iv in self.nest.block.iter_vars if iv.var is var)

    def _reads_element(self, load) -> bool:
        """`previous` read at the element being written (a constant 0 index on an axis of extent 1)."""
        return len(load.indices) == len(self.vars) and all(
            index is var or (isinstance(index, tir.IntImm) and index.value == 0 and extent == 1)
            for index, var, extent in zip(load.indices, self.vars, self.extents))

    def _vector(self, expr, current, position, lanes, env):
        """`expr` for `lanes` columns from `position` (None when it is not lane by lane)."""
        w = self.vars[-1]
        if isinstance(expr, tir.BufferLoad):
            if expr.buffer is self.previous:
                return current if self._reads_element(expr) else None
            if expr.dtype != "float32" or any(uses(index, w) for index in expr.indices[:-1]):
                return None
            load = self.nest.bound(expr, dict(zip(self.vars, position)))
            if expr.indices and expr.indices[-1] is w:
                return tir.BufferLoad(load.buffer, (*load.indices[:-1], ramp(load.indices[-1], lanes)))
            if uses(expr, w):
                return None
            return broadcast(load, lanes)
        if isinstance(expr, tir.FloatImm) and expr.dtype == "float32":
            return broadcast(expr, lanes)
        if isinstance(expr, tir.Var):
            return env.get(expr)
        if isinstance(expr, _BINARY):
            a = self._vector(expr.a, current, position, lanes, env)
            b = self._vector(expr.b, current, position, lanes, env)
            return None if a is None or b is None else type(expr)(a, b)
        if isinstance(expr, tir.Select):
            parts = [self._vector(part, current, position, lanes, env)
                     for part in (expr.condition, expr.true_value, expr.false_value)]
            return None if None in parts else tir.Select(*parts)
        if isinstance(expr, tir.Call) and expr.op in _LANE_CALLS and expr.dtype == "float32":
            args = [self._vector(arg, current, position, lanes, env) for arg in expr.args]
            return None if None in args else tir.Call(dt.with_lanes("float32", lanes), expr.op, tuple(args))
        if isinstance(expr, tir.Let):
            value = self._vector(expr.value, current, position, lanes, env)
            if value is None:
                return None
            var = tir.Var(expr.var.name, value.dtype)
            body = self._vector(expr.body, current, position, lanes, {**env, expr.var: var})
            return None if body is None else tir.Let(var, value, body)
        return None

    def value(self, current, position, lanes: int):
        """The stage's value for `lanes` columns at `position` (the output's indices, the last the first column)."""
        return self._vector(self.store.value, current, position, lanes, {})

    def store_at(self, value, position, lanes: int) -> tir.BufferStore:
        return tir.BufferStore(self.buffer, value, (*position[:-1], ramp(position[-1], lanes)))


def stage(stmt, previous: tir.Buffer, shape: list) -> Stage | None:
    """`stmt` as a Stage after `previous` (whose static shape is `shape`), or None."""
    nest = match_nest(stmt)
    if nest is None or nest.block.init is not None or any(iv.iter_type != "DataPar" for iv in nest.block.iter_vars):
        return None
    store = nest.block.body
    if store.buffer.dtype != "float32" or len(store.indices) != len(shape) or len(set(map(id, store.indices))) != len(shape):
        return None
    if len(nest.block.iter_vars) != len(shape):
        return None
    if not all(any(iv.var is index for iv in nest.block.iter_vars) for index in store.indices):
        return None
    if [d.value if isinstance(d, tir.IntImm) else None for d in store.buffer.shape] != shape:
        return None
    if not any(load.buffer is previous for load in collect(store.value, tir.BufferLoad)):
        return None
    if any(not isinstance(loop.extent, tir.IntImm) for loop in nest.loops):
        return None
    found = Stage(nest, previous)
    if found.extents != shape:
        return None
    # Fusable when its value can be built for a vector (a 2-lane probe standing for the product's).
    probe = tir.Broadcast(tir.FloatImm("float32", 0.0), 2)
    position = tuple(tir.IntImm(store.indices[0].dtype, 0) for _ in shape)
    return found if found.value(probe, position, 2) is not None else None


def read_later(statements, buffer) -> bool:
    return any(load.buffer is buffer for stmt in statements for load in collect(stmt, tir.BufferLoad))


def chain(statements: list, index: int, output: tir.Buffer, params: set) -> list[Stage]:
    """The stages that follow statements[index] (which writes `output`): each reads the one
    before, which nothing after it reads and which is not a parameter of the kernel (or is
    the buffer the stage rewrites in place: output_reuse.py's matmul into the output)."""
    shape = [d.value if isinstance(d, tir.IntImm) else None for d in output.shape]
    if None in shape:
        return []
    stages, previous = [], output
    for follower in statements[index + 1:]:
        found = stage(follower, previous, shape)
        if found is None or read_later(statements[index + 2 + len(stages):], previous):
            break
        if id(previous) in params and found.buffer is not previous:
            break  # a parameter the kernel writes must hold its own values, unless a stage rewrites it in place
        stages.append(found)
        previous = found.buffer
    return stages


def fuse_following(statements: list, fused: set, func: tir.PrimFunc, cpu, parallel: bool, matches, apply,
                   takes=lambda stages: True):
    """(statements, scheduled ids): each nest that `matches(nest, cpu)` and is followed by a
    chain of stages that `takes(stages)` becomes one statement, `apply(nest, cpu, stages)`,
    scheduled (and parallel when `parallel`); the stages' statements go. Others are
    unchanged; `fused` (ids of statements already scheduled) are passed over."""
    params = {id(buffer) for _, buffer in func.buffer_map}
    result, done, index = [], set(fused), 0
    while index < len(statements):
        stmt = statements[index]
        nest = match_nest(stmt) if id(stmt) not in done else None
        stages = []
        if nest is not None and matches(nest, cpu):
            stages = chain(statements, index, nest.block.body.buffer, params)
        if stages and takes(stages):
            scheduled = apply(nest, cpu, stages)
            scheduled = parallelize(stmt, scheduled) if parallel else strip_marks(scheduled)
            result.append(scheduled)
            done.add(id(scheduled))
            index += 1 + len(stages)
        else:
            result.append(stmt)
            index += 1
    return result, done
