"""Joining and splitting operators: concat, stack, split.

Struct-info inference and legalization only; manipulation.py registers them.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import te
from .reduction import normalize_axes
from .shape import add_dims, format_shape, int64, make_tensor_info, mul_dims, same_dim, static_value, sum_dims, tensor_info


def _tuple_fields(call, position=0):
    info = call.arg_info[position]
    if not isinstance(info, TupleStructInfo) or not info.fields:
        raise call.error("the first argument must be a non-empty tuple of tensors")
    for field in info.fields:
        if not isinstance(field, TensorStructInfo):
            raise call.error("the first argument must be a tuple of tensors")
    return info.fields


def concat_infer(call):
    fields = _tuple_fields(call)
    dtype = fields[0].dtype
    if any(f.shape_values is None for f in fields):
        return TensorStructInfo(None, dtype, fields[0].ndim)
    ndim = fields[0].ndim
    (axis,) = normalize_axes(call, call.attrs["axis"], ndim)
    total: tir.PrimExpr = int64(0)
    for f in fields:
        if f.ndim != ndim:
            raise call.error(f"all tensors must have rank {ndim}, got {format_shape(f.shape_values)}")
        for a in range(ndim):
            if a != axis and same_dim(f.shape_values[a], fields[0].shape_values[a]) is False:
                raise call.error(f"shapes {format_shape(fields[0].shape_values)} and "
                                 f"{format_shape(f.shape_values)} differ outside axis {axis}")
        total = add_dims(total, f.shape_values[axis])
    dims = list(fields[0].shape_values)
    dims[axis] = total
    return make_tensor_info(tuple(dims), dtype)


def concat_compute(tensors, axis, name="T_concat"):
    dims = list(tensors[0].shape)
    dims[axis] = sum_dims([t.shape[axis] for t in tensors])

    def body(*index):
        value = None
        offset: tir.PrimExpr = int64(0)
        starts = []
        for t in tensors:
            starts.append(offset)
            offset = offset + t.shape[axis]
        # The last tensor whose start the index has passed holds the element: test the
        # later tensors first by nesting them outermost.
        for t, start in zip(tensors, starts):
            local = tuple(i - start if a == axis else i for a, i in enumerate(index))
            load = t[local]
            # if_then_else, not Select: only the chosen input may be read, the other
            # index is out of its bounds.
            value = load if value is None else tir.Call(
                load.dtype, "tir.if_then_else", (tir.GE(index[axis], start), load, value))
        return value

    return te.compute(tuple(dims), body, name)


def concat_legalize(call, context):
    info = concat_infer(call)
    if info.shape_values is None:
        return None
    (axis,) = normalize_axes(call, call.attrs["axis"], info.ndim)
    return context.call_te(lambda ts: concat_compute(ts, axis), call.args, call.arg_info, "concatenate")


def stack_infer(call):
    fields = _tuple_fields(call)
    first = fields[0]
    if any(f.shape_values is None for f in fields):
        return TensorStructInfo(None, first.dtype, first.ndim + 1 if first.ndim >= 0 else -1)
    (axis,) = normalize_axes(call, call.attrs["axis"], first.ndim + 1)
    for f in fields:
        if len(f.shape_values) != first.ndim or any(same_dim(a, b) is False for a, b in zip(f.shape_values, first.shape_values)):
            raise call.error(f"all tensors must have shape {format_shape(first.shape_values)}")
    dims = list(first.shape_values)
    dims.insert(axis, int64(len(fields)))
    return make_tensor_info(tuple(dims), first.dtype)


def stack_legalize(call, context):
    info = stack_infer(call)
    if info.shape_values is None:
        return None
    (axis,) = normalize_axes(call, call.attrs["axis"], info.ndim)

    def fcompute(tensors):
        def body(*index):
            local = index[:axis] + index[axis + 1:]
            value = tensors[-1][local]
            for position in range(len(tensors) - 2, -1, -1):
                value = tir.Select(tir.EQ(index[axis], int64(position)), tensors[position][local], value)
            return value

        return te.compute(_stacked_dims(tensors, axis), body, "T_stack")

    return context.call_te(fcompute, call.args, call.arg_info, "stack")


def _stacked_dims(tensors, axis):
    dims = list(tensors[0].shape)
    dims.insert(axis, int64(len(tensors)))
    return tuple(dims)


def _split_bounds(call, dims):
    """(start, extent) of every piece along the split axis."""
    (axis,) = normalize_axes(call, call.attrs["axis"], len(dims))
    spec = call.attrs["indices_or_sections"]
    length = dims[axis]
    if isinstance(spec, int):
        if spec < 1:
            raise call.error(f"the number of sections must be positive, got {spec}")
        if static_value(length) is not None and static_value(length) % spec:
            raise call.error(f"axis {axis} of size {static_value(length)} does not split into {spec} equal sections")
        piece = int64(length.value // spec) if static_value(length) is not None else length // int64(spec)
        return axis, [(mul_dims(piece, int64(k)), piece) for k in range(spec)]
    bounds, start = [], int64(0)
    for index in tuple(spec) + (None,):
        end = length if index is None else int64(index)
        bounds.append((start, end - start if static_value(end) is None or static_value(start) is None
                       else int64(max(0, end.value - start.value))))
        start = end
    return axis, bounds


def split_infer(call):
    x = tensor_info(call, 0)
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, x.ndim)
    axis, bounds = _split_bounds(call, x.shape_values)
    fields = []
    for _, extent in bounds:
        dims = list(x.shape_values)
        dims[axis] = extent
        fields.append(make_tensor_info(tuple(dims), x.dtype))
    return TupleStructInfo(tuple(fields))


def split_legalize(call, context):
    if tensor_info(call, 0).shape_values is None:
        return None

    def fcompute(a):
        axis, bounds = _split_bounds(call, a.shape)
        outputs = []
        for number, (start, extent) in enumerate(bounds):
            dims = list(a.shape)
            dims[axis] = extent
            outputs.append(te.compute(
                tuple(dims),
                lambda *i, start=start: a[tuple(v + start if k == axis else v for k, v in enumerate(i))],
                f"T_split_{number}",
            ))
        return tuple(outputs)

    return context.call_te(fcompute, call.args, call.arg_info, "split")


