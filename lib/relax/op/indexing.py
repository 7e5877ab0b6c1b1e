"""Indexing and scans: cumsum, cumprod, gather_elements, scatter_elements, one_hot, einsum.

cumsum and scatter_elements are loop-nest kernels (see loops.py): a running sum
reads the previous output element, and a scatter writes where the indices point.
gather_elements, one_hot and einsum are tensor expressions.
"""

from __future__ import annotations

import string

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import loops, te
from .index_check import checked_position
from .reduction import normalize_axes
from .registry import AttrSpec, OpDef, register
from .shape import format_shape, int64, make_tensor_info, same_dim, tensor_info


def _dtype_or(call, fallback):
    dtype = call.attrs.get("dtype")
    return fallback if dtype in (None, "", "void") else dtype


def _cast(value, dtype):
    return value if value.dtype == dtype else tir.Cast(dtype, value)


# -- cumsum -------------------------------------------------------------------------------
def _cumsum_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    dtype = _dtype_or(call, info.dtype)
    if call.attrs["axis"] is None:
        if info.shape_values is None:
            return TensorStructInfo(None, dtype, 1)
        total = int64(1)
        for d in info.shape_values:
            total = total * d if not (isinstance(total, tir.IntImm) and isinstance(d, tir.IntImm)) else int64(total.value * d.value)
        return make_tensor_info((total,), dtype)
    if info.ndim >= 0:
        normalize_axes(call, call.attrs["axis"], info.ndim)
    return TensorStructInfo(info.shape, dtype, info.ndim)


def _make_scan_legalize(name: str, combine, identity: float):
    def legalize(call, context):
        return _scan_legalize(call, context, name, combine, identity)

    return legalize


def _scan_legalize(call, context, name, combine, identity):
    info = tensor_info(call, 0)
    out_info = _cumsum_infer(call)
    if info.shape_values is None or out_info.shape_values is None:
        return None
    flattened = call.attrs["axis"] is None  # the scan runs over the input in row-major order
    (axis,) = (0,) if flattened else normalize_axes(call, call.attrs["axis"], max(info.ndim, 1))
    exclusive = bool(call.attrs["exclusive"])
    dtype = out_info.dtype
    out = loops.buffer(f"T_{name}", out_info.shape_values, dtype)
    name = context.unique_name(name)
    x = loops.buffer("A", info.shape_values, info.dtype)

    def load_x(index):
        """x at an output index: the same index, or (flattened) the input element it counts."""
        if not flattened:
            return tir.BufferLoad(x, index)
        return tir.BufferLoad(x, _unravel(index[0], info.shape_values))

    def body(index):
        previous = tuple(i - int64(1) if a == axis else i for a, i in enumerate(index))
        first = tir.EQ(index[axis], int64(0))
        start = tir.FloatImm(dtype, float(identity)) if dt.is_float(dtype) else tir.IntImm(dtype, int(identity))
        if exclusive:
            carried = combine(tir.BufferLoad(out, previous), _cast(load_x(previous), dtype))
            value = tir.Call(dtype, "tir.if_then_else", (first, start, carried))
        else:
            here = _cast(load_x(index), dtype)
            value = tir.Call(dtype, "tir.if_then_else", (first, here, combine(tir.BufferLoad(out, previous), here)))
        return tir.BufferStore(out, value, index)

    context.new_functions[name] = loops.prim_func([x, out], loops.loop_nest(out_info.shape_values, body))
    return _call_tir(name, call.args[:1], out_info)


def _unravel(flat, shape) -> tuple:
    """The row-major index of element `flat` of a tensor of `shape`."""
    index, stride = [], int64(1)
    for extent in reversed(shape):
        index.append(flat // stride % extent if index else flat % extent)
        stride = stride * extent
    return tuple(reversed(index))


def _call_tir(name, args, out_info):
    from ..ir import expr as rx

    return rx.Call(rx.Op("relax.call_tir"), (rx.GlobalVar(name), rx.Tuple(tuple(args))), sinfo_args=(out_info,))


for _name, _combine, _identity in (("cumsum", tir.Add, 0), ("cumprod", tir.Mul, 1)):
    register(OpDef(
        f"relax.{_name}", ("data",), (AttrSpec("axis", None), AttrSpec("dtype", None), AttrSpec("exclusive", False)),
        _cumsum_infer, "opaque", _make_scan_legalize(_name, _combine, _identity),
        f"running {'sum' if _name == 'cumsum' else 'product'} along an axis (of the flattened input when axis is None)",
    ))


# -- gather_elements and scatter_elements ----------------------------------------------------
def _gather_infer(call) -> TensorStructInfo:
    data, indices = tensor_info(call, 0), tensor_info(call, 1)
    if not (dt.is_int(indices.dtype) or indices.dtype == "void"):
        raise call.error(f"indices must be integers, got {indices.dtype}")
    if data.ndim >= 0 and indices.ndim >= 0 and data.ndim != indices.ndim:
        raise call.error(f"data and indices must have the same rank, got {data.ndim} and {indices.ndim}")
    if data.ndim >= 0:
        normalize_axes(call, call.attrs["axis"], data.ndim)
    return TensorStructInfo(indices.shape, data.dtype, indices.ndim)


def _gather_legalize(call, context):
    if tensor_info(call, 1).shape_values is None:
        return None
    (axis,) = normalize_axes(call, call.attrs["axis"], tensor_info(call, 0).ndim)

    def fcompute(data, indices):
        def body(*i):
            position = checked_position(indices[i], data.shape[axis], "R.gather_elements")
            return data[tuple(position if a == axis else v for a, v in enumerate(i))]

        return te.compute(indices.shape, body, "T_gather_elements")

    return context.call_te(fcompute, call.args, call.arg_info, "gather_elements")


register(OpDef(
    "relax.gather_elements", ("data", "indices"), (AttrSpec("axis", 0),), _gather_infer, "injective",
    _gather_legalize, "out[i][j] = data[indices[i][j]][j] along axis (numpy take_along_axis)",
))

SCATTER_REDUCTIONS = {"update": None, "add": tir.Add, "mul": tir.Mul, "min": tir.Min, "max": tir.Max}


def _scatter_infer(call) -> TensorStructInfo:
    data, indices, updates = (tensor_info(call, i) for i in range(3))
    if call.attrs["reduction"] not in SCATTER_REDUCTIONS:
        raise call.error(f"reduction must be one of {', '.join(SCATTER_REDUCTIONS)}")
    if indices.shape_values is not None and updates.shape_values is not None:
        if any(same_dim(a, b) is False for a, b in zip(indices.shape_values, updates.shape_values)):
            raise call.error(f"indices {format_shape(indices.shape_values)} and updates "
                             f"{format_shape(updates.shape_values)} must have the same shape")
    if data.ndim >= 0:
        normalize_axes(call, call.attrs["axis"], data.ndim)
    return data.with_fields(span=None)


def _scatter_legalize(call, context):
    data_info, index_info, update_info = (tensor_info(call, i) for i in range(3))
    if None in (data_info.shape_values, index_info.shape_values):
        return None
    (axis,) = normalize_axes(call, call.attrs["axis"], data_info.ndim)
    combine = SCATTER_REDUCTIONS[call.attrs["reduction"]]
    data = loops.buffer("A", data_info.shape_values, data_info.dtype)
    indices = loops.buffer("B", index_info.shape_values, index_info.dtype)
    updates = loops.buffer("C", update_info.shape_values, update_info.dtype)
    out = loops.buffer("T_scatter_elements", data_info.shape_values, data_info.dtype)
    copy = loops.loop_nest(data_info.shape_values, lambda i: tir.BufferStore(out, tir.BufferLoad(data, i), i), "i")

    def scatter(i):
        position = checked_position(tir.BufferLoad(indices, i), data_info.shape_values[axis], "R.scatter_elements")
        target = tuple(position if a == axis else v for a, v in enumerate(i))
        value = tir.BufferLoad(updates, i)
        if combine is not None:
            value = combine(tir.BufferLoad(out, target), value)
        return tir.BufferStore(out, value, target)

    name = context.unique_name("scatter_elements")
    body = loops.sequence(copy, loops.loop_nest(index_info.shape_values, scatter, "j"))
    context.new_functions[name] = loops.prim_func([data, indices, updates, out], body)
    return _call_tir(name, call.args, data_info.with_fields(span=None))


register(OpDef(
    "relax.scatter_elements", ("data", "indices", "updates"), (AttrSpec("axis", 0), AttrSpec("reduction", "update")),
    _scatter_infer, "opaque", _scatter_legalize, "a copy of data with updates written where indices point",
))


# -- one_hot --------------------------------------------------------------------------------------
def _fill_dtype(call, position: int) -> str:
    """The dtype of on_value / off_value: a prim value (TVM 0.27) or a scalar tensor."""
    from ..ir.struct_info import PrimStructInfo

    info = call.arg_info[position]
    if isinstance(info, PrimStructInfo):
        return info.dtype
    return tensor_info(call, position).dtype


def _one_hot_infer(call) -> TensorStructInfo:
    indices = tensor_info(call, 0)
    on = TensorStructInfo(None, _fill_dtype(call, 1), 0)
    _fill_dtype(call, 2)
    depth = call.attrs["depth"]
    if indices.shape_values is None:
        return TensorStructInfo(None, on.dtype, indices.ndim + 1 if indices.ndim >= 0 else -1)
    dims = list(indices.shape_values)
    (axis,) = normalize_axes(call, call.attrs["axis"], len(dims) + 1)
    dims.insert(axis, int64(depth))
    return make_tensor_info(tuple(dims), on.dtype)


def _one_hot_legalize(call, context):
    out = _one_hot_infer(call)
    if out.shape_values is None:
        return None
    (axis,) = normalize_axes(call, call.attrs["axis"], out.ndim)

    from ..ir import expr as rx

    def fill(position: int, tensors: list):
        """A prim value is a constant in the kernel; a scalar tensor is read from its buffer."""
        arg = call.args[position]
        if isinstance(arg, rx.PrimValue):
            return _cast(arg.value, out.dtype)
        return tensors.pop(0)[()]

    tensor_positions = [0] + [p for p in (1, 2) if not isinstance(call.args[p], rx.PrimValue)]

    def fcompute(indices, *fills):
        pending = list(fills)
        on, off = fill(1, pending), fill(2, pending)

        def body(*i):
            hot = tir.EQ(_cast(indices[i[:axis] + i[axis + 1:]], "int64"), i[axis])
            return tir.Select(hot, on, off)

        dims = list(indices.shape)
        dims.insert(axis, int64(call.attrs["depth"]))
        return te.compute(tuple(dims), body, "T_one_hot")

    return context.call_te(fcompute, [call.args[p] for p in tensor_positions],
                           [call.arg_info[p] for p in tensor_positions], "one_hot")


register(OpDef(
    "relax.one_hot", ("indices", "on_value", "off_value"), (AttrSpec("depth"), AttrSpec("axis", -1)),
    _one_hot_infer, "injective", _one_hot_legalize, "on_value where the index matches, off_value elsewhere",
))


# -- einsum ------------------------------------------------------------------------------------------
def _parse_subscripts(call, ndims):
    text = call.attrs["subscripts"].replace(" ", "")
    if "->" in text:
        inputs, output = text.split("->")
    else:
        inputs = text
        letters = inputs.replace(",", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = inputs.split(",")
    if len(terms) != len(ndims):
        raise call.error(f"subscripts '{text}' name {len(terms)} operands, got {len(ndims)}")
    for term, ndim in zip(terms, ndims):
        if "." in term or any(c not in string.ascii_letters for c in term):
            raise call.error(f"subscripts '{text}': only letters are supported (no ellipsis)")
        if ndim >= 0 and len(term) != ndim:
            raise call.error(f"subscript '{term}' does not match an operand of rank {ndim}")
    return terms, output


def _letter_sizes(call, terms, shapes):
    sizes = {}
    for term, dims in zip(terms, shapes):
        for letter, dim in zip(term, dims):
            if letter in sizes and same_dim(sizes[letter], dim) is False:
                raise call.error(f"subscript '{letter}' has sizes {sizes[letter]} and {dim}")
            sizes.setdefault(letter, dim)
    return sizes


def _einsum_infer(call) -> TensorStructInfo:
    from ..ir.struct_info import TupleStructInfo

    operands = call.arg_info[0]
    if not isinstance(operands, TupleStructInfo):
        raise call.error("the first argument must be a tuple of tensors")
    infos = operands.fields
    terms, output = _parse_subscripts(call, [i.ndim for i in infos])
    if any(i.shape_values is None for i in infos):
        return TensorStructInfo(None, infos[0].dtype, len(output))
    sizes = _letter_sizes(call, terms, [i.shape_values for i in infos])
    return make_tensor_info(tuple(sizes[c] for c in output), infos[0].dtype)


def _einsum_legalize(call, context):
    info = _einsum_infer(call)
    if info.shape_values is None:
        return None

    def fcompute(tensors):
        terms, output = _parse_subscripts(call, [t.ndim for t in tensors])
        sizes = _letter_sizes(call, terms, [t.shape for t in tensors])
        contracted = sorted(set("".join(terms)) - set(output))
        axes = {c: te.reduce_axis(sizes[c], c) for c in contracted}

        def body(*index):
            letters = dict(zip(output, index))
            letters.update({c: axis.var for c, axis in axes.items()})
            product = None
            for term, t in zip(terms, tensors):
                load = t[tuple(letters[c] for c in term)]
                product = load if product is None else tir.Mul(product, load)
            return te.reduce_sum(product, list(axes.values())) if axes else product

        return te.compute(tuple(sizes[c] for c in output), body, "T_einsum")

    return context.call_te(fcompute, call.args, call.arg_info, "einsum")


register(OpDef(
    "relax.einsum", ("operands",), (AttrSpec("subscripts"),), _einsum_infer, "opaque", _einsum_legalize,
    "Einstein summation over a tuple of tensors (letters only, no ellipsis)",
))
