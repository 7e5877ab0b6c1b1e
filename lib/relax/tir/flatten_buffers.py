"""flatten-buffers: every buffer access becomes a 1-D access at its row-major offset.

What the lowered function keeps (the codegen relies on it):

- `buffer_map` keeps the ORIGINAL N-D buffers, so the kernel ABI still knows each
  parameter's shape, dtype and symbolic variables.
- The body starts with one `DeclBuffer` per parameter buffer declaring its flat
  view: a 1-D buffer of the same dtype over the same `data` variable, whose one
  extent is the product of the shape. Every access in the body goes through a flat
  view.
- `Allocate` extents become one element count, and its `DeclBuffer` declares the
  flat view of the allocated buffer (one is added for an allocation written the
  older way, with a `T.Buffer` over its pointer and no DeclBuffer).

A buffer with strides is addressed as `elem_offset + sum(index_k * stride_k)`;
otherwise row-major `sum(index_k * prod(shape[k+1:]))`. A vector index (`Ramp` in one
dimension) stays a Ramp over the flat offset; a Broadcast index broadcasts it.
"""

from __future__ import annotations

from ..ir import tir
from .convert_blocks_to_loops import BufferData
from .errors import LoweringError
from .rewrite import Rewriter, collect


def _product(values):
    result = None
    for value in values:
        if result is None:
            result = value
        elif isinstance(result, tir.IntImm) and isinstance(value, tir.IntImm):
            result = tir.IntImm(result.dtype, result.value * value.value)
        else:
            result = tir.Mul(*_promoted(result, value))
    return result


def _index_dtype(buffer: tir.Buffer) -> str:
    dtypes = [e.dtype for e in buffer.shape if e.dtype in ("int32", "int64")]
    return "int64" if "int64" in dtypes else "int32"


def _strides(buffer: tir.Buffer) -> list[tir.PrimExpr]:
    if buffer.strides:
        return list(buffer.strides)
    strides, running = [], tir.IntImm(_index_dtype(buffer), 1)
    for extent in reversed(buffer.shape):
        strides.insert(0, running)
        running = _product([extent, running]) if not _is_one(running) else extent
    return strides


def _is_one(expr) -> bool:
    return isinstance(expr, tir.IntImm) and expr.value == 1


def _is_zero(expr) -> bool:
    return expr is None or (isinstance(expr, tir.IntImm) and expr.value == 0)


def flat_extent(buffer: tir.Buffer) -> tir.PrimExpr:
    """The element count of `buffer`'s storage."""
    dtype = _index_dtype(buffer)
    if not buffer.shape:
        return tir.IntImm(dtype, 1)
    if buffer.strides:
        span = [_scaled(tir.Sub(extent, tir.IntImm(extent.dtype, 1)), stride)
                for extent, stride in zip(buffer.shape, buffer.strides)]
        return _sum(span + [tir.IntImm(dtype, 1)])
    return _product(list(buffer.shape))


def _promoted(a, b):
    """`a` and `b` in one integer type: int64 when either is (indices meet shapes)."""
    if a.dtype == b.dtype:
        return a, b
    wide = "int64" if "int64" in (a.dtype, b.dtype) else a.dtype
    return (a if a.dtype == wide else tir.Cast(wide, a)), (b if b.dtype == wide else tir.Cast(wide, b))


def _sum(terms):
    result = None
    for term in terms:
        result = term if result is None else tir.Add(*_promoted(result, term))
    return result


def _scaled(index, stride):
    return index if _is_one(stride) else tir.Mul(*_promoted(index, stride))


def flat_index(buffer: tir.Buffer, indices) -> tir.PrimExpr:
    """The 1-D index of `buffer[indices]` (a Ramp for a vector access)."""
    if buffer.axis_separators:
        raise LoweringError(f"buffer '{buffer.name}': axis_separators are not supported")
    if not indices:
        return tir.IntImm("int32", 0)
    vector = None
    terms = []
    for index, stride in zip(indices, _strides(buffer)):
        if isinstance(index, tir.Ramp):
            if vector is not None:
                raise LoweringError(f"buffer '{buffer.name}': two vector indices in one access")
            vector = (index, stride)
            terms.append(_scaled(index.base, stride))
        elif isinstance(index, tir.Broadcast):
            vector = vector or (index, None)
            terms.append(_scaled(index.value, stride))
        else:
            terms.append(_scaled(index, stride))
    offset = _sum(terms)
    if not _is_zero(buffer.elem_offset):
        offset = tir.Add(*_promoted(offset, buffer.elem_offset))
    if vector is None:
        return offset
    lanes_node, stride = vector
    if isinstance(lanes_node, tir.Broadcast):
        return tir.Broadcast(offset, lanes_node.lanes)
    return tir.Ramp(offset, _scaled(lanes_node.stride, stride), lanes_node.lanes)


def flat_view(buffer: tir.Buffer) -> tir.Buffer:
    return tir.Buffer(buffer.name, (flat_extent(buffer),), buffer.dtype, buffer.data,
                      scope=buffer.scope, align=buffer.align, offset_factor=buffer.offset_factor)


class _Flattener(Rewriter):
    def __init__(self):
        self.views: dict[int, tir.Buffer] = {}

    def view(self, buffer: tir.Buffer) -> tir.Buffer:
        if id(buffer) in self.views:
            return self.views[id(buffer)]
        if len(buffer.shape) == 1 and not buffer.strides and _is_zero(buffer.elem_offset):
            return buffer
        self.views[id(buffer)] = flat_view(buffer)
        return self.views[id(buffer)]

    def visit_BufferLoad(self, load):
        indices = tuple(self.visit(index) for index in load.indices)
        return tir.BufferLoad(self.view(load.buffer), (flat_index(load.buffer, indices),), span=load.span)

    def visit_BufferStore(self, store):
        indices = tuple(self.visit(index) for index in store.indices)
        return tir.BufferStore(self.view(store.buffer), self.visit(store.value),
                               (flat_index(store.buffer, indices),), span=store.span)

    def visit_DeclBuffer(self, decl):
        return tir.DeclBuffer(self.view(decl.buffer), self.visit(decl.body), span=decl.span)

    def visit_Allocate(self, alloc):
        count = _product(list(alloc.extents)) if alloc.extents else tir.IntImm("int32", 1)
        body = self.visit(alloc.body)
        if not (isinstance(body, tir.DeclBuffer) and body.buffer.data is alloc.buffer_var):
            body = tir.DeclBuffer(_declared_view(alloc, count, body), body)
        return alloc.with_fields(extents=(count,), body=body)


def _declared_view(alloc: tir.Allocate, count, body) -> tir.Buffer:
    """The buffer to declare for an allocation written the older way (T.allocate and a
    T.Buffer over its pointer, no DeclBuffer): the first flat buffer the body uses."""
    for access in collect(body, (tir.BufferLoad, tir.BufferStore)):
        if access.buffer.data is alloc.buffer_var:
            return access.buffer
    return tir.Buffer(alloc.buffer_var.name, (count,), alloc.dtype, alloc.buffer_var, scope=alloc.scope)


class FlattenBuffers:
    """The pass object: `FlattenBuffers().run(func)`.

    Before:

        A = T.match_buffer(a, (n, 128))
        for i, j in T.grid(n, 128):
            A[i, j] = 0.0

    After:

        A = T.match_buffer(a, (n, 128))          # buffer_map: unchanged, N-D
        A_1 = T.decl_buffer((n * 128,), data=A.data)
        for i, j in T.grid(n, 128):
            A_1[i * 128 + j] = 0.0
    """

    name = "flatten-buffers"

    def run(self, func: tir.PrimFunc) -> tir.PrimFunc:
        data = BufferData()
        buffer_map = tuple((var, data.visit(buffer)) for var, buffer in func.buffer_map)
        flattener = _Flattener()
        for _, buffer in buffer_map:
            # Even a 1-D parameter gets its own view: the body never touches buffer_map's buffers.
            flattener.views[id(buffer)] = flat_view(buffer)
        body = flattener.visit(data.visit(func.body))
        for _, buffer in reversed(buffer_map):
            body = tir.DeclBuffer(flattener.view(buffer), body)
        return func.with_fields(body=body, buffer_map=buffer_map)
