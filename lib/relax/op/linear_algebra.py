"""Matrix products: matmul (numpy semantics: 1-D operands promoted, batch dimensions
broadcast, optional out_dtype) and linear (x @ weight^T + bias).

The legalized matmul is one reduction block over k, accumulating in out_dtype.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .registry import AttrSpec, OpDef, register
from .shape import BroadcastError, broadcast_index, broadcast_shapes, format_shape, make_tensor_info, same_dim, tensor_info


def _out_dtype(call, a: TensorStructInfo, b: TensorStructInfo) -> str:
    requested = call.attrs.get("out_dtype")
    if requested not in (None, "void", ""):
        return requested
    if a.dtype != b.dtype and "void" not in (a.dtype, b.dtype):
        raise call.error(f"operand data types {a.dtype} and {b.dtype} must be equal unless out_dtype is given")
    return a.dtype if a.dtype != "void" else b.dtype


def matmul_dims(call, a_dims, b_dims):
    """The output dims of a @ b, or None when symbolic batch sizes are undecidable."""
    if len(a_dims) == 0 or len(b_dims) == 0:
        raise call.error("operands must have at least one dimension")
    a2 = (a_dims[0],) if len(a_dims) == 1 else a_dims
    b2 = (b_dims[0],) if len(b_dims) == 1 else b_dims
    k_a = a2[-1]
    k_b = b2[0] if len(b_dims) == 1 else b2[-2]
    if same_dim(k_a, k_b) is False:
        raise call.error(
            f"reduction dimensions differ: {format_shape(a_dims)} @ {format_shape(b_dims)}"
        )
    a_batch = a_dims[:-2] if len(a_dims) > 2 else ()
    b_batch = b_dims[:-2] if len(b_dims) > 2 else ()
    try:
        batch = broadcast_shapes(a_batch, b_batch)
    except BroadcastError as exc:
        raise call.error(f"batch dimensions: {exc}") from None
    if batch is None:
        return None
    out = list(batch)
    if len(a_dims) > 1:
        out.append(a_dims[-2])
    if len(b_dims) > 1:
        out.append(b_dims[-1])
    return tuple(out)


def _matmul_infer(call) -> TensorStructInfo:
    a, b = tensor_info(call, 0), tensor_info(call, 1)
    out_dtype = _out_dtype(call, a, b)
    if a.shape_values is not None and b.shape_values is not None:
        dims = matmul_dims(call, a.shape_values, b.shape_values)
        if dims is not None:
            return make_tensor_info(dims, out_dtype)
    if a.ndim < 0 or b.ndim < 0:
        return TensorStructInfo(None, out_dtype, -1)
    ndim = max(a.ndim, b.ndim) - (a.ndim == 1) - (b.ndim == 1)
    return TensorStructInfo(None, out_dtype, max(ndim, 0) if max(a.ndim, b.ndim) > 1 else 0)


def _cast(value: tir.PrimExpr, dtype: str) -> tir.PrimExpr:
    return value if value.dtype == dtype else tir.Cast(dtype, value)


def matmul_compute(a: te.Tensor, b: te.Tensor, out_dims, out_dtype: str, name: str = "matmul") -> te.Tensor:
    k_extent = a.shape[-1]
    k = te.reduce_axis(k_extent, "k")
    batch_rank = len(out_dims) - (a.ndim > 1) - (b.ndim > 1)

    def body(*index):
        batch = index[:batch_rank]
        rest = list(index[batch_rank:])
        if a.ndim == 1:
            a_index = (k.var,)
        else:
            row = rest.pop(0)
            a_index = broadcast_index(a.shape[:-2], batch) + (row, k.var)
        if b.ndim == 1:
            b_index = (k.var,)
        else:
            col = rest.pop(0)
            b_index = broadcast_index(b.shape[:-2], batch) + (k.var, col)
        return te.reduce_sum(tir.Mul(_cast(a[a_index], out_dtype), _cast(b[b_index], out_dtype)), k)

    names = [f"i{n}" for n in range(len(out_dims))]
    return te.compute(out_dims, body, name, out_dtype, names)


def _matmul_legalize(call, context):
    info = _matmul_infer(call)
    if info.shape_values is None:
        return None
    return context.call_te(
        lambda a, b: matmul_compute(a, b, matmul_dims(call, a.shape, b.shape), info.dtype),
        call.args, call.arg_info, "matmul",
    )


def _dtype_check(value) -> str | None:
    if value in (None, "void", "") or isinstance(value, str) and dt.is_valid(value):
        return None
    return "expected a data type"


register(OpDef(
    name="relax.matmul",
    args=("x1", "x2"),
    attrs=(AttrSpec("out_dtype", None, _dtype_check),),
    infer=_matmul_infer,
    pattern="out_elementwise_fusable",
    legalize=_matmul_legalize,
    doc="matrix product with numpy semantics (batch dimensions broadcast)",
))


def _linear_infer(call) -> TensorStructInfo:
    x, weight = tensor_info(call, 0), tensor_info(call, 1)
    out_dtype = _out_dtype(call, x, weight)
    if x.shape_values is None or weight.shape_values is None:
        return TensorStructInfo(None, out_dtype, x.ndim)
    if weight.ndim != 2:
        raise call.error(f"weight must have rank 2, got rank {weight.ndim}")
    if same_dim(x.shape_values[-1], weight.shape_values[1]) is False:
        raise call.error(
            f"input features differ: {format_shape(x.shape_values)} with weight {format_shape(weight.shape_values)}"
        )
    return make_tensor_info(x.shape_values[:-1] + (weight.shape_values[0],), out_dtype)


def _linear_legalize(call, context):
    info = _linear_infer(call)
    if info.shape_values is None:
        return None

    def fcompute(x, weight, *bias):
        k = te.reduce_axis(x.shape[-1], "k")

        def product(*index):
            return te.reduce_sum(
                tir.Mul(_cast(x[index[:-1] + (k.var,)], info.dtype), _cast(weight[index[-1], k.var], info.dtype)), k
            )

        out_dims = x.shape[:-1] + (weight.shape[0],)
        result = te.compute(out_dims, product, "T_matmul" if bias else "T_linear", info.dtype)
        if not bias:
            return result
        return te.compute(result.shape, lambda *i: tir.Add(result[i], bias[0][broadcast_index(bias[0].shape, i)]),
                          "T_linear")

    return context.call_te(fcompute, call.args, call.arg_info, "linear")


register(OpDef(
    name="relax.linear",
    args=("data", "weight", "*bias"),
    attrs=(AttrSpec("out_dtype", None, _dtype_check),),
    infer=_linear_infer,
    pattern="out_elementwise_fusable",
    legalize=_linear_legalize,
    doc="data @ weight^T + bias (bias optional)",
))
