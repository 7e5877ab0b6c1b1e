"""Tensor manipulation: reshape, permute_dims, broadcast_to, expand_dims, squeeze,
flatten, concat, stack, split, strided_slice, take, tile, repeat, flip, layout_transform.

All are injective: every output element is one input element, found by index
arithmetic (reshape goes through the row-major flat offset).
"""

from __future__ import annotations

from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo
from . import te
from .infer import literal_of
from .reduction import normalize_axes
from .registry import AttrSpec, OpDef, register
from .shape import (
    broadcast_index, format_shape, int64, make_tensor_info, same_dim, static_value, tensor_info,
)


def mul_dims(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    """a * b, folded when both are constants."""
    if static_value(a) is not None and static_value(b) is not None:
        return int64(a.value * b.value)
    return a * b


def add_dims(a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    if static_value(a) is not None and static_value(b) is not None:
        return int64(a.value + b.value)
    return a + b


def _product(dims) -> tir.PrimExpr:
    total: tir.PrimExpr = int64(1)
    for d in dims:
        total = mul_dims(total, d)
    return total


def _same_info(call) -> TensorStructInfo:
    return tensor_info(call, 0).with_fields(span=None)


def _shape_argument(call, position: int):
    """The dims given by a shape argument (R.shape([...]) or a tuple of ints), or None."""
    arg = call.args[position]
    if isinstance(arg, rx.ShapeExpr):
        return tuple(arg.values)
    if isinstance(arg, rx.Tuple):
        return tuple(int64(v) if isinstance(v, int) else v for v in literal_of(arg))
    info = call.arg_info[position]
    if isinstance(info, ShapeStructInfo) and info.values is not None:
        return tuple(info.values)
    return None


def flat_offset(index, dims) -> tir.PrimExpr:
    """The row-major offset of `index` in a tensor of shape `dims`."""
    if not index:
        return int64(0)
    offset: tir.PrimExpr = index[0]
    for i, d in zip(index[1:], dims[1:]):
        offset = offset * d + i
    return offset


def unflatten(offset: tir.PrimExpr, dims) -> tuple[tir.PrimExpr, ...]:
    index = []
    for d in reversed(dims):
        index.append(tir.FloorMod(offset, d))
        offset = tir.FloorDiv(offset, d)
    return tuple(reversed(index))


# -- reshape -----------------------------------------------------------------------
def _reshape_dims(call):
    x = tensor_info(call, 0)
    dims = _shape_argument(call, 1)
    if dims is None:
        return None
    minus_one = [i for i, d in enumerate(dims) if static_value(d) == -1]
    if len(minus_one) > 1:
        raise call.error("at most one dimension may be -1")
    if x.shape_values is None:
        return None if minus_one else dims
    total = _product(x.shape_values)
    if minus_one:
        known = _product([d for i, d in enumerate(dims) if i != minus_one[0]])
        inferred = int64(total.value // known.value) if static_value(total) is not None and static_value(known) is not None else tir.FloorDiv(total, known)
        dims = dims[: minus_one[0]] + (inferred,) + dims[minus_one[0] + 1:]
    new_total = _product(dims)
    if static_value(total) is not None and static_value(new_total) is not None and total.value != new_total.value:
        raise call.error(f"cannot reshape {format_shape(x.shape_values)} ({total.value} elements) "
                         f"to {format_shape(dims)} ({new_total.value} elements)")
    return dims


def _reshape_infer(call) -> TensorStructInfo:
    x = tensor_info(call, 0)
    dims = _reshape_dims(call)
    if dims is None:
        shape_info = call.arg_info[1]
        ndim = shape_info.ndim if isinstance(shape_info, ShapeStructInfo) else -1
        return TensorStructInfo(call.args[1] if isinstance(call.args[1], rx.Var) else None, x.dtype, ndim)
    return make_tensor_info(dims, x.dtype)


def _reshape_legalize(call, context):
    dims = _reshape_dims(call)
    if dims is None:
        return None
    return context.call_te(
        lambda x: te.compute(dims, lambda *i: x[unflatten(flat_offset(i, dims), x.shape)], "T_reshape"),
        call.args[:1], call.arg_info[:1], "reshape",
    )


# -- permute_dims, broadcast_to, expand_dims, squeeze, flatten -------------------------
def _permutation(call, ndim):
    axes = call.attrs["axes"]
    if axes is None:
        return tuple(reversed(range(ndim)))
    normalized = tuple(a % ndim if -ndim <= a < ndim else None for a in axes)
    if len(axes) != ndim or None in normalized or sorted(normalized) != list(range(ndim)):
        raise call.error(f"axes {list(axes)} are not a permutation of {ndim} dimensions")
    return normalized


def _permute_infer(call):
    x = tensor_info(call, 0)
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, x.ndim)
    order = _permutation(call, x.ndim)
    return make_tensor_info(tuple(x.shape_values[a] for a in order), x.dtype)


def _permute_legalize(call, context):
    x = tensor_info(call, 0)
    if x.shape_values is None:
        return None
    order = _permutation(call, x.ndim)

    def fcompute(a):
        inverse = [order.index(axis) for axis in range(a.ndim)]
        dims = tuple(a.shape[axis] for axis in order)
        return te.compute(dims, lambda *i: a[tuple(i[inverse[axis]] for axis in range(a.ndim))], "T_transpose")

    return context.call_te(fcompute, call.args, call.arg_info, "transpose")


def _broadcast_to_infer(call):
    x = tensor_info(call, 0)
    dims = _shape_argument(call, 1)
    if dims is None:
        return TensorStructInfo(None, x.dtype, -1)
    if x.shape_values is not None:
        if len(x.shape_values) > len(dims):
            raise call.error(f"cannot broadcast {format_shape(x.shape_values)} to {format_shape(dims)}")
        for have, want in zip(reversed(x.shape_values), reversed(dims)):
            if static_value(have) != 1 and same_dim(have, want) is False:
                raise call.error(f"cannot broadcast {format_shape(x.shape_values)} to {format_shape(dims)}")
    return make_tensor_info(dims, x.dtype)


def _broadcast_to_legalize(call, context):
    dims = _shape_argument(call, 1)
    if dims is None:
        return None
    return context.call_te(
        lambda x: te.compute(dims, lambda *i: x[broadcast_index(x.shape, i)], "T_broadcast_to"),
        call.args[:1], call.arg_info[:1], "broadcast_to",
    )


def _axis_list(value):
    return (value,) if isinstance(value, int) else tuple(value)


def _expand_dims_positions(call, ndim):
    axes = _axis_list(call.attrs["axis"])
    out_ndim = ndim + len(axes)
    return normalize_axes(call, axes, out_ndim), out_ndim


def _expand_dims_dims(call, dims):
    positions, out_ndim = _expand_dims_positions(call, len(dims))
    source = iter(dims)
    return tuple(int64(1) if axis in positions else next(source) for axis in range(out_ndim))


def _squeeze_axes(call, dims):
    axis = call.attrs["axis"]
    if axis is None:
        return tuple(i for i, d in enumerate(dims) if static_value(d) == 1)
    axes = normalize_axes(call, _axis_list(axis), len(dims))
    for a in axes:
        if static_value(dims[a]) not in (1, None):
            raise call.error(f"cannot squeeze axis {a} of size {static_value(dims[a])}")
    return axes


def _layout_infer(compute_dims):
    def infer(call):
        x = tensor_info(call, 0)
        if x.shape_values is None:
            return TensorStructInfo(None, x.dtype, -1)
        return make_tensor_info(compute_dims(call, x.shape_values), x.dtype)

    return infer


def _reshape_like_legalize(name, compute_dims):
    """Legalization of an operator that only changes the shape, not the element order."""

    def legalize(call, context):
        x = tensor_info(call, 0)
        if x.shape_values is None:
            return None

        def fcompute(a):
            dims = compute_dims(call, a.shape)
            return te.compute(dims, lambda *i: a[unflatten(flat_offset(i, dims), a.shape)], f"T_{name}")

        return context.call_te(fcompute, call.args, call.arg_info, name)

    return legalize


def _squeeze_dims(call, dims):
    axes = _squeeze_axes(call, dims)
    return tuple(d for i, d in enumerate(dims) if i not in axes)


def _flatten_dims(call, dims):
    return (_product(dims),)


# -- concat, stack, split -------------------------------------------------------------------
def _tuple_fields(call, position=0):
    info = call.arg_info[position]
    if not isinstance(info, TupleStructInfo) or not info.fields:
        raise call.error("the first argument must be a non-empty tuple of tensors")
    for field in info.fields:
        if not isinstance(field, TensorStructInfo):
            raise call.error("the first argument must be a tuple of tensors")
    return info.fields


def _concat_infer(call):
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
            local = tuple(tir.Sub(i, start) if a == axis else i for a, i in enumerate(index))
            load = t[local]
            # if_then_else, not Select: only the chosen input may be read, the other
            # index is out of its bounds.
            value = load if value is None else tir.Call(
                load.dtype, "tir.if_then_else", (tir.GE(index[axis], start), load, value))
        return value

    return te.compute(tuple(dims), body, name)


def sum_dims(dims) -> tir.PrimExpr:
    total: tir.PrimExpr = int64(0)
    for d in dims:
        total = add_dims(total, d)
    return total


def _concat_legalize(call, context):
    info = _concat_infer(call)
    if info.shape_values is None:
        return None
    (axis,) = normalize_axes(call, call.attrs["axis"], info.ndim)
    return context.call_te(lambda ts: concat_compute(ts, axis), call.args, call.arg_info, "concatenate")


def _stack_infer(call):
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


def _stack_legalize(call, context):
    info = _stack_infer(call)
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
        if static_value(length) is not None and static_value(length) % spec:
            raise call.error(f"axis {axis} of size {static_value(length)} does not split into {spec} equal sections")
        piece = int64(length.value // spec) if static_value(length) is not None else tir.FloorDiv(length, int64(spec))
        return axis, [(mul_dims(piece, int64(k)), piece) for k in range(spec)]
    bounds, start = [], int64(0)
    for index in tuple(spec) + (None,):
        end = length if index is None else int64(index)
        bounds.append((start, end - start if static_value(end) is None or static_value(start) is None
                       else int64(max(0, end.value - start.value))))
        start = end
    return axis, bounds


def _split_infer(call):
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


def _split_legalize(call, context):
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


def _slice_spec(call, ndim):
    """Per axis (begin, extent, stride) of a static strided slice, numpy-style clamping."""
    axes, begin, end = (literal_of(call.args[i]) for i in (1, 2, 3))
    strides = literal_of(call.args[4]) if len(call.args) > 4 else (1,) * len(axes)
    if not (len(axes) == len(begin) == len(end) == len(strides)):
        raise call.error("axes, begin, end and strides must have the same length")
    if not all(isinstance(v, int) for v in (*axes, *begin, *end, *strides)):
        return None
    return {a % ndim: (b, e, s) for a, b, e, s in zip(axes, begin, end, strides)}


def _sliced_dims(call, dims):
    spec = _slice_spec(call, len(dims))
    if spec is None:
        return None, None
    out, starts = [], []
    for axis, dim in enumerate(dims):
        if axis not in spec:
            out.append(dim)
            starts.append((0, 1))
            continue
        begin, end, stride = spec[axis]
        size = static_value(dim)
        if size is None:
            return None, None
        if stride == 0:
            raise call.error("a stride cannot be 0")
        start, stop, step = slice(begin, end, stride).indices(size)
        out.append(int64(len(range(start, stop, step))))
        starts.append((start, step))
    return tuple(out), starts


def _strided_slice_infer(call):
    x = tensor_info(call, 0)
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, x.ndim)
    dims, _ = _sliced_dims(call, x.shape_values)
    return make_tensor_info(dims, x.dtype) if dims is not None else TensorStructInfo(None, x.dtype, x.ndim)


def _strided_slice_legalize(call, context):
    x = tensor_info(call, 0)
    if x.shape_values is None or _sliced_dims(call, x.shape_values)[0] is None:
        return None

    def fcompute(a):
        dims, starts = _sliced_dims(call, a.shape)
        return te.compute(dims, lambda *i: a[tuple(int64(s) + v * int64(t) for v, (s, t) in zip(i, starts))],
                          "T_strided_slice")

    return context.call_te(fcompute, call.args[:1], call.arg_info[:1], "strided_slice")


def _take_infer(call):
    x, indices = tensor_info(call, 0), tensor_info(call, 1)
    if x.shape_values is None or indices.shape_values is None:
        return TensorStructInfo(None, x.dtype, -1)
    axis = call.attrs["axis"]
    if axis is None:
        return make_tensor_info(indices.shape_values, x.dtype)
    (axis,) = normalize_axes(call, axis, x.ndim)
    return make_tensor_info(x.shape_values[:axis] + indices.shape_values + x.shape_values[axis + 1:], x.dtype)


def _take_legalize(call, context):
    info = _take_infer(call)
    if info.shape_values is None:
        return None
    axis = call.attrs["axis"]

    def fcompute(a, idx):
        def body(*i):
            if axis is None:
                flat = tir.Cast("int64", idx[i])
                return a[unflatten(_wrap(flat, _product(a.shape), call.attrs["mode"]), a.shape)]
            (ax,) = normalize_axes(call, axis, a.ndim)
            position = tir.Cast("int64", idx[i[ax:ax + idx.ndim]])
            position = _wrap(position, a.shape[ax], call.attrs["mode"])
            return a[i[:ax] + (position,) + i[ax + idx.ndim:]]

        dims = (idx.shape if axis is None else
                a.shape[:normalize_axes(call, axis, a.ndim)[0]] + idx.shape + a.shape[normalize_axes(call, axis, a.ndim)[0] + 1:])
        return te.compute(dims, body, "T_take")

    return context.call_te(fcompute, call.args, call.arg_info, "take")


def _wrap(position, extent, mode):
    """An index into [0, extent): negative indices count from the end ("fast" trusts
    the input), "wrap" takes it modulo, "clip" clamps it."""
    if mode == "wrap":
        return tir.FloorMod(position, extent)
    if mode == "clip":
        return tir.Max(tir.Min(position, extent - 1), int64(0))
    return tir.Select(tir.LT(position, int64(0)), position + extent, position)


def _tile_dims(call, dims):
    reps = _axis_list(call.attrs["repeats"])
    rank = max(len(dims), len(reps))
    dims = (int64(1),) * (rank - len(dims)) + tuple(dims)
    reps = (1,) * (rank - len(reps)) + reps
    return tuple(mul_dims(d, int64(r)) for d, r in zip(dims, reps))


def _tile_legalize(call, context):
    if tensor_info(call, 0).shape_values is None:
        return None

    def fcompute(a):
        dims = _tile_dims(call, a.shape)
        lead = len(dims) - a.ndim
        return te.compute(dims, lambda *i: a[tuple(tir.FloorMod(v, a.shape[k]) for k, v in enumerate(i[lead:]))],
                          "T_tile")

    return context.call_te(fcompute, call.args, call.arg_info, "tile")


def _repeat_dims(call, dims):
    repeats, axis = call.attrs["repeats"], call.attrs["axis"]
    if axis is None:
        return (mul_dims(_product(dims), int64(repeats)),)
    (axis,) = normalize_axes(call, axis, len(dims))
    return tuple(mul_dims(d, int64(repeats)) if k == axis else d for k, d in enumerate(dims))


def _repeat_legalize(call, context):
    if tensor_info(call, 0).shape_values is None:
        return None
    repeats, axis = call.attrs["repeats"], call.attrs["axis"]

    def fcompute(a):
        dims = _repeat_dims(call, a.shape)
        if axis is None:
            return te.compute(dims, lambda i: a[unflatten(tir.FloorDiv(i, int64(repeats)), a.shape)], "T_repeat")
        (ax,) = normalize_axes(call, axis, a.ndim)
        return te.compute(dims, lambda *i: a[tuple(tir.FloorDiv(v, int64(repeats)) if k == ax else v
                                                   for k, v in enumerate(i))], "T_repeat")

    return context.call_te(fcompute, call.args, call.arg_info, "repeat")


def _flip_legalize(call, context):
    if tensor_info(call, 0).shape_values is None:
        return None

    def fcompute(a):
        (ax,) = normalize_axes(call, call.attrs["axis"], a.ndim)
        return te.compute(a.shape, lambda *i: a[tuple(a.shape[k] - 1 - v if k == ax else v for k, v in enumerate(i))],
                          "T_reverse_sequence")

    return context.call_te(fcompute, call.args, call.arg_info, "flip")


def _flip_infer(call):
    x = tensor_info(call, 0)
    if x.ndim >= 0:
        normalize_axes(call, call.attrs["axis"], x.ndim)
    return x.with_fields(span=None)


def _register(name, args, attrs, infer, legalize, doc, pattern="injective"):
    register(OpDef(f"relax.{name}", args, attrs, infer, pattern, legalize, doc))


_register("reshape", ("x", "shape"), (), _reshape_infer, _reshape_legalize,
          "the same elements in a new shape (one dimension may be -1)")
_register("permute_dims", ("x",), (AttrSpec("axes", None),), _permute_infer, _permute_legalize,
          "transpose: output axis i is input axis axes[i] (reversed when axes is None)")
_register("broadcast_to", ("x", "shape"), (), _broadcast_to_infer, _broadcast_to_legalize,
          "broadcast to a shape with numpy rules", pattern="broadcast")
_register("expand_dims", ("x",), (AttrSpec("axis"),), _layout_infer(_expand_dims_dims),
          _reshape_like_legalize("expand_dims", _expand_dims_dims), "insert size-1 axes at the given positions")
_register("squeeze", ("x",), (AttrSpec("axis", None),), _layout_infer(_squeeze_dims),
          _reshape_like_legalize("squeeze", _squeeze_dims), "remove size-1 axes (all of them when axis is None)")
_register("flatten", ("x",), (), _layout_infer(_flatten_dims), _reshape_like_legalize("flatten", _flatten_dims),
          "all elements in one dimension")
_register("concat", ("tensors",), (AttrSpec("axis", 0),), _concat_infer, _concat_legalize,
          "join a tuple of tensors along an axis")
_register("stack", ("tensors",), (AttrSpec("axis", 0),), _stack_infer, _stack_legalize,
          "join a tuple of equal-shaped tensors along a new axis")
_register("split", ("x",), (AttrSpec("indices_or_sections"), AttrSpec("axis", 0)), _split_infer, _split_legalize,
          "split into equal sections, or at indices; gives a tuple")
_register("strided_slice", ("x", "axes", "begin", "end", "*strides"), (AttrSpec("assume_inbound", False),),
          _strided_slice_infer, _strided_slice_legalize, "slice begin:end:stride along the given axes")
_register("take", ("x", "indices"), (AttrSpec("axis", None), AttrSpec("mode", "fast")), _take_infer, _take_legalize,
          "gather elements along an axis (flattened when axis is None)")
_register("tile", ("x",), (AttrSpec("repeats"),), _layout_infer(_tile_dims), _tile_legalize,
          "repeat the whole tensor along each axis")
_register("repeat", ("x",), (AttrSpec("repeats"), AttrSpec("axis", None)), _layout_infer(_repeat_dims),
          _repeat_legalize, "repeat each element")
_register("flip", ("x",), (AttrSpec("axis"),), _flip_infer, _flip_legalize, "reverse the order along an axis")


# -- layout_transform ----------------------------------------------------------------------
def _index_map(call):
    mapping = call.attrs["index_map"]
    return tuple(mapping["initial_indices"]), tuple(mapping["final_indices"])


def _mapped_extent(expr, initial, dims):
    """The extent of one output axis of the index map: v, v // c, v % c."""
    if isinstance(expr, tir.Var) and any(expr is v for v in initial):
        return dims[[v is expr for v in initial].index(True)]
    if isinstance(expr, (tir.FloorDiv, tir.FloorMod)) and isinstance(expr.b, tir.IntImm):
        inner = _mapped_extent(expr.a, initial, dims)
        if inner is None:
            return None
        if isinstance(expr, tir.FloorMod):
            return int64(expr.b.value)
        if static_value(inner) is not None:
            return int64(-(-inner.value // expr.b.value))
        return tir.FloorDiv(inner + int64(expr.b.value - 1), int64(expr.b.value))
    return None


def _layout_transform_infer(call):
    x = tensor_info(call, 0)
    initial, final = _index_map(call)
    if x.ndim >= 0 and x.ndim != len(initial):
        raise call.error(f"the index map takes {len(initial)} indices but the tensor has rank {x.ndim}")
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, len(final))
    extents = [_mapped_extent(e, initial, x.shape_values) for e in final]
    if any(e is None for e in extents):
        return TensorStructInfo(None, x.dtype, len(final))
    return make_tensor_info(tuple(extents), x.dtype)


def _layout_transform_legalize(call, context):
    """Permutations only (each output index is a distinct input index)."""
    initial, final = _index_map(call)
    is_permutation = (len(final) == len(initial) and all(isinstance(e, tir.Var) for e in final)
                      and {id(e) for e in final} == {id(v) for v in initial})
    if not is_permutation or tensor_info(call, 0).shape_values is None:
        return None
    order = [[v is e for v in initial].index(True) for e in final]

    def fcompute(a):
        dims = tuple(a.shape[axis] for axis in order)
        return te.compute(dims, lambda *i: a[tuple(i[order.index(axis)] for axis in range(a.ndim))],
                          "T_layout_trans")

    return context.call_te(fcompute, call.args, call.arg_info, "te_layout_transform")


_register("layout_transform", ("x",),
          (AttrSpec("index_map"), AttrSpec("pad_value", None), AttrSpec("axis_separators", None),
           AttrSpec("input_axis_separators", None)),
          _layout_transform_infer, _layout_transform_legalize,
          "move elements to where an index map sends them (permutations are legalized)")
