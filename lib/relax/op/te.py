"""A small tensor-expression language that builds TIR PrimFuncs for legalization.

An operator's legalization says what each output element is, over index variables,
and `create_prim_func` turns that into the block-form PrimFunc that TVM's
LegalizeOps produces (and that fusion reads):

    A = placeholder((n, 4), "float32", "A")
    B = compute((n, 4), lambda i, j: A[i, j] * 2.0, "T_multiply")
    func = create_prim_func([A, B])

gives one loop nest `for ax0, ax1 in T.grid(n, 4)` holding a block "T_multiply"
with spatial iterators bound to the loops, its reads and writes, and the store.
A reduction (`reduce_sum`, `reduce_max`, ...) gives a block with CommReduce
iterators and an `init` statement. Index arithmetic is int64, as Relax shapes are.
"""

from __future__ import annotations

import weakref
from typing import Callable, Sequence

from ..ir import dtype as dt
from ..ir import tir
from ..ir.node import FrozenDict, Node, field_values
from ..records import record
from .canonical import canonical_dim

INDEX_DTYPE = "int64"


def as_index(value) -> tir.PrimExpr:
    """An int or PrimExpr as an int64 index expression."""
    if isinstance(value, tir.PrimExpr):
        if value.dtype != INDEX_DTYPE and dt.is_int(value.dtype) and isinstance(value, tir.IntImm):
            return tir.IntImm(INDEX_DTYPE, value.value)
        return value
    return tir.IntImm(INDEX_DTYPE, int(value))


@record(eq=False)
class ReduceAxis:
    """A reduction iterator over [0, extent)."""

    var: tir.Var
    extent: tir.PrimExpr


def reduce_axis(extent, name: str = "k") -> ReduceAxis:
    return ReduceAxis(tir.Var(f"v_{name}", INDEX_DTYPE), as_index(extent))


@record(eq=False)
class Reduce:
    """A commutative reduction of `source` over `axes`, starting from `identity`."""

    combine: Callable[[tir.PrimExpr, tir.PrimExpr], tir.PrimExpr]
    source: tir.PrimExpr
    axes: tuple[ReduceAxis, ...]
    identity: tir.PrimExpr


def _axes(axis) -> tuple[ReduceAxis, ...]:
    return tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)


def reduce_sum(source: tir.PrimExpr, axis) -> Reduce:
    return Reduce(tir.Add, source, _axes(axis), _zero(source.dtype))


def reduce_prod(source: tir.PrimExpr, axis) -> Reduce:
    return Reduce(tir.Mul, source, _axes(axis), _one(source.dtype))


def reduce_max(source: tir.PrimExpr, axis) -> Reduce:
    return Reduce(tir.Max, source, _axes(axis), min_value(source.dtype))


def reduce_min(source: tir.PrimExpr, axis) -> Reduce:
    return Reduce(tir.Min, source, _axes(axis), max_value(source.dtype))


def _zero(dtype: str) -> tir.PrimExpr:
    return tir.FloatImm(dtype, 0.0) if dt.is_float(dtype) else tir.IntImm(dtype, 0)


def _one(dtype: str) -> tir.PrimExpr:
    return tir.FloatImm(dtype, 1.0) if dt.is_float(dtype) else tir.IntImm(dtype, 1)


def min_value(dtype: str) -> tir.PrimExpr:
    """The smallest value of a dtype (-inf for floats), the identity of max."""
    if dt.is_float(dtype):
        return tir.FloatImm(dtype, float("-inf"))
    if dt.is_bool(dtype):
        return tir.IntImm(dtype, 0)
    bits = dt.bits(dtype)
    return tir.IntImm(dtype, 0 if dt.is_uint(dtype) else -(1 << (bits - 1)))


def max_value(dtype: str) -> tir.PrimExpr:
    if dt.is_float(dtype):
        return tir.FloatImm(dtype, float("inf"))
    if dt.is_bool(dtype):
        return tir.IntImm(dtype, 1)
    bits = dt.bits(dtype)
    return tir.IntImm(dtype, (1 << bits) - 1 if dt.is_uint(dtype) else (1 << (bits - 1)) - 1)


@record(eq=False)
class Tensor:
    """A placeholder (an input) or a computed tensor, backed by a TIR Buffer."""

    buffer: tir.Buffer
    axes: tuple[tir.Var, ...] = ()
    body: tir.PrimExpr | Reduce | None = None  # None for a placeholder
    inputs: tuple["Tensor", ...] = ()  # the tensors `body` reads

    @property
    def shape(self) -> tuple[tir.PrimExpr, ...]:
        return self.buffer.shape

    @property
    def dtype(self) -> str:
        return self.buffer.dtype

    @property
    def name(self) -> str:
        return self.buffer.name

    @property
    def ndim(self) -> int:
        return len(self.buffer.shape)

    def __getitem__(self, indices) -> tir.BufferLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise ValueError(f"{self.name} has {self.ndim} dimensions, indexed with {len(indices)}")
        return tir.BufferLoad(self.buffer, tuple(as_index(i) for i in indices))


# Tensors by their buffer, so that a computation can find the tensors it reads from
# the BufferLoads of its body. Values are weak: an entry lives as long as its tensor.
_TENSOR_OF_BUFFER: "weakref.WeakValueDictionary[tir.Buffer, Tensor]" = weakref.WeakValueDictionary()


def _tensor(buffer: tir.Buffer, axes=(), body=None, inputs=()) -> Tensor:
    tensor = Tensor(buffer, axes, body, inputs)
    _TENSOR_OF_BUFFER[buffer] = tensor
    return tensor


def placeholder(shape: Sequence, dtype: str, name: str) -> Tensor:
    return _tensor(tir.Buffer(name, tuple(as_index(d) for d in shape), dtype, tir.Var(name, "handle")))


def compute(shape: Sequence, fcompute: Callable[..., tir.PrimExpr | Reduce], name: str = "T_compute",
            dtype: str | None = None, axis_names: Sequence[str] | None = None) -> Tensor:
    """A tensor whose element at each index is `fcompute(*index_vars)`."""
    # Sizes in canonical form (n * 2 for a concat of two n), like the struct info the
    # operator inferred: the call's output shape and the kernel's buffer then agree.
    dims = tuple(canonical_dim(as_index(d)) for d in shape)
    names = list(axis_names) if axis_names else [f"ax{i}" for i in range(len(dims))]
    axes = tuple(tir.Var(f"v_{axis_name}", INDEX_DTYPE) for axis_name in names)
    body = fcompute(*axes)
    if not isinstance(body, (tir.PrimExpr, Reduce)):
        body = tir.const(body, dtype)
    out_dtype = dtype or (body.source.dtype if isinstance(body, Reduce) else body.dtype)
    if not isinstance(body, Reduce) and body.dtype != out_dtype:
        body = tir.Cast(out_dtype, body)
    buffer = tir.Buffer(name, dims, out_dtype, tir.Var(name, "handle"))
    loads: list[tir.BufferLoad] = []
    _collect_loads(body.source if isinstance(body, Reduce) else body, loads)
    inputs = []
    for load in loads:
        producer = _TENSOR_OF_BUFFER.get(load.buffer)
        if producer is not None and all(producer is not known for known in inputs):
            inputs.append(producer)
    return _tensor(buffer, axes, body, tuple(inputs))


def _collect_loads(expr, out: list[tir.BufferLoad]) -> None:
    if isinstance(expr, tir.BufferLoad):
        out.append(expr)
    if isinstance(expr, Node):
        for _, value in field_values(expr):
            if isinstance(value, tuple):
                for item in value:
                    _collect_loads(item, out)
            elif isinstance(value, tir.PrimExpr):
                _collect_loads(value, out)


def _regions(loads: list[tir.BufferLoad]) -> tuple[tir.BufferRegion, ...]:
    """One region per buffer: the point read if all accesses agree, else the whole buffer."""
    by_buffer: dict[int, tuple[tir.Buffer, list[tuple]]] = {}
    for load in loads:
        by_buffer.setdefault(id(load.buffer), (load.buffer, []))[1].append(load.indices)
    regions = []
    for buffer, accesses in by_buffer.values():
        first = accesses[0]
        same = all(len(a) == len(first) and all(x is y for x, y in zip(a, first)) for a in accesses)
        if same:
            ranges = tuple(tir.Range(index, tir.IntImm(INDEX_DTYPE, 1)) for index in first)
        else:
            ranges = tuple(tir.Range(tir.IntImm(INDEX_DTYPE, 0), extent) for extent in buffer.shape)
        regions.append(tir.BufferRegion(buffer, ranges))
    return tuple(regions)


def _point_region(buffer: tir.Buffer, indices: Sequence[tir.PrimExpr]) -> tir.BufferRegion:
    return tir.BufferRegion(buffer, tuple(tir.Range(i, tir.IntImm(INDEX_DTYPE, 1)) for i in indices))


def _block_for(tensor: Tensor) -> tir.Stmt:
    """The loop nest and block that compute one tensor."""
    body = tensor.body
    reduce_axes = body.axes if isinstance(body, Reduce) else ()
    iter_vars = [tir.IterVar(v, tir.Range(as_index(0), extent), "DataPar")
                 for v, extent in zip(tensor.axes, tensor.shape)]
    iter_vars += [tir.IterVar(axis.var, tir.Range(as_index(0), axis.extent), "CommReduce") for axis in reduce_axes]
    loop_vars = [tir.Var(iv.var.name[2:] if iv.var.name.startswith("v_") else iv.var.name, INDEX_DTYPE)
                 for iv in iter_vars]
    out_index = tensor.axes
    init = None
    if isinstance(body, Reduce):
        current = tir.BufferLoad(tensor.buffer, out_index)
        value = body.combine(current, body.source)
        init = tir.BufferStore(tensor.buffer, body.identity, out_index)
        loads: list[tir.BufferLoad] = []
        _collect_loads(body.source, loads)
    else:
        value = body
        loads = []
        _collect_loads(body, loads)
    block = tir.Block(
        tensor.name,
        tuple(iter_vars),
        _regions(loads),
        (_point_region(tensor.buffer, out_index),),
        tir.BufferStore(tensor.buffer, value, out_index),
        init=init,
    )
    stmt: tir.Stmt = tir.BlockRealize(tuple(loop_vars), tir.IntImm("bool", 1), block)
    for loop_var, iter_var in reversed(list(zip(loop_vars, iter_vars))):
        stmt = tir.For(loop_var, as_index(0), iter_var.dom.extent, "serial", stmt)
    return stmt


def _stages(outputs: Sequence[Tensor]) -> list[Tensor]:
    """Every computed tensor the outputs depend on, producers before consumers."""
    order: list[Tensor] = []
    seen: set[int] = set()

    def visit(tensor: Tensor) -> None:
        if id(tensor) in seen or tensor.body is None:
            return
        seen.add(id(tensor))
        for producer in tensor.inputs:
            visit(producer)
        order.append(tensor)

    for tensor in outputs:
        visit(tensor)
    return order


def create_prim_func(args: Sequence[Tensor], name: str | None = None,
                     tir_var_params: Sequence[tir.Var] = ()) -> tir.PrimFunc:
    """A PrimFunc taking `args` (inputs, then outputs) as buffers.

    Computed tensors that are not in `args` become intermediate buffers allocated
    in the root block. `tir_var_params` are extra int64 scalar parameters (symbolic
    sizes that the buffers' shapes do not determine).
    """
    outputs = [t for t in args if t.body is not None]
    stages = _stages(outputs)
    arg_buffers = {id(t.buffer) for t in args}
    intermediates = tuple(t.buffer for t in stages if id(t.buffer) not in arg_buffers)
    statements = [_block_for(t) for t in stages]
    body = statements[0] if len(statements) == 1 else tir.SeqStmt(tuple(statements))
    root = tir.Block("root", (), (), (), body, alloc_buffers=intermediates)
    root_realize = tir.BlockRealize((), tir.IntImm("bool", 1), root)
    # Each buffer parameter is a handle of its own, apart from the buffer's data, as TVM
    # builds it and as the parser reads `A: T.Buffer(...)` back: printed and re-read, the
    # kernel is the same IR (the staged build lowers what the one-shot build does).
    handles = tuple(tir.Var(t.buffer.name, "handle") for t in args)
    params = handles + tuple(tir_var_params)
    buffer_map = tuple((handle, t.buffer) for handle, t in zip(handles, args))
    attrs = {"tirx.noalias": True}
    if name is not None:
        attrs = {"global_symbol": name, **attrs}
    return tir.PrimFunc(params, root_realize, None, buffer_map, FrozenDict(attrs))
