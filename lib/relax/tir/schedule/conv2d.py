"""Rule: a float32 NCHW conv2d keeps CHANNELS x ROWS output vectors in registers (direct convolution).

Legalized nn.conv2d (data layout NCHW, groups 1) is one reduction nest
`out[n, c, h, w] += data[n, rc, h*s + ry*d, w*s + rx*d] * weight[c, rc, ry, rx]`
(data is "pad_temp" when there is padding: that stage is its own nest, computed
once, so the reduction reads it with no bounds test). The rule vectorizes the
output width: a register tile holds CHANNELS output channels x ROWS output rows
of up to LANES consecutive outputs each; every reduction step loads one data
vector per row (contiguous when the stride is 1), broadcasts one weight per
channel and does CHANNELS x ROWS fused multiply-adds into the tile, which is
written to the output once at the end. Tiles that do not fill the output shrink
(fewer channels or rows, fewer lanes), so no per-element test remains. Each output
element adds its terms in the plain nest's order (rc, ry, rx); the fused
multiply-add rounds once per term instead of twice.

    for n, c, h, w, rc, ry, rx in T.grid(...):       for n, c_tile in T.grid(N, C // 4):      # parallel
        out[n, c, h, w] += data[...] * weight[...]        for h_tile, w_tile in T.grid(H // 4, W // 16):
                                                ->            acc = T.alloc_local((4 * 4 * 16,))   # 16 vectors
                                                              for rc, ry, rx in T.grid(...):
                                                                  acc[k] = T.fma(T.Broadcast(weight[c0 + i, rc, ry, rx], 16),
                                                                                 data[n, rc, h0 + j + ry, w0 + rx:w0 + rx + 16], acc[k]) ...
                                                              out[n, c0 + i, h0 + j, w0:w0 + 16] = acc[k] ...

Falls back (no match) for other dtypes, layouts whose last output axis is not the
data's contiguous one (NHWC), grouped and depthwise convolutions (the data index
uses the output channel), symbolic shapes, and casts (out_dtype differing).
Measured on the CNN benchmark's convolutions: see docs/tir-lowering.md.
"""

from __future__ import annotations

from ...ir import tir
from ..convert_blocks_to_loops import allocation
from ..loop_nests import uses
from ..rewrite import collect
from .nest import Nest, fresh, loop, match_nest
from .parallel import parallelize, strip_marks
from .reduction_order import reduction_parts

LANES = 16  # output columns per vector (AVX-512 width for float32; LLVM splits it where narrower)
WIDE_TILE = (4, 4)  # (channels, rows) with 32 vector registers: 16 accumulators, 4 data vectors
NARROW_TILE = (2, 2)  # with 16 registers of 256 bits a 16-lane vector takes two of them


def _coefficient(expr, var: tir.Var) -> int | None:
    """The constant c with expr = c * var + (terms free of var), or None when expr is not of that form."""
    if not uses(expr, var):
        return 0
    if expr is var:
        return 1
    if isinstance(expr, (tir.Add, tir.Sub)):
        a, b = _coefficient(expr.a, var), _coefficient(expr.b, var)
        if a is None or b is None:
            return None
        return a + b if isinstance(expr, tir.Add) else a - b
    if isinstance(expr, tir.Mul):
        for scale, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(scale, tir.IntImm):
                inner = _coefficient(other, var)
                return None if inner is None else scale.value * inner
    return None


class _Conv:
    """The parts of a matched nest: store, its iterators by role, the data and weight loads."""

    def __init__(self, nest: Nest, store, reduce, data, weight, stride: int):
        self.nest, self.store, self.reduce = nest, store, reduce
        self.data, self.weight, self.stride = data, weight, stride
        self.n, self.c, self.h, self.w = store.indices
        self.index = nest.loop_of(self._iter(self.w)).loop_var.dtype

    def _iter(self, var):
        return next(iv for iv in self.nest.block.iter_vars if iv.var is var)

    def extent(self, var) -> int:
        return self.nest.loop_of(self._iter(var)).extent.value

    def const(self, value: int) -> tir.IntImm:
        return tir.IntImm(self.index, value)


def _match(nest: Nest) -> _Conv | None:
    parts = reduction_parts(nest)
    if parts is None:
        return None
    store, spatial, reduce = parts
    if store.buffer.dtype != "float32" or len(store.indices) != 4 or nest.block.init is None:
        return None
    value = store.value
    if not isinstance(value, tir.Add) or not isinstance(value.b, tir.Mul):
        return None
    x, y = value.b.a, value.b.b
    if not all(isinstance(load, tir.BufferLoad) and load.dtype == "float32" and load.indices for load in (x, y)):
        return None
    n, c, h, w = store.indices
    data, weight = (y, x) if uses(x, c) else (x, y)
    if uses(data, c) or not uses(weight, c) or any(uses(weight, v) for v in (n, h, w)):
        return None
    if any(uses(index, w) for index in data.indices[:-1]) or uses(data.indices[-1], h):
        return None
    stride = _coefficient(data.indices[-1], w)
    if stride is None or stride < 1:
        return None
    if uses(nest.block.init.value, w) or any(not isinstance(loop_.extent, tir.IntImm) for loop_ in nest.loops):
        return None
    return _Conv(nest, store, reduce, data, weight, stride)


def matches(nest: Nest, cpu=None) -> bool:
    return _match(nest) is not None


def _vector(scalar_dtype: str, lanes: int) -> str:
    return scalar_dtype if lanes == 1 else f"{scalar_dtype}x{lanes}"


def _tile(conv: _Conv, n, c0, channels: int, h0, rows: int, w0, lanes: int, epilogues=()) -> tir.Stmt:
    """One register tile: output channels c0.., rows h0.., columns w0.. (lanes of them),
    each vector passed through the `epilogues` before it is stored."""
    nest, const = conv.nest, conv.const
    reduce_vars = {iv.var: fresh(nest.loop_of(iv).loop_var, "r") for iv in conv.reduce}

    def at(expr, channel, row, column):
        values = {**reduce_vars, conv.n: n, conv.c: channel, conv.h: row, conv.w: column}
        return nest.bound(expr, values)

    def ramp(base, stride: int = 1):
        return base if lanes == 1 else tir.Ramp(base, const(stride), lanes)

    def broadcast(value):
        return value if lanes == 1 else tir.Broadcast(value, lanes)

    name = conv.store.buffer.name
    acc = tir.Buffer(f"{name}_tile", (const(channels * rows * lanes),), "float32",
                     tir.Var(f"{name}_tile", "handle"), scope="local")

    def slot(i, j):
        return (ramp(const((i * rows + j) * lanes)),)

    slots = [(i, j) for i in range(channels) for j in range(rows)]
    zero = broadcast(at(nest.block.init.value, c0, h0, w0))
    init = [tir.BufferStore(acc, zero, slot(i, j)) for i, j in slots]

    def data_row(j):
        load = at(conv.data, c0, h0 + const(j), w0)
        return tir.BufferLoad(load.buffer, (*load.indices[:-1], ramp(load.indices[-1], conv.stride)))

    rows_data = [data_row(j) for j in range(rows)]
    updates = []
    for i, j in slots:
        weight = broadcast(at(conv.weight, c0 + const(i), h0, w0))
        total = tir.Call(_vector("float32", lanes), "tir.fma", (weight, rows_data[j], tir.BufferLoad(acc, slot(i, j))))
        updates.append(tir.BufferStore(acc, total, slot(i, j)))
    step: tir.Stmt = tir.SeqStmt(tuple(updates))
    for iv in reversed(conv.reduce):
        step = loop(reduce_vars[iv.var], nest.loop_of(iv).extent, step)
    saves = []
    for i, j in slots:
        position = (n, c0 + const(i), h0 + const(j), w0)
        value = tir.BufferLoad(acc, slot(i, j))
        out = at(conv.store, *position[1:])
        for stage in epilogues:
            value = stage.vector_value(value, position, lanes)
            out = stage.at(stage.nest.block.body, position)
        saves.append(tir.BufferStore(out.buffer, value, (*out.indices[:-1], ramp(out.indices[-1]))))
    return allocation(acc, tir.SeqStmt((*init, step, *saves)))


def _seq(stmts: list) -> tir.Stmt:
    return stmts[0] if len(stmts) == 1 else tir.SeqStmt(tuple(stmts))


def _split(conv: _Conv, like: tir.Var, extent: int, size: int, make, independent: bool = False) -> tir.Stmt:
    """make(start, count) over [0, extent) in pieces of `size`: a loop of whole pieces, then the rest."""
    size = min(size, extent)
    whole, rest = divmod(extent, size)
    parts = []
    if whole > 1:
        tile = fresh(like, "tile")
        parts.append(loop(tile, conv.const(whole), make(tile * conv.const(size), size), independent=independent))
    elif whole == 1:
        parts.append(make(conv.const(0), size))
    if rest:
        parts.append(make(conv.const(whole * size), rest))
    return _seq(parts)


def apply(nest: Nest, cpu=None, epilogues=()) -> tir.Stmt:
    """The scheduled nest; `epilogues` (from fuse_epilogues) are applied to each output vector."""
    conv = _match(nest)
    channels, rows = WIDE_TILE if cpu is not None and cpu.wide_registers else NARROW_TILE
    n_var = fresh(nest.loop_of(conv._iter(conv.n)).loop_var, "s")
    like = {var: nest.loop_of(conv._iter(var)).loop_var for var in (conv.c, conv.h, conv.w)}

    def over_channels(c0, c_count):
        return _split(conv, like[conv.h], conv.extent(conv.h), rows, lambda h0, h_count: _split(
            conv, like[conv.w], conv.extent(conv.w), LANES,
            lambda w0, lanes: _tile(conv, n_var, c0, c_count, h0, h_count, w0, lanes, epilogues)))

    body = _split(conv, like[conv.c], conv.extent(conv.c), channels, over_channels, independent=True)
    return loop(n_var, nest.loop_of(conv._iter(conv.n)).extent, body, independent=True)


# -- fused epilogues ------------------------------------------------------------------

_ELEMENTWISE = (tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Max, tir.Min)


class _Epilogue:
    """An elementwise nest over the convolution's output shape, `out[n, c, h, w] = f(previous[...], ...)`:
    bias adds, relu, scaling. Other loads are either free of w (broadcast) or read at w (a vector)."""

    def __init__(self, nest: Nest, previous: tir.Buffer):
        self.nest, self.previous = nest, previous
        self.vars = nest.block.body.indices
        self.extents = [nest.loop_of(self._iter(v)).extent.value for v in self.vars]

    def _iter(self, var):
        return next(iv for iv in self.nest.block.iter_vars if iv.var is var)

    def at(self, expr, position):
        return self.nest.bound(expr, dict(zip(self.vars, position)))

    def _reads_previous(self, load) -> bool:
        """`previous` read at the element being written (a constant 0 index on an axis of extent 1)."""
        return len(load.indices) == 4 and all(
            index is var or (isinstance(index, tir.IntImm) and index.value == 0 and extent == 1)
            for index, var, extent in zip(load.indices, self.vars, self.extents))

    def _vector(self, expr, current, position, lanes):
        """`expr` computed for `lanes` columns, `current` standing for previous; None when not elementwise."""
        w = self.vars[-1]
        if isinstance(expr, tir.BufferLoad):
            if expr.buffer is self.previous:
                return current if self._reads_previous(expr) else None
            if any(uses(index, w) for index in expr.indices[:-1]) or expr.dtype != "float32":
                return None
            load = self.at(expr, position)
            if expr.indices and expr.indices[-1] is w:
                if lanes == 1:
                    return load
                return tir.BufferLoad(load.buffer, (*load.indices[:-1], tir.Ramp(
                    load.indices[-1], tir.IntImm(load.indices[-1].dtype, 1), lanes)))
            if uses(expr, w):
                return None
            return load if lanes == 1 else tir.Broadcast(load, lanes)
        if isinstance(expr, tir.FloatImm) and expr.dtype == "float32":
            return expr if lanes == 1 else tir.Broadcast(expr, lanes)
        if isinstance(expr, _ELEMENTWISE):
            a = self._vector(expr.a, current, position, lanes)
            b = self._vector(expr.b, current, position, lanes)
            return None if a is None or b is None else type(expr)(a, b)
        return None

    def vector_value(self, current, position, lanes):
        return self._vector(self.nest.block.body.value, current, position, lanes)


def _epilogue(stmt, previous: tir.Buffer, shape) -> _Epilogue | None:
    nest = match_nest(stmt)
    if nest is None or nest.block.init is not None or any(iv.iter_type != "DataPar" for iv in nest.block.iter_vars):
        return None
    store = nest.block.body
    if store.buffer.dtype != "float32" or len(store.indices) != 4 or len(set(map(id, store.indices))) != 4:
        return None
    if [d.value if isinstance(d, tir.IntImm) else None for d in store.buffer.shape] != shape:
        return None
    if not all(any(iv.var is index for iv in nest.block.iter_vars) for index in store.indices):
        return None
    stage = _Epilogue(nest, previous)
    if stage.extents != shape:
        return None
    probe = tir.Broadcast(tir.FloatImm("float32", 0.0), 2)
    if len(nest.block.iter_vars) != 4 or not _reads_buffer(store.value, previous):
        return None
    position = tuple(tir.IntImm(store.indices[0].dtype, 0) for _ in range(4))
    return stage if stage.vector_value(probe, position, 2) is not None else None


def _reads_buffer(expr, buffer) -> bool:
    return any(load.buffer is buffer for load in collect(expr, tir.BufferLoad))


def _read_later(statements, buffer) -> bool:
    return any(load.buffer is buffer for stmt in statements for load in collect(stmt, tir.BufferLoad))


def fuse_epilogues(statements: list, func: tir.PrimFunc, cpu=None, parallel: bool = True):
    """(statements, scheduled ids): each conv2d nest followed by elementwise nests over its output
    (bias add, relu: what FuseOps/FuseTIR put after it) becomes one scheduled statement that applies
    them to the register tile; the intermediate outputs are then never written. Others are unchanged."""
    params = {id(buffer) for _, buffer in func.buffer_map}
    result, done, index = [], set(), 0
    while index < len(statements):
        stmt = statements[index]
        nest = match_nest(stmt)
        conv = _match(nest) if nest is not None else None
        chain, previous = [], conv.store.buffer if conv is not None else None
        if conv is not None:
            shape = [d.value if isinstance(d, tir.IntImm) else None for d in previous.shape]
            for follower in statements[index + 1:]:
                if id(previous) in params:
                    break
                stage = _epilogue(follower, previous, shape)
                rest = statements[index + 1 + len(chain) + 1:]
                if stage is None or _read_later(rest, previous):
                    break
                chain.append(stage)
                previous = stage.nest.block.body.buffer
        if chain:
            scheduled = apply(nest, cpu, tuple(chain))
            if parallel:
                scheduled = parallelize(stmt, scheduled)
            else:
                scheduled = strip_marks(scheduled)
            result.append(scheduled)
            done.add(id(scheduled))
            index += 1 + len(chain)
        else:
            result.append(stmt)
            index += 1
    return result, done
