"""Losses of R.nn: nll_loss and cross_entropy_with_logits.

nll_loss(predictions (N, C, d1.., dk) or (C,), targets (N, d1.., dk) or (),
weights (C,) optional) gives, per target, -predictions[n, t, d..] * weights[t]
(0 where t == ignore_index), then with reduction "none" that tensor, with "sum"
its sum, with "mean" its sum divided by the sum of the weights used (NaN when every
target is ignored, as in TVM 0.27 and PyTorch).

cross_entropy_with_logits(predictions, labels) is -sum(predictions * labels),
divided by the batch size (the first dimension) when the rank is 2 or more.

Both legalize to tensor expressions: an elementwise loss, then sums over every axis.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .index_check import checked_position
from .registry import AttrSpec, OpDef, register
from .shape import format_dim, format_shape, int64, make_tensor_info, same_dim, tensor_info

NLL_REDUCTIONS = ("none", "mean", "sum")


def _same_dtype(call, first: TensorStructInfo, other: TensorStructInfo, name: str) -> None:
    if "void" not in (first.dtype, other.dtype) and first.dtype != other.dtype:
        raise call.error(f"{name} must have the data type of predictions ({first.dtype}), got {other.dtype}")


def _check_nll_shapes(call, predictions, targets, weights) -> None:
    """targets is predictions without the class axis; weights has one entry per class."""
    class_axis = 1 if predictions.ndim >= 2 else 0
    if predictions.ndim >= 0 and targets.ndim >= 0 and targets.ndim != max(predictions.ndim - 1, 0):
        raise call.error(f"targets of rank {targets.ndim} do not fit predictions of rank {predictions.ndim}")
    if weights is not None and weights.ndim >= 0 and weights.ndim != 1:
        raise call.error(f"weights must have rank 1, got rank {weights.ndim}")
    if predictions.shape_values is None:
        return
    dims = predictions.shape_values
    if targets.shape_values is not None:
        expected = dims[:class_axis] + dims[class_axis + 1:]
        if any(same_dim(a, b) is False for a, b in zip(targets.shape_values, expected)):
            raise call.error(f"targets {format_shape(targets.shape_values)} must be predictions "
                             f"{format_shape(dims)} without the class axis, {format_shape(expected)}")
    if weights is not None and weights.shape_values is not None \
            and same_dim(weights.shape_values[0], dims[class_axis]) is False:
        raise call.error(f"weights {format_shape(weights.shape_values)} must have one entry per class, "
                         f"{format_dim(dims[class_axis])} in predictions {format_shape(dims)}")


def _nll_loss_infer(call) -> TensorStructInfo:
    if len(call.args) > 3:
        raise call.error(f"takes predictions, targets and optional weights, got {len(call.args)} arguments")
    predictions, targets = tensor_info(call, 0), tensor_info(call, 1)
    weights = tensor_info(call, 2) if len(call.args) == 3 else None
    if call.attrs["reduction"] not in NLL_REDUCTIONS:
        raise call.error(f"reduction must be one of {', '.join(NLL_REDUCTIONS)}, got {call.attrs['reduction']!r}")
    if not (dt.is_int(targets.dtype) or dt.is_uint(targets.dtype) or targets.dtype == "void"):
        raise call.error(f"targets must have an integer data type, got {targets.dtype}")
    if weights is not None:
        _same_dtype(call, predictions, weights, "weights")
    _check_nll_shapes(call, predictions, targets, weights)
    if call.attrs["reduction"] != "none":
        return make_tensor_info((), predictions.dtype)
    if targets.shape_values is not None:
        return make_tensor_info(targets.shape_values, predictions.dtype)
    return TensorStructInfo(None, predictions.dtype, targets.ndim)


def _zero(dtype: str) -> tir.PrimExpr:
    return tir.FloatImm(dtype, 0.0) if dt.is_float(dtype) else tir.IntImm(dtype, 0)


def _sum_all(tensor: te.Tensor, name: str) -> te.Tensor:
    """The sum of every element, as a 0-d tensor."""
    axes = [te.reduce_axis(d, f"k{a}") for a, d in enumerate(tensor.shape)]
    if not axes:
        return te.compute((), lambda: tensor[()], name)
    return te.compute((), lambda: te.reduce_sum(tensor[tuple(a.var for a in axes)], axes), name)


def nll_loss_compute(predictions, targets, weights, reduction: str, ignore_index: int):
    dtype = predictions.dtype
    zero = _zero(dtype)

    classes = predictions.shape[1] if predictions.ndim >= 2 else predictions.shape[0]

    def target_of(i):
        value = targets[i]
        return value if value.dtype == "int64" else tir.Cast("int64", value)

    def class_of(i):
        """The class a kept target names, checked: it addresses predictions and weights."""
        return checked_position(target_of(i), classes, "R.nn.nll_loss")

    def weight_of(i):
        kept = tir.NE(target_of(i), int64(ignore_index))
        weight = weights[(class_of(i),)] if weights is not None else tir.const(1.0, dtype)
        # if_then_else reads the weight only for a kept target (an ignored one names no class).
        return tir.Call(dtype, "tir.if_then_else", (kept, weight, zero))

    def loss(*i):
        index = (i[0], class_of(i)) + i[1:] if predictions.ndim >= 2 else (class_of(i),)
        kept = tir.NE(target_of(i), int64(ignore_index))
        value = tir.Mul(tir.Sub(zero, predictions[index]), weight_of(i))
        return tir.Call(dtype, "tir.if_then_else", (kept, value, zero))

    losses = te.compute(targets.shape, loss, "T_nll_loss")
    if reduction == "none":
        return losses
    total = _sum_all(losses, "T_nll_loss_sum")
    if reduction == "sum":
        return total
    used = te.compute(targets.shape, lambda *i: weight_of(i), "T_nll_loss_weight")
    weight_total = _sum_all(used, "T_nll_loss_weight_sum")
    return te.compute((), lambda: tir.Div(total[()], weight_total[()]), "T_nll_loss_mean")


def _nll_loss_legalize(call, context):
    if _nll_loss_infer(call).shape_values is None:
        return None
    reduction, ignore_index = call.attrs["reduction"], call.attrs["ignore_index"]

    def fcompute(predictions, targets, weights=None):
        return nll_loss_compute(predictions, targets, weights, reduction, ignore_index)

    return context.call_te(fcompute, call.args, call.arg_info, "nll_loss")


register(OpDef(
    name="relax.nn.nll_loss",
    args=("predictions", "targets", "*weights"),
    attrs=(
        AttrSpec("reduction", "mean", lambda v: None if v in NLL_REDUCTIONS else f"expected one of {NLL_REDUCTIONS}"),
        AttrSpec("ignore_index", -100, lambda v: None if isinstance(v, int) else "expected an int"),
    ),
    infer=_nll_loss_infer,
    pattern="opaque",
    legalize=_nll_loss_legalize,
    doc="negative log likelihood loss with optional class weights; reduction none, mean or sum",
))


# -- cross_entropy_with_logits ---------------------------------------------------------------------
def _cross_entropy_infer(call) -> TensorStructInfo:
    predictions, labels = tensor_info(call, 0), tensor_info(call, 1)
    _same_dtype(call, predictions, labels, "labels")
    if predictions.ndim >= 0 and labels.ndim >= 0 and predictions.ndim != labels.ndim:
        raise call.error(f"predictions and labels must have the same rank, got {predictions.ndim} and {labels.ndim}")
    if predictions.shape_values is not None and labels.shape_values is not None \
            and any(same_dim(a, b) is False for a, b in zip(predictions.shape_values, labels.shape_values)):
        raise call.error(f"predictions {format_shape(predictions.shape_values)} and labels "
                         f"{format_shape(labels.shape_values)} must have the same shape")
    return make_tensor_info((), predictions.dtype)


def cross_entropy_compute(predictions, labels):
    products = te.compute(predictions.shape, lambda *i: tir.Mul(predictions[i], labels[i]), "T_cross_entropy_product")
    total = _sum_all(products, "T_cross_entropy_sum")
    zero = _zero(predictions.dtype)
    if predictions.ndim < 2:
        return te.compute((), lambda: tir.Sub(zero, total[()]), "T_cross_entropy")
    batch = tir.Cast(predictions.dtype, predictions.shape[0])
    return te.compute((), lambda: tir.Div(tir.Sub(zero, total[()]), batch), "T_cross_entropy")


def _cross_entropy_legalize(call, context):
    return context.call_te(cross_entropy_compute, call.args, call.arg_info, "cross_entropy_with_logits")


register(OpDef(
    name="relax.nn.cross_entropy_with_logits",
    args=("predictions", "labels"),
    attrs=(),
    infer=_cross_entropy_infer,
    pattern="opaque",
    legalize=_cross_entropy_legalize,
    doc="-sum(predictions * labels), divided by the batch size when the rank is 2 or more",
))
