"""More tensors made from sizes or templates: eye, eye_like, hamming_window, meshgrid.

eye(n, m, k) has ones on the k-th diagonal (its sizes are PrimValues, possibly
symbolic); hamming_window(N, periodic, alpha, beta) is alpha - beta * cos(2 pi i / D)
with D = N for a periodic window and N - 1 for a symmetric one; meshgrid gives one
grid per 1-D input, indexed "ij" (matrix) or "xy" (Cartesian: the first two output
axes swapped, as numpy.meshgrid does).
"""

from __future__ import annotations

import math

from ..ir import dtype as dt
from ..ir import expr as rx
from ..ir import tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from . import te
from .infer import literal_of
from .registry import AttrSpec, OpDef, register
from .shape import int64, make_tensor_info, static_value, tensor_info


def _dtype_check(value) -> str | None:
    if value is None or isinstance(value, str) and (value in ("", "void") or dt.is_valid(value)):
        return None
    return "expected a data type"


def _dtype(call, fallback: str) -> str:
    dtype = call.attrs.get("dtype")
    return fallback if dtype in (None, "", "void") else dtype


def _size_of(call, position: int, what: str) -> tir.PrimExpr | None:
    """A size given as a PrimValue (an int or a symbolic int64 expression), or None."""
    arg = call.args[position]
    if not isinstance(arg, rx.PrimValue):
        raise call.error(f"{what} must be a PrimValue, got {type(arg).__name__}")
    value = arg.value
    if isinstance(value, tir.IntImm):
        if value.value < 0:
            raise call.error(f"{what} must not be negative, got {value.value}")
        return int64(value.value)
    if dt.is_int(value.dtype):
        return value
    raise call.error(f"{what} must be an integer, got {value.dtype}")


def _diagonal(call, position: int) -> int | None:
    """The diagonal k when it is a literal (legalization needs it)."""
    if len(call.args) <= position:
        return 0
    value = literal_of(call.args[position])
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _eye_infer(call) -> TensorStructInfo:
    rows = _size_of(call, 0, "n")
    cols = _size_of(call, 1, "m") if len(call.args) > 1 and not _is_none(call.args[1]) else rows
    return make_tensor_info((rows, cols), _dtype(call, "float32"))


def _is_none(arg) -> bool:
    return isinstance(arg, rx.Call) and getattr(arg.op, "name", "") == "relax.null_value"


def _eye_like_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    if info.ndim not in (-1, 2):
        raise call.error(f"operand must be a 2-D tensor, got rank {info.ndim}")
    return TensorStructInfo(info.shape, _dtype(call, info.dtype), 2)


def _eye_element(dtype: str, k: int):
    one = tir.FloatImm(dtype, 1.0) if dt.is_float(dtype) else tir.IntImm(dtype, 1)
    zero = tir.FloatImm(dtype, 0.0) if dt.is_float(dtype) else tir.IntImm(dtype, 0)
    return lambda i, j: tir.Select(tir.EQ(i + int64(k), j), one, zero)


def _eye_legalize(from_template: bool):
    def legalize(call, context):
        info = call.op.infer(call)
        k = _diagonal(call, 1 if from_template else 2)
        if info.shape_values is None or k is None:
            return None
        # The template of eye_like is passed only for its shape (as zeros_like does).
        args = call.args[:1] if from_template else ()
        infos = call.arg_info[:1] if from_template else ()
        return context.call_te(lambda *templates: te.compute(templates[0].shape if templates else info.shape_values,
                                                             _eye_element(info.dtype, k), "eye", axis_names=("i", "j")),
                               args, infos, "eye_like" if from_template else "eye")

    return legalize


register(OpDef("relax.eye", ("n", "*rest"), (AttrSpec("dtype", "float32", _dtype_check),), _eye_infer, "injective",
               _eye_legalize(False), "an n x m matrix with ones on the k-th diagonal: eye(n[, m[, k]])"))
register(OpDef("relax.eye_like", ("x", "*k"), (AttrSpec("dtype", None, _dtype_check),), _eye_like_infer,
               "injective", _eye_legalize(True), "a matrix shaped like x with ones on the k-th diagonal"))


# -- hamming_window ----------------------------------------------------------------------------------
def _hamming_params(call):
    """(periodic, alpha, beta) when all are literals, else None."""
    values = [literal_of(arg) for arg in call.args[1:4]]
    if not all(isinstance(v, (int, float)) for v in values):
        return None
    return bool(values[0]), float(values[1]), float(values[2])


def _hamming_infer(call) -> TensorStructInfo:
    if len(call.args) != 4:
        raise call.error(f"expects 4 arguments (window_size, periodic, alpha, beta), got {len(call.args)}")
    dtype = _dtype(call, "float32")
    if not dt.is_float(dtype):
        raise call.error(f"dtype must be a floating-point type, got {dtype}")
    return make_tensor_info((_size_of(call, 0, "window_size"),), dtype)


def _hamming_legalize(call, context):
    info = _hamming_infer(call)
    size = static_value(info.shape_values[0])
    params = _hamming_params(call)
    if size is None or params is None:
        return None
    periodic, alpha, beta = params
    dtype = info.dtype
    denominator = size if periodic else size - 1

    def value(i):
        if size == 1:  # a one-point window is [1] (the symmetric formula would divide by zero)
            return tir.FloatImm(dtype, 1.0)
        angle = tir.Div(tir.Mul(tir.FloatImm(dtype, 2 * math.pi), tir.Cast(dtype, i)), tir.FloatImm(dtype, denominator))
        # The coefficients are float64 PrimValues: the sum is formed in float64, as TVM does.
        cosine = tir.Cast("float64", tir.Call(dtype, "tir.cos", (angle,)))
        return tir.Cast(dtype, tir.Sub(tir.FloatImm("float64", alpha), tir.Mul(tir.FloatImm("float64", beta), cosine)))

    return context.call_te(lambda: te.compute((int64(size),), value, "hamming_window"), (), (), "hamming_window")


register(OpDef("relax.hamming_window", ("window_size", "periodic", "alpha", "beta"),
               (AttrSpec("dtype", "float32", _dtype_check),), _hamming_infer, "injective", _hamming_legalize,
               "the Hamming window alpha - beta * cos(2 pi i / D)"))


# -- meshgrid ------------------------------------------------------------------------------------------
def _indexing_check(value) -> str | None:
    return None if value in ("ij", "xy") else "expected \"ij\" or \"xy\""


def _grid_axes(count: int, indexing: str) -> list[int]:
    """For each output axis, the input whose length it has."""
    axes = list(range(count))
    if indexing == "xy" and count >= 2:
        axes[0], axes[1] = 1, 0
    return axes


def _meshgrid_inputs(call):
    info = call.arg_info[0]
    if not isinstance(info, TupleStructInfo):
        raise call.error(f"expects a tuple of tensors, got {type(info).__name__}")
    fields = []
    for index, field in enumerate(info.fields):
        if not isinstance(field, TensorStructInfo):
            raise call.error(f"tuple field {index} must be a tensor, got {type(field).__name__}")
        if field.ndim not in (-1, 0, 1):
            raise call.error(f"tuple field {index} must be a 1-D tensor, got rank {field.ndim}")
        fields.append(field)
    dtypes = {f.dtype for f in fields} - {"void"}
    if len(dtypes) > 1:
        raise call.error(f"tensor data types {' and '.join(sorted(dtypes))} must be equal")
    return fields


def _meshgrid_infer(call) -> TupleStructInfo:
    fields = _meshgrid_inputs(call)
    lengths = [None if f.shape_values is None else (f.shape_values[0] if f.shape_values else int64(1))
               for f in fields]
    axes = _grid_axes(len(fields), call.attrs["indexing"])
    dims = None if None in lengths else tuple(lengths[a] for a in axes)
    outputs = [make_tensor_info(dims, f.dtype) if dims is not None else TensorStructInfo(None, f.dtype, len(fields))
               for f in fields]
    return TupleStructInfo(tuple(outputs))


def _meshgrid_legalize(call, context):
    if any(f.shape is None for f in _meshgrid_infer(call).fields):
        return None
    axes = _grid_axes(len(call.arg_info[0].fields), call.attrs["indexing"])

    def fcompute(tensors):
        dims = tuple(tensors[a].shape[0] if tensors[a].ndim else int64(1) for a in axes)
        grids = []
        for k, t in enumerate(tensors):
            position = axes.index(k)  # the output axis along which input k varies
            name = "T_meshgrid" if k == 0 else f"T_meshgrid_{k}"
            grids.append(te.compute(dims, lambda *i, t=t, p=position: t[(i[p],) if t.ndim else ()], name))
        return tuple(grids)

    return context.call_te(fcompute, call.args, call.arg_info, "meshgrid")


register(OpDef("relax.meshgrid", ("tensors",), (AttrSpec("indexing", "ij", _indexing_check),), _meshgrid_infer,
               "injective", _meshgrid_legalize, "coordinate grids from 1-D tensors (\"ij\" or \"xy\" indexing)"))
