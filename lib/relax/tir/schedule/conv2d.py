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


# -- the padding stage -------------------------------------------------------------

def _evaluate(expr, env: dict):
    """The integer value of `expr` built from IntImm, the variables of `env`, + - *; None otherwise."""
    if isinstance(expr, tir.IntImm):
        return expr.value
    if isinstance(expr, tir.Var):
        return env.get(expr)
    if isinstance(expr, (tir.Add, tir.Sub, tir.Mul)):
        a, b = _evaluate(expr.a, env), _evaluate(expr.b, env)
        if a is None or b is None:
            return None
        return a + b if isinstance(expr, tir.Add) else a - b if isinstance(expr, tir.Sub) else a * b
    return None


def _offset(expr, var) -> int | None:
    """c when expr is var + c, else None."""
    values = [_evaluate(expr, {var: x}) for x in (0, 1, 2)]
    if None in values or values[1] - values[0] != 1 or values[2] - values[1] != 1:
        return None
    return values[0]


def _conjuncts(expr) -> list:
    if isinstance(expr, tir.And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    return [expr]


def _intervals(condition, variables) -> dict | None:
    """{var: [low, high)} that the condition (an And of `var + c  <op>  constant`) allows, or None."""
    bounds = {}
    for part in _conjuncts(condition):
        if not isinstance(part, (tir.GE, tir.GT, tir.LT, tir.LE)) or not isinstance(part.b, tir.IntImm):
            return None
        var = next((v for v in variables if uses(part.a, v)), None)
        offset = _offset(part.a, var) if var is not None else None
        if offset is None:
            return None
        limit = part.b.value - offset
        low, high = bounds.get(var, (None, None))
        if isinstance(part, (tir.GE, tir.GT)):
            limit += isinstance(part, tir.GT)
            low = limit if low is None else max(low, limit)
        else:
            limit += isinstance(part, tir.LE)
            high = limit if high is None else min(high, limit)
        bounds[var] = (low, high)
    return bounds


def _pad_parts(stmt, buffer: tir.Buffer):
    """(nest, source load, fill, [(before, size, after)] per axis) when `stmt` writes `buffer` as
    `buffer[i] = if_then_else(i inside, source[i - before], fill)` padding only the last two axes."""
    nest = match_nest(stmt)
    if nest is None or nest.block.init is not None or any(iv.iter_type != "DataPar" for iv in nest.block.iter_vars):
        return None
    store = nest.block.body
    if store.buffer is not buffer or len(store.indices) != 4 or len(nest.block.iter_vars) != 4:
        return None
    value = store.value
    if not (isinstance(value, tir.Call) and value.op == "tir.if_then_else" and len(value.args) == 3):
        return None
    condition, source, fill = value.args
    if not isinstance(source, tir.BufferLoad) or len(source.indices) != 4 or not isinstance(fill, tir.FloatImm):
        return None
    variables = list(store.indices)
    bounds = _intervals(condition, variables)
    if bounds is None or any(not isinstance(d, tir.IntImm) for d in (*buffer.shape, *source.buffer.shape)):
        return None
    axes = []
    for position, (var, index) in enumerate(zip(variables, source.indices)):
        offset = _offset(index, var)
        if offset is None or offset > 0:
            return None
        before, size = -offset, source.buffer.shape[position].value
        after = buffer.shape[position].value - size - before
        inside = bounds.get(var, (None, None))
        if after < 0 or (position < 2 and (before or after)):
            return None
        if (before or after) and inside != (before, before + size):
            return None
        if not (before or after) and inside not in ((None, None), (0, size), (None, size), (0, None)):
            return None
        axes.append((before, size, after))
    return nest, source, fill, axes


def _padding(stmt, buffer: tir.Buffer) -> tir.Stmt | None:
    """The padding nest writing `buffer` as plain loops with no per-element test: the border
    rows, then for each inner row its left border, the copied source row and its right border."""
    parts = _pad_parts(stmt, buffer)
    if parts is None:
        return None
    nest, source, fill, axes = parts
    n, c, h, w = nest.block.body.indices
    (_, batch, _), (_, channels, _), (top, height, bottom), (left, width, right) = axes
    index = nest.loop_of(next(iv for iv in nest.block.iter_vars if iv.var is w)).loop_var.dtype
    const = lambda value: tir.IntImm(index, value)  # noqa: E731
    names = {var: nest.loop_of(next(iv for iv in nest.block.iter_vars if iv.var is var)).loop_var
             for var in (n, c, h, w)}
    n_var, c_var = fresh(names[n], "s"), fresh(names[c], "s")

    def write(row, column, value):
        return tir.BufferStore(buffer, value, (n_var, c_var, row, column))

    def run(start: int, count: int, make):
        var = fresh(names[w], "pad")
        return loop(var, const(count), make(var + const(start))) if count > 0 else None

    def rows(start: int, count: int, make):
        var = fresh(names[h], "pad")
        return loop(var, const(count), make(var + const(start))) if count > 0 else None

    padded_width = left + width + right
    filled = lambda row: run(0, padded_width, lambda column: write(row, column, fill))  # noqa: E731

    def inner_row(row):
        copy = run(left, width, lambda column: write(row, column, nest.bound(
            source, {n: n_var, c: c_var, h: row, w: column})))
        pieces = [run(0, left, lambda column: write(row, column, fill)), copy,
                  run(left + width, right, lambda column: write(row, column, fill))]
        return _seq([piece for piece in pieces if piece is not None])

    pieces = [rows(0, top, filled), rows(top, height, inner_row), rows(top + height, bottom, filled)]
    body = _seq([piece for piece in pieces if piece is not None])
    return loop(n_var, const(batch), loop(c_var, const(channels), body, independent=True), independent=True)


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
        if conv is not None and result and id(result[-1]) not in done:
            padding = _padding(result[-1], conv.data.buffer)  # the padding stage just before, branch-free
            if padding is not None:
                original = result.pop()
                result.append(parallelize(original, padding) if parallel else strip_marks(padding))
                done.add(id(result[-1]))
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
