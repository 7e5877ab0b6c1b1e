"""R.nn.attention and R.nn.attention_bias: inference, attribute checks, and the
legalized kernel against a numpy softmax(q k^T * scale + bias) v (float32, rtol 1e-5,
atol 1e-5). Causal masks keep score (i, j) where j <= i + offset, offset 0 for
TopLeft and |seq - seq_kv| for BottomRight (TVM's definition)."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")
RNG = np.random.default_rng(13)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def normal(*shape):
    return RNG.standard_normal(shape).astype("float32")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.{op}"), args, ir.FrozenDict(attrs)))


def dims(info):
    return [d.value if isinstance(d, tir.IntImm) else d for d in info.shape_values]


def test_attention_shapes():
    q, k, v = tensor((N, 4, 2, 8)), tensor((N, 6, 2, 8)), tensor((N, 6, 2, 5))
    assert dims(infer("nn.attention", q, k, v)) == [N, 4, 2, 5]
    assert dims(infer("nn.attention", q, k, v, tensor((1, 2, 4, 6)), causal_mask="TopLeft")) == [N, 4, 2, 5]
    assert dims(infer("nn.attention_bias", q, k, v, tensor((N, 1, 4, 6)))) == [N, 4, 2, 5]


@pytest.mark.parametrize("shapes, attrs, message", [
    (((1, 4, 8), (1, 6, 2, 8), (1, 6, 2, 5)), {},
     "query must have rank 4 \\(batch, seq, heads, head_dim\\), got rank 3"),
    (((1, 4, 2, 8), (1, 5, 2, 8), (1, 6, 2, 5)), {}, "sequence length differs: key has 5, value has 6"),
    (((1, 4, 2, 8), (1, 6, 2, 7), (1, 6, 2, 5)), {}, "head dimension differs: query has 8, key has 7"),
    (((1, 4, 2, 8), (1, 6, 1, 8), (1, 6, 1, 5)), {}, "number of heads differs: query has 2, key has 1"),
    (((1, 4, 2, 8), (1, 6, 2, 8), (1, 6, 2, 5), (1, 2, 3, 6)), {}, "bias \\(1, 2, 3, 6\\) does not broadcast"),
    (((1, 4, 2, 8), (1, 6, 2, 8), (1, 6, 2, 5)), {"causal_mask": "Upper"}, "expected None, 'TopLeft' or 'BottomRight'"),
])
def test_attention_errors(shapes, attrs, message):
    with pytest.raises(DiagnosticError, match=message):
        infer("nn.attention", *[tensor(s) for s in shapes], **attrs)


def attention_reference(q, k, v, bias=None, scale=None, causal_mask=None):
    scores = np.einsum("bind,bjnd->bnij", q.astype("float64"), k.astype("float64"))
    scores *= scale if scale is not None else 1 / np.sqrt(q.shape[-1])
    if bias is not None:
        scores += bias
    if causal_mask is not None:
        seq, seq_kv = q.shape[1], k.shape[1]
        offset = 0 if causal_mask == "TopLeft" else abs(seq - seq_kv)
        keep = np.arange(seq_kv)[None, :] <= np.arange(seq)[:, None] + offset
        scores = np.where(keep, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("bnij,bjnd->bind", weights, v).astype(q.dtype)


@pytest.mark.parametrize("seq, seq_kv", [(4, 6), (6, 4)])
@pytest.mark.parametrize("attrs", [{}, {"scale": 0.3}, {"causal_mask": "TopLeft"}, {"causal_mask": "BottomRight"}])
def test_attention(seq, seq_kv, attrs):
    q, k, v = normal(2, seq, 2, 8), normal(2, seq_kv, 2, 8), normal(2, seq_kv, 2, 5)
    np.testing.assert_allclose(run_op("nn.attention", q, k, v, **attrs), attention_reference(q, k, v, **attrs),
                               **TOLERANCE)


@pytest.mark.parametrize("op", ["nn.attention", "nn.attention_bias"])
@pytest.mark.parametrize("bias_shape, attrs", [((2, 2, 4, 6), {"causal_mask": "BottomRight", "scale": 0.5}),
                                               ((1, 2, 4, 6), {}), ((2, 1, 4, 6), {"causal_mask": "TopLeft"})])
def test_attention_with_bias(op, bias_shape, attrs):
    q, k, v, bias = normal(2, 4, 2, 8), normal(2, 6, 2, 8), normal(2, 6, 2, 5), normal(*bias_shape)
    np.testing.assert_allclose(run_op(op, q, k, v, bias, **attrs), attention_reference(q, k, v, bias, **attrs),
                               **TOLERANCE)


def test_scale_given_as_a_tir_float():
    q, k, v = normal(1, 3, 1, 4), normal(1, 3, 1, 4), normal(1, 3, 1, 2)
    got = run_op("nn.attention", q, k, v, scale=tir.FloatImm("float32", 0.25))
    np.testing.assert_allclose(got, attention_reference(q, k, v, scale=0.25), **TOLERANCE)
