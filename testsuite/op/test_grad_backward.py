"""R.grad.max_pool2d_backward, avg_pool2d_backward, nll_loss_backward and take_backward:
struct info, located errors, and the legalized kernels (run in the TIR interpreter)
against numpy references written here as direct loops (float32, rtol 1e-5, atol 1e-6)."""

import itertools

import numpy as np
import pytest

from numeric import run_op
from relax import ir
from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

N = tir.Var("n", "int64")


def tensor(dims, dtype="float32"):
    dims = tuple(d if isinstance(d, tir.PrimExpr) else tir.IntImm("int64", d) for d in dims)
    return ir.Var("x", ir.TensorStructInfo(ir.ShapeExpr(dims), dtype))


def call(op, *args, **attrs):
    return ir.Call(ir.Op(f"relax.grad.{op}"), args, ir.FrozenDict(attrs))


def pool_backward_reference(grad, data, kind, pool, strides, padding, dilation=(1, 1), count_include_pad=False):
    out = np.zeros_like(data)
    batch, channels, height, width = data.shape
    for n, c, oh, ow in itertools.product(range(batch), range(channels), *map(range, grad.shape[2:])):
        window = [(oh * strides[0] - padding[0] + kh * dilation[0], ow * strides[1] - padding[1] + kw * dilation[1])
                  for kh in range(pool[0]) for kw in range(pool[1])]
        inside = [(h, w) for h, w in window if 0 <= h < height and 0 <= w < width]
        if kind == "max":
            values = [data[n, c, h, w] for h, w in inside]
            h, w = inside[int(np.argmax(values))]  # the first maximum, row-major
            out[n, c, h, w] += grad[n, c, oh, ow]
        else:
            count = pool[0] * pool[1] if count_include_pad else len(inside)
            for h, w in inside:
                out[n, c, h, w] += grad[n, c, oh, ow] / count
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_backward_matches_numpy(kind):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1, 2, 5, 5)).astype("float32")
    data[0, 0, :2, :2] = 1.0  # a tie: the first maximum takes the gradient
    grad = rng.standard_normal((1, 2, 3, 3)).astype("float32")
    attrs = dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    got = run_op(f"grad.{kind}_pool2d_backward", grad, data, **attrs)
    expected = pool_backward_reference(grad, data, kind, (3, 3), (2, 2), (1, 1))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_avg_pool_backward_counts_padding_and_max_takes_dilation():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((1, 1, 4, 4)).astype("float32")
    grad = rng.standard_normal((1, 1, 2, 2)).astype("float32")
    got = run_op("grad.avg_pool2d_backward", grad, data, pool_size=(3, 3), strides=(2, 2),
                 padding=(1, 1, 1, 1), count_include_pad=True)
    expected = pool_backward_reference(grad, data, "avg", (3, 3), (2, 2), (1, 1), count_include_pad=True)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    grad = rng.standard_normal((1, 1, 2, 2)).astype("float32")
    got = run_op("grad.max_pool2d_backward", grad, data, pool_size=(2, 2), dilation=(2, 2))
    np.testing.assert_allclose(got, pool_backward_reference(grad, data, "max", (2, 2), (1, 1), (0, 0), (2, 2)),
                               rtol=1e-5, atol=1e-6)


def test_max_pool_backward_in_nhwc():
    rng = np.random.default_rng(2)
    data = rng.standard_normal((1, 4, 4, 2)).astype("float32")
    grad = rng.standard_normal((1, 2, 2, 2)).astype("float32")
    got = run_op("grad.max_pool2d_backward", grad, data, pool_size=(2, 2), strides=(2, 2), layout="NHWC")
    expected = pool_backward_reference(grad.transpose(0, 3, 1, 2), data.transpose(0, 3, 1, 2), "max",
                                       (2, 2), (2, 2), (0, 0))
    np.testing.assert_allclose(got, expected.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def nll_loss_backward_reference(grad, predictions, targets, weights=None, reduction="mean", ignore_index=-100):
    weights = np.ones(predictions.shape[1], "float32") if weights is None else weights
    if ignore_index >= 0:  # as TVM: a negative ignore_index ignores nothing
        weights = np.where(np.arange(len(weights)) == ignore_index, 0, weights).astype("float32")
    taken = weights[targets]
    scale = grad if reduction == "none" else np.broadcast_to(grad, targets.shape)
    if reduction == "mean":
        scale = scale / taken.sum()
    out = np.zeros_like(predictions)
    for n in range(predictions.shape[0]):
        out[n, targets[n]] = -taken[n] * scale[n]
    return out


@pytest.mark.parametrize("reduction,ignore_index", [("mean", 2), ("sum", -100), ("none", 1)])
def test_nll_loss_backward_matches_numpy(reduction, ignore_index):
    rng = np.random.default_rng(3)
    predictions = rng.standard_normal((4, 3)).astype("float32")
    targets = np.array([0, 2, 1, 2], "int64")
    weights = rng.uniform(0.5, 2, 3).astype("float32")
    grad = rng.standard_normal((4,) if reduction == "none" else ()).astype("float32")
    got = run_op("grad.nll_loss_backward", grad, predictions, targets, weights, reduction=reduction,
                 ignore_index=ignore_index)
    expected = nll_loss_backward_reference(grad, predictions, targets, weights, reduction, ignore_index)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_nll_loss_backward_without_weights_and_batch():
    predictions = np.zeros(4, "float32")
    got = run_op("grad.nll_loss_backward", np.array(3.0, "float32"), predictions, np.array(1, "int32"),
                 reduction="sum")
    np.testing.assert_allclose(got, [0, -3, 0, 0])


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_take_backward_matches_numpy(axis):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4)).astype("float32")
    indices = np.array([2, 0, 2], "int32")
    out_shape = (3,) if axis is None else x.shape[:axis] + (3,) + x.shape[axis + 1:]
    grad = rng.standard_normal(out_shape).astype("float32")
    got = run_op("grad.take_backward", grad, x, indices, axis=axis)
    expected = np.zeros_like(x)
    if axis is None:
        np.add.at(expected.reshape(-1), indices, grad)
    else:
        np.add.at(np.moveaxis(expected, axis, 0), indices, np.moveaxis(grad, axis, 0))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_struct_info_is_the_inputs():
    data = tensor((N, 2, 8, 8))
    info = struct_info_of(call("max_pool2d_backward", tensor((N, 2, 4, 4)), data, pool_size=(2, 2), strides=(2, 2)))
    assert info.shape is data.struct_info.shape
    x = tensor((N, 5))
    assert struct_info_of(call("take_backward", tensor((N, 3)), x, tensor((3,), "int64"), axis=1)).ndim == 2
    predictions = tensor((N, 5))
    nll = struct_info_of(call("nll_loss_backward", tensor(()), predictions, tensor((N,), "int64")))
    assert nll.shape is predictions.struct_info.shape


@pytest.mark.parametrize("make,message", [
    (lambda: call("max_pool2d_backward", tensor((1, 2, 3, 3)), tensor((1, 2, 8, 8)), pool_size=(2, 2), strides=(2, 2)),
     r"output_grad has shape .* but the pool's output has shape"),
    (lambda: call("take_backward", tensor((3,)), tensor((4,)), tensor((3,), "float32")), "integer dtype"),
    (lambda: call("take_backward", tensor((2, 3)), tensor((2, 4)), tensor((3,), "int64"), axis=2), "out of range"),
    (lambda: call("nll_loss_backward", tensor(()), tensor((2, 3)), tensor((2,), "int64"), reduction="avg"),
     "expected one of mean, sum, none"),
])
def test_errors_are_located(make, message):
    with pytest.raises(DiagnosticError, match=message):
        struct_info_of(make())
