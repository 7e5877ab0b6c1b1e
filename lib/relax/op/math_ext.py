"""More elementwise math: atan2, log_add_exp, ewise_fma, outer, size, and the
activations R.nn.selu and R.nn.prelu.

atan2 and log_add_exp broadcast like the binary operators but need floating
operands (their TIR intrinsics have no integer form). ewise_fma is x1 * x2 + x3
over equally shaped operands. outer is the product of two vectors; size the
element count of a tensor as a 0-d int64 tensor; prelu scales the negative
elements by a per-channel slope along `axis`.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .registry import AttrSpec, OpDef, register
from .shape import (
    BroadcastError, broadcast_index, broadcast_shapes, format_shape, int64, make_tensor_info, product_dims,
    same_dim, tensor_info,
)
from .unary import constant, elementwise_infer, elementwise_legalize, intrinsic


def _common_dtype(call, infos) -> str:
    dtypes = {info.dtype for info in infos} - {"void"}
    if len(dtypes) > 1:
        raise call.error(f"operand data types {' and '.join(sorted(dtypes))} must be equal")
    return dtypes.pop() if dtypes else "void"


def _require_float(call, dtype: str) -> None:
    if dtype != "void" and not dt.is_float(dtype):
        raise call.error(f"operands must be floating-point tensors, got {dtype}")


def broadcast_infer(float_only: bool, same_shape: bool = False):
    """Inference of an n-ary elementwise operator: equal dtypes, numpy broadcasting
    (or, with `same_shape`, shapes that must agree)."""

    def infer(call) -> TensorStructInfo:
        infos = [tensor_info(call, i) for i in range(len(call.args))]
        dtype = _common_dtype(call, infos)
        if float_only:
            _require_float(call, dtype)
        if any(info.shape_values is None for info in infos):
            ndims = [info.ndim for info in infos]
            return TensorStructInfo(None, dtype, -1 if -1 in ndims else max(ndims))
        dims = infos[0].shape_values
        for info in infos[1:]:
            if same_shape and (len(info.shape_values) != len(dims)
                               or any(same_dim(a, b) is False for a, b in zip(dims, info.shape_values))):
                raise call.error(f"operand shapes {format_shape(dims)} and {format_shape(info.shape_values)}"
                                 " must be equal")
            try:
                dims = broadcast_shapes(dims, info.shape_values)
            except BroadcastError as exc:
                raise call.error(str(exc)) from None
            if dims is None:
                return TensorStructInfo(None, dtype, max(i.ndim for i in infos))
        return make_tensor_info(dims, dtype)

    return infer


def broadcast_legalize(name: str, element):
    """Legalization computing `element(*operands)` at every index of the broadcast shape."""

    def legalize(call, context):
        out = call.op.infer(call)
        if out.shape_values is None:
            return None

        def fcompute(*tensors):
            dims = tensors[0].shape
            for tensor in tensors[1:]:
                dims = broadcast_shapes(dims, tensor.shape)
            return te.compute(dims, lambda *i: element(*(t[broadcast_index(t.shape, i)] for t in tensors)),
                              f"T_{name}")

        return context.call_te(fcompute, call.args, call.arg_info, name)

    return legalize


def _log_add_exp(a, b):
    exp = intrinsic("exp")
    return intrinsic("log")(tir.Add(exp(a), exp(b)))


def _fma(a, b, c):
    return tir.Add(tir.Mul(a, b), c)


for _name, _element, _args, _float_only, _same in (
    ("atan2", lambda a, b: tir.Call(a.dtype, "tir.atan2", (a, b)), ("x1", "x2"), True, False),
    ("log_add_exp", _log_add_exp, ("x1", "x2"), True, False),
    ("ewise_fma", _fma, ("x1", "x2", "x3"), False, True),
):
    register(OpDef(f"relax.{_name}", _args, (), broadcast_infer(_float_only, _same), "broadcast",
                   broadcast_legalize(_name, _element), f"elementwise {_name.replace('_', ' ')}"))


# -- selu and prelu ---------------------------------------------------------------------------
SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805


def _selu(x):
    # scale * (max(x, 0) + min(0, alpha * (exp(x) - 1))), the formula TVM legalizes to
    negative = tir.Mul(constant(SELU_ALPHA, x), tir.Sub(intrinsic("exp")(x), constant(1, x)))
    return tir.Mul(constant(SELU_SCALE, x), tir.Add(tir.Max(x, constant(0, x)), tir.Min(constant(0, x), negative)))


register(OpDef("relax.nn.selu", ("data",), (), elementwise_infer("float", None), "elementwise",
               elementwise_legalize("selu", _selu), "scaled exponential linear unit"))


def _prelu_axis(call, ndim: int) -> int:
    axis = call.attrs["axis"]
    if ndim >= 0 and not -ndim <= axis < ndim:
        raise call.error(f"axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim > 0 else axis


def _prelu_infer(call) -> TensorStructInfo:
    data, alpha = tensor_info(call, 0), tensor_info(call, 1)
    _common_dtype(call, (data, alpha))
    _require_float(call, data.dtype)
    axis = _prelu_axis(call, data.ndim)
    if alpha.ndim not in (-1, 1):
        raise call.error(f"alpha must be a 1-D tensor, got rank {alpha.ndim}")
    if data.shape_values is not None and alpha.shape_values is not None:
        channels, slopes = data.shape_values[axis], alpha.shape_values[0]
        if same_dim(channels, slopes) is False and not static_one(slopes):
            raise call.error(f"alpha of shape {format_shape((slopes,))} does not match axis {axis} of"
                             f" {format_shape(data.shape_values)}")
    return data.with_fields(span=None)


def static_one(dim) -> bool:
    return isinstance(dim, tir.IntImm) and dim.value == 1


def _prelu_legalize(call, context):
    axis = _prelu_axis(call, call.arg_info[0].ndim)

    def fcompute(x, alpha):
        def body(*i):
            slope = alpha[int64(0) if static_one(alpha.shape[0]) else i[axis]]
            return tir.Select(tir.LT(constant(0, x[i]), x[i]), x[i], tir.Mul(x[i], slope))

        return te.compute(x.shape, body, "compute")

    return context.call_te(fcompute, call.args, call.arg_info, "prelu")


register(OpDef("relax.nn.prelu", ("data", "alpha"), (AttrSpec("axis", 1),), _prelu_infer, "elementwise",
               _prelu_legalize, "x where positive, else alpha[channel] * x (channels along axis)"))


# -- outer and size ---------------------------------------------------------------------------------
def _outer_infer(call) -> TensorStructInfo:
    a, b = tensor_info(call, 0), tensor_info(call, 1)
    dtype = _common_dtype(call, (a, b))
    for position, info in enumerate((a, b)):
        if info.ndim not in (-1, 1):
            raise call.error(f"argument {position + 1} must be a 1-D tensor, got rank {info.ndim}")
    if a.shape_values is None or b.shape_values is None:
        return TensorStructInfo(None, dtype, 2)
    return make_tensor_info((a.shape_values[0], b.shape_values[0]), dtype)


def _outer_legalize(call, context):
    return context.call_te(lambda a, b: te.compute((a.shape[0], b.shape[0]), lambda i, j: tir.Mul(a[i], b[j]),
                                                   "outer", axis_names=("i", "j")),
                           call.args, call.arg_info, "outer")


register(OpDef("relax.outer", ("x1", "x2"), (), _outer_infer, "injective", _outer_legalize,
               "outer product of two vectors: out[i, j] = x1[i] * x2[j]"))


def _size_infer(call) -> TensorStructInfo:
    tensor_info(call, 0)
    return make_tensor_info((), "int64")


def _size_legalize(call, context):
    # The tensor is passed only for its shape, which binds its symbolic sizes in the kernel.
    return context.call_te(lambda x: te.compute((), lambda: product_dims(x.shape), "size"),
                           call.args, call.arg_info, "size")


register(OpDef("relax.size", ("x",), (), _size_infer, "opaque", _size_legalize,
               "the number of elements, as a 0-d int64 tensor"))
