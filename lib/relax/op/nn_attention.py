"""Scaled dot-product attention: R.nn.attention(query, key, value) and
R.nn.attention_bias(query, key, value, bias), as TVM defines them.

Layouts are BSNH: query (batch, seq, heads, head_dim), key (batch, seq_kv, heads,
head_dim), value (batch, seq_kv, heads, head_dim_v); the result is (batch, seq,
heads, head_dim_v). bias is 4-D (batch, heads, seq, seq_kv), each axis possibly 1.
TVMScript also spells the biased form `R.nn.attention(q, k, v, bias)`, so
relax.nn.attention takes the bias as an optional fourth argument.

scores = query . key / sqrt(head_dim) (or * scale), plus bias, then a softmax over
seq_kv. With causal_mask, score (i, j) is kept where j <= i + offset (offset 0 for
"TopLeft", |seq - seq_kv| for "BottomRight", as TVM computes it): masked scores are
zeroed before the row maximum and their exponentials zeroed before the sum, exactly
as TVM's legalization does.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import tir
from ..ir.struct_info import TensorStructInfo
from . import te
from .nn_window import fold
from .registry import AttrSpec, OpDef, register
from .shape import format_shape, int64, make_tensor_info, same_dim, static_value, tensor_info
from .unary import intrinsic

CAUSAL_MASKS = (None, "TopLeft", "BottomRight")


def _scale_check(value) -> str | None:
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return None
    if isinstance(value, (tir.FloatImm, tir.IntImm)):
        return None
    return "expected None or a number"


def _causal_mask_check(value) -> str | None:
    return None if value in CAUSAL_MASKS else "expected None, 'TopLeft' or 'BottomRight'"


def _window_size_check(value) -> str | None:
    return None if value is None or isinstance(value, int) and value > 0 else "expected None or a positive int"


ATTENTION_ATTRS = (
    AttrSpec("scale", None, _scale_check),
    AttrSpec("causal_mask", None, _causal_mask_check),
    AttrSpec("window_size", None, _window_size_check),
)

ROLES = ("query", "key", "value", "bias")


def _operands(call) -> list[TensorStructInfo]:
    if len(call.args) > 4:
        raise call.error(f"takes query, key, value and an optional bias, got {len(call.args)} arguments")
    infos = [tensor_info(call, position) for position in range(len(call.args))]
    for role, info in zip(ROLES, infos):
        if info.ndim >= 0 and info.ndim != 4:
            layout = "(batch, heads, seq, seq_kv)" if role == "bias" else "(batch, seq, heads, head_dim)"
            raise call.error(f"{role} must have rank 4 {layout}, got rank {info.ndim}")
        if info.dtype != "void" and not dt.is_float(info.dtype):
            raise call.error(f"{role} must be a floating-point tensor, got {info.dtype}")
    return infos


def _require_same(call, what: str, pairs) -> None:
    for (role_a, a), (role_b, b) in pairs:
        if same_dim(a, b) is False:
            raise call.error(f"{what} differs: {role_a} has {static_value(a)}, {role_b} has {static_value(b)}")


def _attention_infer(call) -> TensorStructInfo:
    infos = _operands(call)
    query, key, value = infos[:3]
    if any(info.shape_values is None for info in infos):
        return TensorStructInfo(None, query.dtype, 4)
    (batch, seq, heads, head_dim), (kb, seq_kv, k_heads, k_dim), (vb, v_seq, v_heads, v_dim) = (
        info.shape_values for info in (query, key, value))
    _require_same(call, "batch size", [(("query", batch), ("key", kb)), (("query", batch), ("value", vb))])
    _require_same(call, "sequence length", [(("key", seq_kv), ("value", v_seq))])
    _require_same(call, "number of heads",
                  [(("query", heads), ("key", k_heads)), (("query", heads), ("value", v_heads))])
    _require_same(call, "head dimension", [(("query", head_dim), ("key", k_dim))])
    if len(infos) == 4:
        expected = (batch, heads, seq, seq_kv)
        for axis, (have, want) in enumerate(zip(infos[3].shape_values, expected)):
            if static_value(have) != 1 and same_dim(have, want) is False:
                raise call.error(f"bias {format_shape(infos[3].shape_values)} does not broadcast to "
                                 f"(batch, heads, seq, seq_kv) = {format_shape(expected)}")
    return make_tensor_info((batch, seq, heads, v_dim), query.dtype)


def _number(value):
    return value.value if isinstance(value, (tir.FloatImm, tir.IntImm)) else value


def _bias_index(bias: te.Tensor, index):
    return tuple(int64(0) if static_value(d) == 1 else i for d, i in zip(bias.shape, index))


def attention_compute(query, key, value, bias, scale, causal_mask) -> te.Tensor:
    batch, seq, heads, head_dim = query.shape
    seq_kv, head_dim_v = value.shape[1], value.shape[3]
    dtype = query.dtype
    scores_dims = (batch, heads, seq, seq_kv)
    h = te.reduce_axis(head_dim, "k")
    products = te.compute(
        scores_dims, lambda b, n, i, j: te.reduce_sum(tir.Mul(query[b, i, n, h.var], key[b, j, n, h.var]), h),
        "T_batch_matmul_NT")

    def scaled(*index):
        score = products[index]
        if scale is not None:
            score = tir.Mul(score, tir.FloatImm(dtype, float(scale)))
        else:
            score = tir.Div(score, intrinsic("sqrt")(tir.Cast(dtype, head_dim)))
        if bias is not None:
            score = tir.Add(score, bias[_bias_index(bias, index)])
        return score

    scores = te.compute(scores_dims, scaled, "T_scores")
    if causal_mask is None:
        weights = _softmax(scores, None)
    else:
        offset = int64(0) if causal_mask == "TopLeft" else _absolute(fold(seq - seq_kv))
        weights = _softmax(scores, offset)
    j = te.reduce_axis(seq_kv, "j")
    return te.compute(
        (batch, seq, heads, head_dim_v),
        lambda b, i, n, d: te.reduce_sum(tir.Mul(weights[b, n, i, j.var], value[b, j.var, n, d]), j),
        "T_attention")


def _absolute(value: tir.PrimExpr) -> tir.PrimExpr:
    known = static_value(value)
    if known is not None:
        return int64(abs(known))
    return tir.Max(value, int64(0) - value)


def _softmax(scores: te.Tensor, offset) -> te.Tensor:
    """Softmax over the last axis; with an offset, only over j <= i + offset."""
    dtype = scores.dtype
    zero = tir.FloatImm(dtype, 0.0)

    def masked(tensor, b, n, i, j):
        if offset is None:
            return tensor[b, n, i, j]
        return tir.Select(tir.LE(j, i + offset), tensor[b, n, i, j], zero)

    kept = te.compute(scores.shape, lambda *index: masked(scores, *index), "trilu") if offset is not None else scores
    row_dims = scores.shape[:3] + (int64(1),)
    j = te.reduce_axis(scores.shape[3], "k2")
    maximum = te.compute(row_dims, lambda b, n, i, _: te.reduce_max(kept[b, n, i, j.var], j), "T_softmax_maxelem")
    exp = te.compute(
        scores.shape, lambda b, n, i, c: intrinsic("exp")(tir.Sub(kept[b, n, i, c], maximum[b, n, i, int64(0)])),
        "T_softmax_exp")
    if offset is not None:
        exp = te.compute(scores.shape, lambda *index: masked(exp, *index), "trilu_exp")
    j_sum = te.reduce_axis(scores.shape[3], "k3")
    total = te.compute(row_dims, lambda b, n, i, _: te.reduce_sum(exp[b, n, i, j_sum.var], j_sum), "T_softmax_expsum")
    return te.compute(scores.shape, lambda b, n, i, c: tir.Div(exp[b, n, i, c], total[b, n, i, int64(0)]),
                      "T_softmax_norm")


def _attention_legalize(call, context):
    info = _attention_infer(call)
    if info.shape_values is None:
        return None
    if call.attrs["window_size"] is not None:
        raise call.error("sliding-window attention (window_size) has no legalization")
    scale, causal_mask = _number(call.attrs["scale"]), call.attrs["causal_mask"]

    def fcompute(query, key, value, bias=None):
        return attention_compute(query, key, value, bias, scale, causal_mask)

    name = "attention_bias" if len(call.args) == 4 else "attention"
    return context.call_te(fcompute, call.args, call.arg_info, name)


register(OpDef(
    name="relax.nn.attention",
    args=("query", "key", "value", "*bias"),
    attrs=ATTENTION_ATTRS,
    infer=_attention_infer,
    pattern="out_elementwise_fusable",  # as TVM annotates its kernel
    legalize=_attention_legalize,
    doc="scaled dot-product attention, BSNH layout, optional bias and causal mask",
))

register(OpDef(
    name="relax.nn.attention_bias",
    args=("query", "key", "value", "bias"),
    attrs=ATTENTION_ATTRS,
    infer=_attention_infer,
    pattern="out_elementwise_fusable",
    legalize=_attention_legalize,
    doc="scaled dot-product attention with a bias added to the scores",
))
