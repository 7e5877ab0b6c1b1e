"""Reductions with `axis` and `keepdims`: sum, mean, max, min, prod, variance, std,
argmax, argmin.

`axis` is None (every axis), an int, or a list of ints (negative counts from the
end). The legalized kernel has one reduction block; mean, variance and std add
elementwise stages; argmax and argmin find the extreme value, then the first index
holding it, as numpy does.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .registry import AttrSpec, OpDef, register
from .shape import int64, make_tensor_info, shape_argument, tensor_info


def _axis_check(value) -> str | None:
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return None
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return None
    return "expected None, an int or a list of ints"


AXIS_ATTRS = (AttrSpec("axis", None, _axis_check), AttrSpec("keepdims", False))


def normalize_axes(call, axis, ndim: int) -> tuple[int, ...]:
    """Sorted, non-negative axes; every axis for None; errors for out-of-range ones."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    result = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise call.error(f"axis {a} is out of range for a tensor of rank {ndim}")
        result.append(a % ndim)
    if len(set(result)) != len(result):
        raise call.error(f"axis {list(axes)} repeats an axis")
    return tuple(sorted(result))


def reduced_dims(dims, axes, keepdims: bool):
    out = []
    for index, dim in enumerate(dims):
        if index in axes:
            if keepdims:
                out.append(int64(1))
        else:
            out.append(dim)
    return tuple(out)


def _make_infer(result_dtype: str | None = None, float_only: bool = False):
    def infer(call) -> TensorStructInfo:
        info = tensor_info(call, 0)
        if float_only and info.dtype != "void" and not dt.is_float(info.dtype):
            raise call.error(f"operand must be a floating-point tensor, got {info.dtype}")
        out_dtype = result_dtype or info.dtype
        keepdims = call.attrs["keepdims"]
        if info.ndim < 0:
            return TensorStructInfo(None, out_dtype, -1)
        axes = normalize_axes(call, call.attrs["axis"], info.ndim)
        if info.shape_values is None:
            return TensorStructInfo(None, out_dtype, info.ndim if keepdims else info.ndim - len(axes))
        return make_tensor_info(reduced_dims(info.shape_values, axes, keepdims), out_dtype)

    return infer


def reduce_compute(x: te.Tensor, axes, keepdims: bool, reducer, name: str, source=None) -> te.Tensor:
    """A tensor reducing `source(index)` (default: x itself) over `axes` with `reducer`."""
    reduce_axes = [te.reduce_axis(x.shape[a], f"k{a}") for a in axes]
    out_dims = reduced_dims(x.shape, axes, keepdims)

    def body(*out_index):
        index, kept, reduce_iter = [], iter(out_index), iter(reduce_axes)
        for axis in range(x.ndim):
            if axis in axes:
                index.append(next(reduce_iter).var)
                if keepdims:
                    next(kept)
            else:
                index.append(next(kept))
        value = source(tuple(index)) if source is not None else x[tuple(index)]
        return reducer(value, reduce_axes)

    return te.compute(out_dims, body, name)


def element_count(x: te.Tensor, axes) -> tir.PrimExpr:
    count: tir.PrimExpr = int64(1)
    for a in axes:
        count = count * x.shape[a]
    return count


def _as_float(value: tir.PrimExpr, dtype: str) -> tir.PrimExpr:
    return value if value.dtype == dtype else tir.Cast(dtype, value)


def _mean(x: te.Tensor, axes, keepdims, name) -> tuple[te.Tensor, te.Tensor]:
    total = reduce_compute(x, axes, keepdims, te.reduce_sum, f"{name}_red")
    count = _as_float(element_count(x, axes), x.dtype)
    return total, te.compute(total.shape, lambda *i: tir.Div(total[i], count), f"T_{name}")


def _variance(x: te.Tensor, axes, keepdims, name) -> te.Tensor:
    _, mean = _mean(x, axes, True, f"{name}_mean")

    def deviation(index):
        mean_index = tuple(int64(0) if a in axes else index[a] for a in range(x.ndim))
        diff = tir.Sub(x[index], mean[mean_index])
        return tir.Mul(diff, diff)

    squares = reduce_compute(x, axes, keepdims, te.reduce_sum, f"{name}_sq", deviation)
    count = _as_float(element_count(x, axes), x.dtype)
    return te.compute(squares.shape, lambda *i: tir.Div(squares[i], count), f"T_{name}")


def _arg_extreme(x: te.Tensor, axes, keepdims, name, value_reducer) -> te.Tensor:
    extreme = reduce_compute(x, axes, True, value_reducer, f"{name}_value")
    flat_extent = element_count(x, axes)

    def candidate(index):
        # The row-major position inside the reduced axes, or past-the-end if not extreme.
        position: tir.PrimExpr = int64(0)
        for a in axes:
            position = position * x.shape[a] + index[a]
        extreme_index = tuple(int64(0) if a in axes else index[a] for a in range(x.ndim))
        return tir.Select(tir.EQ(x[index], extreme[extreme_index]), position, flat_extent)

    first = reduce_compute(x, axes, keepdims, te.reduce_min, f"{name}_index", candidate)
    return te.compute(first.shape, lambda *i: first[i], f"T_{name}", dtype="int64")


def _legalize(name: str, build):
    def legalize(call, context):
        info = tensor_info(call, 0)
        if info.shape_values is None:
            return None
        axes = normalize_axes(call, call.attrs["axis"], info.ndim)
        keepdims = call.attrs["keepdims"]
        return context.call_te(lambda x: build(x, axes, keepdims), call.args, call.arg_info, name)

    return legalize


REDUCTIONS = {
    "sum": (lambda x, a, k: reduce_compute(x, a, k, te.reduce_sum, "T_sum"), None, False),
    "prod": (lambda x, a, k: reduce_compute(x, a, k, te.reduce_prod, "T_prod"), None, False),
    "max": (lambda x, a, k: reduce_compute(x, a, k, te.reduce_max, "T_max"), None, False),
    "min": (lambda x, a, k: reduce_compute(x, a, k, te.reduce_min, "T_min"), None, False),
    "mean": (lambda x, a, k: _mean(x, a, k, "mean")[1], None, True),
    "variance": (lambda x, a, k: _variance(x, a, k, "variance"), None, True),
    "std": (lambda x, a, k: _std(x, a, k), None, True),
    "argmax": (lambda x, a, k: _arg_extreme(x, a, k, "argmax", te.reduce_max), "int64", False),
    "argmin": (lambda x, a, k: _arg_extreme(x, a, k, "argmin", te.reduce_min), "int64", False),
}


def _std(x, axes, keepdims):
    variance = _variance(x, axes, keepdims, "std_var")
    return te.compute(variance.shape, lambda *i: tir.Call(x.dtype, "tir.sqrt", (variance[i],)), "T_std")


for _name, (_build, _result_dtype, _float_only) in REDUCTIONS.items():
    register(OpDef(
        name=f"relax.{_name}",
        args=("x",),
        attrs=AXIS_ATTRS,
        infer=_make_infer(_result_dtype, _float_only),
        pattern="comm_reduce",
        legalize=_legalize(_name, _build),
        doc=f"{_name} over the given axes",
    ))


# -- collapse_sum_to: the sum that undoes a broadcast ---------------------------------------
def _collapse_axes(data_dims, target_dims):
    """Axes of data summed away: the leading extra ones, and those the target keeps as 1."""
    lead = len(data_dims) - len(target_dims)
    axes = list(range(lead))
    for offset, target in enumerate(target_dims):
        data = data_dims[lead + offset]
        if isinstance(target, tir.IntImm) and target.value == 1 and not (isinstance(data, tir.IntImm) and data.value == 1):
            axes.append(lead + offset)
    return tuple(axes), lead


def _collapse_infer(call) -> TensorStructInfo:
    info = tensor_info(call, 0)
    target = shape_argument(call, 1)
    if target is None:
        return TensorStructInfo(None, info.dtype, -1)
    if info.ndim >= 0 and len(target) > info.ndim:
        raise call.error(f"cannot collapse a tensor of rank {info.ndim} to rank {len(target)}")
    return make_tensor_info(target, info.dtype)


def _collapse_legalize(call, context):
    target = shape_argument(call, 1)
    if target is None or tensor_info(call, 0).shape_values is None:
        return None

    def fcompute(x):
        axes, lead = _collapse_axes(x.shape, target)
        summed = reduce_compute(x, axes, True, te.reduce_sum, "T_collapse_sum_red")
        return te.compute(target, lambda *i: summed[(int64(0),) * lead + i], "T_collapse_sum")

    return context.call_te(fcompute, call.args[:1], call.arg_info[:1], "collapse_sum")


register(OpDef(
    name="relax.collapse_sum_to", args=("data", "shape"), attrs=(), infer=_collapse_infer, pattern="comm_reduce",
    legalize=_collapse_legalize, doc="sum a broadcast tensor back down to a shape",
))
