"""Multi-dimensional indexing: gather_nd, scatter_nd, index_tensor, index_put.

Each names data elements by several index values at once: gather_nd and scatter_nd
take them from the last axis of one index tensor (ONNX GatherND/ScatterND),
index_tensor and index_put from a tuple of index tensors broadcast together (numpy
`data[I0, I1]`, PyTorch `index_put_`). Negative indices count from the end, as in
numpy (TVM 0.27 wraps them only in index_put; elsewhere they read out of bounds); an
index outside [-n, n) stops the kernel with an error (index_check.py).

The gathers are tensor expressions; the scatters are loop-nest kernels (loops.py)
that copy data and then write, in order, where the indices point, so that a later
index wins and duplicates accumulate.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import loops, te
from .index_check import checked_position
from .registry import AttrSpec, OpDef, register
from .shape import (
    BroadcastError, broadcast_index, broadcast_shapes, format_shape, int64, make_tensor_info, same_dim,
    static_value, tensor_info,
)

SCATTER_ND_REDUCTIONS = {"update": None, "add": tir.Add, "mul": tir.Mul, "min": tir.Min, "max": tir.Max}




def _check_same_dtype(call, data: TensorStructInfo, other: TensorStructInfo, name: str) -> None:
    if "void" not in (data.dtype, other.dtype) and data.dtype != other.dtype:
        raise call.error(f"{name} must have the data type of data ({data.dtype}), got {other.dtype}")


def _check_dims(call, what: str, got, expected) -> None:
    """Two shapes that must agree; an error when a pair of sizes certainly differs."""
    if len(got) != len(expected) or any(same_dim(a, b) is False for a, b in zip(got, expected)):
        raise call.error(f"{what} must have shape {format_shape(expected)}, got {format_shape(got)}")


def _call_tir(name: str, args, out_info: TensorStructInfo) -> rx.Call:
    return rx.Call(rx.Op("relax.call_tir"), (rx.GlobalVar(name), rx.Tuple(tuple(args))), sinfo_args=(out_info,))


# -- gather_nd and scatter_nd ----------------------------------------------------------------
def _index_depth(call, data: TensorStructInfo, indices: TensorStructInfo, batch_dims: int) -> int | None:
    """How many data axes one index row names (the last size of indices), checked."""
    if indices.ndim == 0:
        raise call.error("indices must have rank at least 1")
    if indices.shape_values is None:
        return None
    depth = static_value(indices.shape_values[-1])
    if depth is not None and data.ndim >= 0 and depth > data.ndim - batch_dims:
        raise call.error(f"indices {format_shape(indices.shape_values)} name {depth} axes but data "
                         f"has {data.ndim - batch_dims} after {batch_dims} batch axes")
    return depth


def _gather_nd_infer(call) -> TensorStructInfo:
    data, indices = tensor_info(call, 0), tensor_info(call, 1)
    if indices.dtype not in ("int64", "void"):
        raise call.error(f"indices must be int64, got {indices.dtype}")
    batch_dims = call.attrs["batch_dims"]
    if batch_dims < 0 or data.ndim >= 0 and batch_dims >= data.ndim:
        raise call.error(f"batch_dims {batch_dims} must be in [0, {max(data.ndim, 1)})")
    depth = _index_depth(call, data, indices, batch_dims)
    if depth is None or data.shape_values is None:
        ndim = indices.ndim - 1 + data.ndim - batch_dims - depth if depth is not None and data.ndim >= 0 else -1
        return TensorStructInfo(None, data.dtype, ndim)
    _check_dims(call, "the batch axes of indices", indices.shape_values[:batch_dims], data.shape_values[:batch_dims])
    return make_tensor_info(indices.shape_values[:-1] + data.shape_values[batch_dims + depth:], data.dtype)


def _gather_nd_legalize(call, context):
    out = _gather_nd_infer(call)
    if out.shape_values is None:
        return None
    batch_dims = call.attrs["batch_dims"]

    def fcompute(data, indices):
        depth = static_value(indices.shape[-1])
        rows = indices.ndim - 1

        def body(*i):
            named = tuple(checked_position(indices[i[:rows] + (int64(k),)], data.shape[batch_dims + k], "R.gather_nd")
                          for k in range(depth))
            return data[i[:batch_dims] + named + i[rows:]]

        return te.compute(indices.shape[:-1] + data.shape[batch_dims + depth:], body, "T_gather_nd")

    return context.call_te(fcompute, call.args, call.arg_info, "gather_nd")


def _scatter_nd_infer(call) -> TensorStructInfo:
    data, indices, updates = (tensor_info(call, i) for i in range(3))
    if call.attrs["reduction"] not in SCATTER_ND_REDUCTIONS:
        raise call.error(f"reduction must be one of {', '.join(SCATTER_ND_REDUCTIONS)}")
    if not (dt.is_int(indices.dtype) or indices.dtype == "void"):
        raise call.error(f"indices must be integers, got {indices.dtype}")
    _check_same_dtype(call, data, updates, "updates")
    depth = _index_depth(call, data, indices, 0)
    if depth is not None and data.shape_values is not None and updates.shape_values is not None:
        expected = indices.shape_values[:-1] + data.shape_values[depth:]
        _check_dims(call, "updates (indices.shape[:-1] + data.shape[K:])", updates.shape_values, expected)
    return data.with_fields(span=None)


def _copy(data: tir.Buffer, out: tir.Buffer) -> tir.Stmt:
    return loops.loop_nest(data.shape, lambda i: tir.BufferStore(out, tir.BufferLoad(data, i), i), "i")


def _scatter_nd_legalize(call, context):
    data_info, index_info, update_info = (tensor_info(call, i) for i in range(3))
    if None in (data_info.shape_values, index_info.shape_values, update_info.shape_values):
        return None
    depth = static_value(index_info.shape_values[-1])
    if depth is None:
        return None
    combine = SCATTER_ND_REDUCTIONS[call.attrs["reduction"]]
    data = loops.buffer("A", data_info.shape_values, data_info.dtype)
    indices = loops.buffer("B", index_info.shape_values, index_info.dtype)
    updates = loops.buffer("C", update_info.shape_values, update_info.dtype)
    out = loops.buffer("T_scatter_nd", data_info.shape_values, data_info.dtype)
    rows = len(index_info.shape_values) - 1

    def scatter(j):
        row, rest = j[:rows], j[rows:]
        named = tuple(checked_position(tir.BufferLoad(indices, row + (int64(k),)), data.shape[k],
                                        "R.scatter_nd") for k in range(depth))
        value = tir.BufferLoad(updates, j)
        if combine is not None:
            value = combine(tir.BufferLoad(out, named + rest), value)
        return tir.BufferStore(out, value, named + rest)

    name = context.unique_name("scatter_nd")
    body = loops.sequence(_copy(data, out), loops.loop_nest(update_info.shape_values, scatter, "j"))
    context.new_functions[name] = loops.prim_func([data, indices, updates, out], body)
    return _call_tir(name, call.args, data_info.with_fields(span=None))


register(OpDef(
    "relax.gather_nd", ("data", "indices"), (AttrSpec("batch_dims", 0),), _gather_nd_infer, "injective",
    _gather_nd_legalize, "out[i] = data[indices[i]]: each row of the last index axis names data axes",
))
register(OpDef(
    "relax.scatter_nd", ("data", "indices", "updates"), (AttrSpec("reduction", "update"),), _scatter_nd_infer,
    "opaque", _scatter_nd_legalize, "a copy of data with updates written at the positions index rows name",
))


# -- index_tensor and index_put ------------------------------------------------------------------
def _index_infos(call, position: int, data: TensorStructInfo) -> tuple[TensorStructInfo, ...]:
    """The struct info of each index tensor of a tuple argument, checked."""
    info = call.arg_info[position]
    if not isinstance(info, TupleStructInfo) or not all(isinstance(f, TensorStructInfo) for f in info.fields):
        raise call.error("indices must be a tuple of tensors")
    if not info.fields:
        raise call.error("indices must hold at least one index tensor")
    if data.ndim >= 0 and len(info.fields) > data.ndim:
        raise call.error(f"{len(info.fields)} index tensors for data of rank {data.ndim}")
    for number, field in enumerate(info.fields):
        if not (dt.is_int(field.dtype) or dt.is_uint(field.dtype) or field.dtype == "void"):
            raise call.error(f"index tensor {number} must have an integer data type, got {field.dtype}")
    return info.fields


def _broadcast_indices(call, infos) -> tuple | None:
    """The common shape of the index tensors (numpy broadcasting), None if unknown."""
    shape: tuple = ()
    for info in infos:
        if info.shape_values is None:
            return None
        try:
            shape = broadcast_shapes(shape, info.shape_values)
        except BroadcastError as problem:
            raise call.error(f"index tensors: {problem}") from None
        if shape is None:
            return None
    return shape


def _index_tensor_infer(call) -> TensorStructInfo:
    data = tensor_info(call, 0)
    infos = _index_infos(call, 1, data)
    shape = _broadcast_indices(call, infos)
    if shape is None or data.shape_values is None:
        return TensorStructInfo(None, data.dtype, -1)
    return make_tensor_info(shape + data.shape_values[len(infos):], data.dtype)


def _index_tensor_legalize(call, context):
    out = _index_tensor_infer(call)
    if out.shape_values is None:
        return None
    count = len(call.arg_info[1].fields)
    rank = len(out.shape_values) - (tensor_info(call, 0).ndim - count)

    def fcompute(data, indices):
        def body(*i):
            named = tuple(checked_position(index[broadcast_index(index.shape, i[:rank])], data.shape[k],
                                           "R.index_tensor")
                          for k, index in enumerate(indices))
            return data[named + i[rank:]]

        return te.compute(out.shape_values, body, "T_index_tensor")

    return context.call_te(fcompute, call.args, call.arg_info, "index_tensor")


def _index_put_infer(call) -> TensorStructInfo:
    data, values = tensor_info(call, 0), tensor_info(call, 2)
    infos = _index_infos(call, 1, data)
    if data.ndim >= 0 and len(infos) != data.ndim:
        raise call.error(f"{len(infos)} index tensors for data of rank {data.ndim}: give one per axis")
    _check_same_dtype(call, data, values, "values")
    shape = _broadcast_indices(call, infos)
    if shape is not None and values.shape_values is not None:
        fits = len(values.shape_values) <= len(shape) and all(
            static_value(v) == 1 or same_dim(v, d) is not False
            for v, d in zip(reversed(values.shape_values), reversed(shape)))
        if not fits:
            raise call.error(f"values {format_shape(values.shape_values)} do not broadcast to the index "
                             f"shape {format_shape(shape)}")
    return data.with_fields(span=None)


def _index_put_legalize(call, context):
    data_info, values_info = tensor_info(call, 0), tensor_info(call, 2)
    index_infos = _index_infos(call, 1, data_info)
    shape = _broadcast_indices(call, index_infos)
    if shape is None or data_info.shape_values is None or values_info.shape_values is None:
        return None
    data = loops.buffer("A", data_info.shape_values, data_info.dtype)
    indices = [loops.buffer(f"B{k}", info.shape_values, info.dtype) for k, info in enumerate(index_infos)]
    values = loops.buffer("C", values_info.shape_values, values_info.dtype)
    out = loops.buffer("T_index_put", data_info.shape_values, data_info.dtype)

    def put(j):
        target = tuple(checked_position(tir.BufferLoad(index, broadcast_index(index.shape, j)), data.shape[k],
                                        "R.index_put")
                       for k, index in enumerate(indices))
        value = tir.BufferLoad(values, broadcast_index(values.shape, j))
        if call.attrs["accumulate"]:
            value = tir.Add(tir.BufferLoad(out, target), value)
        return tir.BufferStore(out, value, target)

    name = context.unique_name("index_put")
    body = loops.sequence(_copy(data, out), loops.loop_nest(shape, put, "j"))
    context.new_functions[name] = loops.prim_func([data, *indices, values, out], body)
    leaves = [rx.TupleGetItem(call.args[1], k) if not isinstance(call.args[1], rx.Tuple) else call.args[1].fields[k]
              for k in range(len(indices))]
    return _call_tir(name, [call.args[0], *leaves, call.args[2]], data_info.with_fields(span=None))


register(OpDef(
    "relax.index_tensor", ("data", "indices"), (), _index_tensor_infer, "injective", _index_tensor_legalize,
    "numpy advanced indexing data[I0, I1, ...] with a tuple of broadcast index tensors",
))
register(OpDef(
    "relax.index_put", ("data", "indices", "values"), (AttrSpec("accumulate", False),), _index_put_infer, "opaque",
    _index_put_legalize, "a copy of data with values written (or added) at data[I0, I1, ...]",
))
