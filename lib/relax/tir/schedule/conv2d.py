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
from .nest import Nest, fresh, loop
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


def _tile(conv: _Conv, n, c0, channels: int, h0, rows: int, w0, lanes: int) -> tir.Stmt:
    """One register tile: output channels c0.., rows h0.., columns w0.. (lanes of them)."""
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
        out = at(conv.store, c0 + const(i), h0 + const(j), w0)
        saves.append(tir.BufferStore(out.buffer, tir.BufferLoad(acc, slot(i, j)),
                                     (*out.indices[:-1], ramp(out.indices[-1]))))
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


def apply(nest: Nest, cpu=None) -> tir.Stmt:
    conv = _match(nest)
    channels, rows = WIDE_TILE if cpu is not None and cpu.wide_registers else NARROW_TILE
    n_var = fresh(nest.loop_of(conv._iter(conv.n)).loop_var, "s")
    like = {var: nest.loop_of(conv._iter(var)).loop_var for var in (conv.c, conv.h, conv.w)}

    def over_channels(c0, c_count):
        return _split(conv, like[conv.h], conv.extent(conv.h), rows, lambda h0, h_count: _split(
            conv, like[conv.w], conv.extent(conv.w), LANES,
            lambda w0, lanes: _tile(conv, n_var, c0, c_count, h0, h_count, w0, lanes)))

    body = _split(conv, like[conv.c], conv.extent(conv.c), channels, over_channels, independent=True)
    return loop(n_var, nest.loop_of(conv._iter(conv.n)).extent, body, independent=True)
