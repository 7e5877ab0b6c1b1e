"""Rule: a float32 conv2d keeps a tile of output vectors in registers (direct convolution).

Legalized nn.conv2d (groups 1) is one reduction nest; in NCHW / OIHW
`out[n, c, h, w] += data[n, rc, h*s + ry*d, w*s + rx*d] * weight[c, rc, ry, rx]`
(data is "pad_temp" when there is padding: that stage is its own nest, rewritten
by conv2d_padding.py into border fills and row copies with no per-element test). The rule
vectorizes the output's last axis v: one operand ("vec") reads v in its last index
only, the other ("bc") not at all, so a vector of outputs (the target's lanes) is a vector load of
vec (contiguous at stride 1) times a broadcast of bc. A register tile holds
A x B x VECTORS output vectors over the other two output axes; every reduction step
does that many fused multiply-adds, and the tile is written once at the end, through
the elementwise nests fused after the convolution (bias add, relu: see
fuse_epilogues), so the convolution's own output is never stored.

  NCHW: v = w, vec = data, bc = weight; 4 channels x 4 rows x 1 vector (4 data vectors, 4 weights a step)
  NHWC / HWIO: v = c, vec = weight, bc = data; 1 row x 6 columns x 2 vectors (2 weight vectors shared)

(with 32 vector registers, AVX-512 or NEON; with 16, 4 x 1 x 2 and 1 x 3 x 2: the CPU model, cpu.py).

Tiles that do not fill the output shrink (fewer channels, rows or lanes), so no
per-element test remains. Each output element adds its terms in the plain nest's
order (rc, ry, rx); the fused multiply-add rounds once per term instead of twice.

    for n, c, h, w, rc, ry, rx in T.grid(...):       for n, c_tile in T.grid(N, C // 4):      # parallel
        out[n, c, h, w] += data[...] * weight[...]        for h_tile, w_tile in T.grid(H // 4, W // 16):
                                                ->            acc = T.alloc_local((4 * 4 * 16,))   # 16 vectors (AVX-512)
                                                              for rc, ry, rx in T.grid(...):
                                                                  acc[k] = T.fma(T.Broadcast(weight[c0 + i, rc, ry, rx], 16),
                                                                                 data[n, rc, h0 + j + ry, w0 + rx:w0 + rx + 16], acc[k]) ...
                                                              out[n, c0 + i, h0 + j, w0:w0 + 16] = acc[k] ...

Falls back (no match) for other dtypes, grouped and depthwise convolutions (an
output axis read by both operands), symbolic shapes and casts (out_dtype differing).
Figures for the CNN benchmark's convolutions: docs/tir-lowering.md.
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir import tir
from ..convert_blocks_to_loops import allocation
from ..loop_nests import uses
from ..rewrite import collect
from .conv2d_padding import padding_as_loops
from .conv2d_rows import CHUNK_ROWS, RowChunks, row_chunks
from .cpu import CpuInfo
from .nest import Nest, fresh, loop, match_nest, seq
from .parallel import big_enough, parallelize, strip_marks
from .reduction_order import reduction_parts
from .vector_exprs import broadcast, ramp

# (a, b, vectors) per register tile with 32 / 16 vector registers of the target's lanes, by layout:
# NCHW (the data vector moves with b = h): 4 channels x 4 rows x 1 vector of w, 4 data vectors
# (16 registers: 4 x 1 x 2, 8 accumulators, 2 data vectors, a broadcast and a product without FMA;
# 2 x 2 x 2 spilled in its inner loop at x86-64-v2 and -v3: test_register_tile_assembly.py);
# NHWC (the weight vector is shared): 1 row x 6 columns x 2 vectors of channels, 2 weight vectors
# (16 registers: 1 x 3 x 2, 6 accumulators).
WIDE_TILE, NARROW_TILE = (4, 4, 1), (4, 1, 2)
SHARED_WIDE_TILE, SHARED_NARROW_TILE = (1, 6, 2), (1, 3, 2)


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
    """A matched nest: `out[n, a, b, v] += bc[...] * vec[...]`, v the output's last axis, where
    `vec` reads v in its last index only (stride `stride`) and `bc` does not read v."""

    def __init__(self, nest: Nest, store, reduce, vec, bc, stride: int):
        self.nest, self.store, self.reduce = nest, store, reduce
        self.vec, self.bc, self.stride = vec, bc, stride
        self.n, self.a, self.b, self.v = store.indices
        self.index = nest.loop_of(self._iter(self.v)).loop_var.dtype

    def _iter(self, var):
        return next(iv for iv in self.nest.block.iter_vars if iv.var is var)

    def extent(self, var) -> int:
        return self.nest.loop_of(self._iter(var)).extent.value

    def const(self, value: int) -> tir.IntImm:
        return tir.IntImm(self.index, value)

    @property
    def shared_vector(self) -> bool:
        """Whether one vector operand serves the whole tile (NHWC: the weights)."""
        return not (uses(self.vec, self.a) or uses(self.vec, self.b))


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
    v = store.indices[-1]
    vec, bc = (x, y) if uses(x, v) else (y, x)
    if uses(bc, v) or not uses(vec, v) or any(uses(index, v) for index in vec.indices[:-1]):
        return None
    # Each other output axis is read by one operand only: a shared one (the output channel of a
    # grouped or depthwise convolution, the batch of a batched matmul) keeps the generic path.
    if any(uses(vec, var) and uses(bc, var) for var in store.indices[:-1]):
        return None
    stride = _coefficient(vec.indices[-1], v)
    if stride is None or stride < 1:
        return None
    if uses(nest.block.init.value, v) or any(not isinstance(loop_.extent, tir.IntImm) for loop_ in nest.loops):
        return None
    return _Conv(nest, store, reduce, vec, bc, stride)


def matches(nest: Nest, cpu=None) -> bool:
    return _match(nest) is not None


def _tile(conv: _Conv, n, a0, a_count: int, b0, b_count: int, v0, width: int, vector_lanes: int,
          epilogues=()) -> tir.Stmt:
    """One register tile: outputs [n, a0 + i, b0 + j, v0 .. v0 + width) in vectors of up to `vector_lanes`,
    each vector passed through the `epilogues` before it is stored."""
    nest, const = conv.nest, conv.const
    reduce_vars = {iv.var: fresh(nest.loop_of(iv).loop_var, "r") for iv in conv.reduce}

    def at(expr, a, b, v):
        return nest.bound(expr, {**reduce_vars, conv.n: n, conv.a: a, conv.b: b, conv.v: v})

    pieces = [(k, min(vector_lanes, width - k * vector_lanes)) for k in range(-(-width // vector_lanes))]
    slots, offset = [], 0
    for i in range(a_count):
        for j in range(b_count):
            for k, lanes in pieces:
                slots.append((i, j, k, lanes, offset))
                offset += lanes
    name = conv.store.buffer.name
    acc = tir.Buffer(f"{name}_tile", (const(offset),), "float32", tir.Var(f"{name}_tile", "handle"), scope="local")

    def slot(lanes, start):
        return (ramp(const(start), lanes),)

    def where(i, j, k):
        return a0 + const(i), b0 + const(j), v0 + const(k * vector_lanes)

    init = [tir.BufferStore(acc, broadcast(at(nest.block.init.value, *where(i, j, k)), lanes), slot(lanes, start))
            for i, j, k, lanes, start in slots]
    updates = []
    for i, j, k, lanes, start in slots:
        vector = at(conv.vec, *where(i, j, k))
        vector = tir.BufferLoad(vector.buffer, (*vector.indices[:-1], ramp(vector.indices[-1], lanes, conv.stride)))
        scalar = broadcast(at(conv.bc, *where(i, j, k)), lanes)
        total = tir.Call(dt.with_lanes("float32", lanes), "tir.fma", (scalar, vector, tir.BufferLoad(acc, slot(lanes, start))))
        updates.append(tir.BufferStore(acc, total, slot(lanes, start)))
    step: tir.Stmt = tir.SeqStmt(tuple(updates))
    for iv in reversed(conv.reduce):
        step = loop(reduce_vars[iv.var], nest.loop_of(iv).extent, step)
    saves = []
    for i, j, k, lanes, start in slots:
        position = (n, *where(i, j, k))
        value = tir.BufferLoad(acc, slot(lanes, start))
        out = at(conv.store, *position[1:])
        for stage in epilogues:
            value = stage.vector_value(value, position, lanes)
            out = stage.at(stage.nest.block.body, position)
        saves.append(tir.BufferStore(out.buffer, value, (*out.indices[:-1], ramp(out.indices[-1], lanes))))
    return allocation(acc, tir.SeqStmt((*init, step, *saves)))


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
    return seq(parts)


def _tile_shape(conv: _Conv, cpu: CpuInfo) -> tuple[int, int, int]:
    """(a, b, vectors) of the register tile for this layout and the target's vector registers.
    With one lane (float registers only: riscv64 without V) every data and weight value of
    the window is a register of its own, and the NCHW wide tile's 16 accumulators spilled
    there: such a target takes the 16-register tiles."""
    wide = cpu.vector_registers >= 32 and cpu.lanes > 1
    if conv.shared_vector:
        return SHARED_WIDE_TILE if wide else SHARED_NARROW_TILE
    return WIDE_TILE if wide else NARROW_TILE


def _chunk_rows(conv: _Conv, cpu: CpuInfo) -> int:
    """Output rows per chunk of conv2d_rows: whole register tiles, at least CHUNK_ROWS."""
    b_tile = _tile_shape(conv, cpu)[1]
    return b_tile * -(-CHUNK_ROWS // b_tile)


def apply(nest: Nest, cpu=None, epilogues=(), chunks: RowChunks | None = None) -> tir.Stmt:
    """The scheduled nest; `epilogues` (from fuse_epilogues) are applied to each output vector;
    with `chunks` (conv2d_rows), in parallel chunks of output rows that pad their own input rows."""
    conv = _match(nest) if chunks is None else chunks.conv
    cpu = cpu if cpu is not None else CpuInfo()
    lanes = cpu.lanes
    a_tile, b_tile, vectors = _tile_shape(conv, cpu)
    n_var = fresh(nest.loop_of(conv._iter(conv.n)).loop_var, "s")
    like = {var: nest.loop_of(conv._iter(var)).loop_var for var in (conv.a, conv.b, conv.v)}

    def tiles(reader: _Conv, b_first, b_extent: int):
        """Register tiles over every output channel and the rows [b_first, b_first + b_extent),
        reading the data where `reader` (the convolution, or a chunk's view of it) reads it."""
        def over_a(a0, a_count):
            return _split(reader, like[conv.b], b_extent, b_tile, lambda b0, b_count: _split(
                reader, like[conv.v], conv.extent(conv.v), vectors * lanes,
                lambda v0, width: _tile(reader, n_var, a0, a_count, b0 if b_first is None else b_first + b0,
                                        b_count, v0, width, lanes, epilogues)),
                independent=True)
        return _split(reader, like[conv.a], conv.extent(conv.a), a_tile, over_a, independent=True)

    if chunks is None:
        body = tiles(conv, None, conv.extent(conv.b))
    else:
        body = _split(conv, like[conv.b], conv.extent(conv.b), chunks.rows, lambda start, count: chunks.chunk(
            n_var, start, count, lambda reading: tiles(reading, start, count)), independent=True)
    return loop(n_var, nest.loop_of(conv._iter(conv.n)).extent, body, independent=True)


# -- fused epilogues ------------------------------------------------------------------

_ELEMENTWISE = (tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Max, tir.Min)


class _Epilogue:
    """An elementwise nest over the convolution's output shape, `out[i0, i1, i2, w] = f(previous[...], ...)`
    (w the vector axis: the width in NCHW, the channels in NHWC): bias adds, relu, scaling. Its other
    loads are either free of w (broadcast) or read with w as their last index (a vector)."""

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
                return tir.BufferLoad(load.buffer, (*load.indices[:-1], ramp(load.indices[-1], lanes)))
            if uses(expr, w):
                return None
            return broadcast(load, lanes)
        if isinstance(expr, tir.FloatImm) and expr.dtype == "float32":
            return broadcast(expr, lanes)
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
    if len(nest.block.iter_vars) != 4 or not _reads_buffer(store.value, previous):
        return None
    stage = _Epilogue(nest, previous)
    if stage.extents != shape:
        return None
    # Fusable when its value can be built for a vector (a 2-lane probe standing for the tile's).
    probe = tir.Broadcast(tir.FloatImm("float32", 0.0), 2)
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
        chunks = None
        if (parallel and conv is not None and result and id(result[-1]) not in done and big_enough(stmt)
                and id(conv.vec.buffer) not in params):  # a padded buffer the caller passed must be written
            chunks = row_chunks(conv, result[-1], _chunk_rows(conv, cpu or CpuInfo()), statements[index + 1:])
        if chunks is not None:
            result.pop()  # the padded copy is never made: each chunk of rows pads its own
        elif conv is not None and result and id(result[-1]) not in done:
            padding = padding_as_loops(result[-1], conv.vec.buffer) or padding_as_loops(result[-1], conv.bc.buffer)
            if padding is not None:
                original = result.pop()
                result.append(parallelize(original, padding) if parallel else strip_marks(padding))
                done.add(id(result[-1]))
        if chain or chunks is not None:
            scheduled = apply(nest, cpu, tuple(chain), chunks)
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
