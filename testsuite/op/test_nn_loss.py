"""nll_loss, cross_entropy_with_logits and instance_norm: struct info (static and
symbolic shapes), located errors, and the legalized kernels against numpy
(float32, rtol 1e-5, atol 1e-5)."""

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")
RNG = np.random.default_rng(11)
Y = RNG.standard_normal((2, 3, 4)).astype("float32")
TOL = {"rtol": 1e-5, "atol": 1e-5}


def tensor(dims, dtype="float32"):
    dims = tuple(tir.IntImm("int64", d) if isinstance(d, int) else d for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def infer(op, *args, **attrs):
    return struct_info_of(ir.Call(ir.Op(f"relax.nn.{op}"), args, ir.FrozenDict(attrs)))


def test_shapes():
    none = infer("nll_loss", tensor((N, 3, 4)), tensor((N, 4), "int64"), reduction="none")
    assert none.shape_values[0] is N and none.shape_values[1].value == 4
    assert infer("nll_loss", tensor((N, 3)), tensor((N,), "int32"), tensor((3,))).shape_values == ()
    assert infer("cross_entropy_with_logits", tensor((N, 3)), tensor((N, 3))).shape_values == ()
    norm = infer("instance_norm", tensor((N, 3, 5)), tensor((3,)), tensor((3,)), channel_axis=1, axes=(2,))
    assert norm.shape_values[0] is N and norm.dtype == "float32"


@pytest.mark.parametrize("op, args, attrs, message", [
    ("nll_loss", ((2, 3), ((2,), "float32")), {}, "targets must have an integer data type, got float32"),
    ("nll_loss", ((2, 3), ((3,), "int64")), {}, r"targets \(3,\) must be predictions \(2, 3\) without the class"),
    ("nll_loss", ((2, 3), ((2,), "int64"), (4,)), {}, r"weights \(4,\) must have one entry per class, 3 in"),
    ("nll_loss", ((2, 3), ((2,), "int64"), ((3,), "float16")), {}, "weights must have the data type"),
    ("nll_loss", ((2, 3), ((2,), "int64")), {"reduction": "max"}, "bad value 'max' for 'reduction'"),
    ("cross_entropy_with_logits", ((2, 3), (2, 4)), {}, r"predictions \(2, 3\) and labels \(2, 4\) must have"),
    ("cross_entropy_with_logits", ((2, 3), ((2, 3), "float16")), {}, "labels must have the data type"),
    ("instance_norm", ((2, 3, 4), (4,), (3,)), {"channel_axis": 1, "axes": (2,)}, "gamma has"),
    ("instance_norm", (((2, 3, 4), "int32"), ((3,), "int32"), ((3,), "int32")), {"channel_axis": 1, "axes": (2,)},
     "data must be a floating-point tensor"),
    ("instance_norm", ((2, 3, 4), (3,), (3,)), {"channel_axis": 1, "axes": (1, 2)}, "must not include the channel"),
])
def test_errors(op, args, attrs, message):
    values = [tensor(*a) if isinstance(a[0], tuple) else tensor(a) for a in args]
    with pytest.raises(DiagnosticError, match=message):
        infer(op, *values, **attrs)


def nll_loss_reference(predictions, targets, weights=None, reduction="mean", ignore_index=-100):
    classes = predictions.shape[1] if predictions.ndim >= 2 else predictions.shape[0]
    weights = np.ones(classes, predictions.dtype) if weights is None else weights
    kept = targets != ignore_index
    safe = np.where(kept, targets, 0)
    chosen = np.take_along_axis(predictions, np.expand_dims(safe, 1), 1)[:, 0] if predictions.ndim >= 2 \
        else predictions[safe]
    used = np.where(kept, weights[safe], 0).astype(predictions.dtype)
    losses = -chosen * used
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.sum() / used.sum()


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction, weighted):
    targets = np.array([[0, 2, -100, 1], [1, 1, 0, 2]], "int64")
    weights = [np.array([0.5, 2, 1], "float32")] if weighted else []
    got = run_op("nn.nll_loss", Y, targets, *weights, reduction=reduction)
    np.testing.assert_allclose(got, nll_loss_reference(Y, targets, *weights, reduction=reduction), **TOL)


def test_nll_loss_unbatched_and_ignored():
    single = Y[0, :, 0]
    np.testing.assert_allclose(run_op("nn.nll_loss", single, np.array(2, "int64")), -single[2], **TOL)
    targets = np.array([1, 2], "int32")
    np.testing.assert_allclose(run_op("nn.nll_loss", Y[:, :, 0], targets, ignore_index=2),
                               nll_loss_reference(Y[:, :, 0], targets, ignore_index=2), **TOL)


def test_cross_entropy_with_logits():
    labels = RNG.standard_normal(Y.shape).astype("float32")
    np.testing.assert_allclose(run_op("nn.cross_entropy_with_logits", Y, labels), -(Y * labels).sum() / 2, **TOL)
    np.testing.assert_allclose(run_op("nn.cross_entropy_with_logits", Y[0, 0], labels[0, 0]),
                               -(Y[0, 0] * labels[0, 0]).sum(), **TOL)


def instance_norm_reference(data, gamma, beta, channel_axis, axes, epsilon=1e-5):
    mean = data.mean(axis=tuple(axes), keepdims=True)
    variance = data.var(axis=tuple(axes), keepdims=True)
    shape = [1] * data.ndim
    shape[channel_axis] = -1
    return (data - mean) / np.sqrt(variance + epsilon) * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("channel_axis, axes", [(1, (2,)), (-1, (1,)), (1, (0, 2))])
def test_instance_norm(channel_axis, axes):
    channels = Y.shape[channel_axis]
    gamma = RNG.standard_normal(channels).astype("float32")
    beta = RNG.standard_normal(channels).astype("float32")
    got = run_op("nn.instance_norm", Y, gamma, beta, channel_axis=channel_axis, axes=axes)
    np.testing.assert_allclose(got, instance_norm_reference(Y, gamma, beta, channel_axis, axes), **TOL)
    plain = run_op("nn.instance_norm", Y, gamma, beta, channel_axis=channel_axis, axes=axes, scale=False, center=False)
    ones, zeros = np.ones(channels, "float32"), np.zeros(channels, "float32")
    np.testing.assert_allclose(plain, instance_norm_reference(Y, ones, zeros, channel_axis, axes), **TOL)
