"""Rewriting a range along one axis: slice_scatter and reverse_sequence.

slice_scatter(input, src, start, end, step, axis) is input with the slice
start:end:step along axis replaced by src (PyTorch's slice_scatter); start, end
and step are clamped like a Python slice. reverse_sequence(data, seq_lengths)
reverses, for each batch entry b, the first seq_lengths[b] elements along seq_axis
(a length past the axis counts as the whole axis; 0 or 1 leaves the entry as it is).

Both are injective tensor expressions: every output element is one element of
an input, found by index arithmetic.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .infer import literal_of
from .reduction import normalize_axes
from .registry import AttrSpec, OpDef, register
from .shape import format_dim, format_shape, int64, same_dim, static_value, tensor_info


def _int_attr_check(value) -> str | None:
    return None if isinstance(value, int) and not isinstance(value, bool) else "expected an int"


# -- slice_scatter ------------------------------------------------------------------------------
def _slice_bounds(call) -> tuple[int, int, int] | None:
    """(start, end, step) as given, or None when one is not a literal int."""
    bounds = tuple(literal_of(call.args[position]) for position in (2, 3, 4))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in bounds):
        return None
    if bounds[2] <= 0:
        raise call.error(f"step must be positive, got {bounds[2]}")
    return bounds


def _slice_range(call, size: int) -> range:
    start, end, step = _slice_bounds(call)
    return range(*slice(start, end, step).indices(size))


def _slice_scatter_infer(call) -> TensorStructInfo:
    data, src = tensor_info(call, 0), tensor_info(call, 1)
    if "void" not in (data.dtype, src.dtype) and data.dtype != src.dtype:
        raise call.error(f"src must have the data type of input ({data.dtype}), got {src.dtype}")
    if data.ndim >= 0 and src.ndim >= 0 and data.ndim != src.ndim:
        raise call.error(f"src must have the rank of input ({data.ndim}), got {src.ndim}")
    if data.ndim < 0:
        return data.with_fields(span=None)
    (axis,) = normalize_axes(call, call.attrs["axis"], data.ndim)
    bounds = _slice_bounds(call)
    if data.shape_values is None or src.shape_values is None:
        return data.with_fields(span=None)
    for position, (d, s) in enumerate(zip(data.shape_values, src.shape_values)):
        if position != axis and same_dim(d, s) is False:
            raise call.error(f"src {format_shape(src.shape_values)} must match input "
                             f"{format_shape(data.shape_values)} except at axis {axis}")
    size = static_value(data.shape_values[axis])
    if bounds is not None and size is not None and static_value(src.shape_values[axis]) is not None:
        count = len(_slice_range(call, size))
        if static_value(src.shape_values[axis]) != count:
            raise call.error(f"src has {format_dim(src.shape_values[axis])} elements at axis {axis} but the "
                             f"slice {bounds[0]}:{bounds[1]}:{bounds[2]} of input holds {count}")
    return data.with_fields(span=None)


def _slice_scatter_legalize(call, context):
    data = tensor_info(call, 0)
    if data.shape_values is None or _slice_bounds(call) is None:
        return None
    (axis,) = normalize_axes(call, call.attrs["axis"], data.ndim)
    size = static_value(data.shape_values[axis])
    if size is None:
        return None
    chosen = _slice_range(call, size)

    def fcompute(target, src):
        def body(*i):
            offset = i[axis] - int64(chosen.start)
            inside = tir.And(tir.And(tir.GE(i[axis], int64(chosen.start)), tir.LT(i[axis], int64(chosen.stop))),
                             tir.EQ(offset % int64(chosen.step), int64(0)))
            source = src[i[:axis] + (offset // int64(chosen.step),) + i[axis + 1:]]
            # if_then_else reads src only inside the slice, where its index is in bounds.
            return tir.Call(target.dtype, "tir.if_then_else", (inside, source, target[i]))

        return te.compute(target.shape, body, "T_slice_scatter")

    return context.call_te(fcompute, call.args[:2], call.arg_info[:2], "slice_scatter")


register(OpDef(
    "relax.slice_scatter", ("input_tensor", "src", "start", "end", "step"), (AttrSpec("axis", 0),),
    _slice_scatter_infer, "injective", _slice_scatter_legalize,
    "input with the slice start:end:step along axis replaced by src",
))


# -- reverse_sequence ------------------------------------------------------------------------------
def _sequence_axes(call, data: TensorStructInfo) -> tuple[int, int]:
    (seq_axis,) = normalize_axes(call, call.attrs["seq_axis"], data.ndim)
    (batch_axis,) = normalize_axes(call, call.attrs["batch_axis"], data.ndim)
    if seq_axis == batch_axis:
        raise call.error(f"seq_axis and batch_axis must differ, both are {seq_axis}")
    return seq_axis, batch_axis


def _reverse_sequence_infer(call) -> TensorStructInfo:
    data, lengths = tensor_info(call, 0), tensor_info(call, 1)
    if lengths.dtype not in ("int32", "int64", "void"):
        raise call.error(f"seq_lengths must be int32 or int64, got {lengths.dtype}")
    if lengths.ndim >= 0 and lengths.ndim != 1:
        raise call.error(f"seq_lengths must have rank 1, got rank {lengths.ndim}")
    if data.ndim < 0:
        return data.with_fields(span=None)
    _, batch_axis = _sequence_axes(call, data)
    if data.shape_values is not None and lengths.shape_values is not None \
            and same_dim(lengths.shape_values[0], data.shape_values[batch_axis]) is False:
        raise call.error(f"seq_lengths {format_shape(lengths.shape_values)} must have one length per entry of "
                         f"batch axis {batch_axis} of data {format_shape(data.shape_values)}")
    return data.with_fields(span=None)


def _reverse_sequence_legalize(call, context):
    data = tensor_info(call, 0)
    if data.shape_values is None:
        return None
    seq_axis, batch_axis = _sequence_axes(call, data)

    def fcompute(x, lengths):
        def body(*i):
            given = lengths[(i[batch_axis],)]
            length = tir.Min(given if given.dtype == "int64" else tir.Cast("int64", given), x.shape[seq_axis])
            position = tir.Select(tir.LT(i[seq_axis], length), length - int64(1) - i[seq_axis], i[seq_axis])
            return x[i[:seq_axis] + (position,) + i[seq_axis + 1:]]

        return te.compute(x.shape, body, "T_reverse_sequence")

    return context.call_te(fcompute, call.args, call.arg_info, "reverse_sequence")


register(OpDef(
    "relax.reverse_sequence", ("data", "seq_lengths"),
    (AttrSpec("seq_axis", 1, _int_attr_check), AttrSpec("batch_axis", 0, _int_attr_check)),
    _reverse_sequence_infer, "injective", _reverse_sequence_legalize,
    "reverse the first seq_lengths[b] elements along seq_axis of each batch entry b",
))
