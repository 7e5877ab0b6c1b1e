"""Legalized reductions, softmax, norms and matrix products against numpy."""

import numpy as np
import pytest

from numeric import run_op

RNG = np.random.default_rng(1)
X = RNG.standard_normal((3, 4, 5)).astype("float32")

REDUCTIONS = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod, "mean": np.mean,
              "variance": np.var, "std": np.std}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis, keepdims", [(None, False), ((1,), True), ((0, 2), False), (-1, False)])
def test_reductions(name, axis, keepdims):
    expected = REDUCTIONS[name](X, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(run_op(name, X, axis=axis, keepdims=keepdims), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name, reference", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("axis, keepdims", [(0, False), (-1, True), (1, False)])
def test_arg_extremes_pick_the_first_index(name, reference, axis, keepdims):
    ties = np.array([[1, 3, 3, 0], [2, 2, 0, 0], [5, 1, 5, 1]], "float32")
    for data in (X, ties):
        if axis >= data.ndim:
            continue
        expected = reference(data, axis=axis, keepdims=keepdims)
        np.testing.assert_array_equal(run_op(name, data, axis=axis, keepdims=keepdims), expected)


def test_softmax_is_stable_for_large_values():
    x = np.array([[1000.0, 1001.0, 1002.0], [-5.0, 0.0, 5.0]], "float32")
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(run_op("nn.softmax", x, axis=-1), e / e.sum(-1, keepdims=True), rtol=1e-6)


def test_log_softmax_other_axis():
    expected = X - X.max(1, keepdims=True)
    expected = expected - np.log(np.exp(expected).sum(1, keepdims=True))
    np.testing.assert_allclose(run_op("nn.log_softmax", X, axis=1), expected, rtol=1e-4, atol=1e-5)


def test_layer_norm_and_rms_norm():
    gamma, beta = RNG.standard_normal((5,)).astype("float32"), RNG.standard_normal((5,)).astype("float32")
    mean, var = X.mean(-1, keepdims=True), X.var(-1, keepdims=True)
    expected = (X - mean) / np.sqrt(var + 1e-5) * gamma + beta
    got = run_op("nn.layer_norm", X, gamma, beta, axes=(-1,), epsilon=1e-5)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    rms = X / np.sqrt((X * X).mean(-1, keepdims=True) + 1e-6) * gamma
    np.testing.assert_allclose(run_op("nn.rms_norm", X, gamma, axes=(-1,), epsilon=1e-6), rms, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 3, 4), (4, 5)),
                                    ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4,))])
def test_matmul(shapes):
    a = RNG.standard_normal(shapes[0]).astype("float32")
    b = RNG.standard_normal(shapes[1]).astype("float32")
    np.testing.assert_allclose(run_op("matmul", a, b), a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_out_dtype_accumulates_wide():
    a = RNG.integers(-100, 100, (3, 8)).astype("int8")
    b = RNG.integers(-100, 100, (8, 2)).astype("int8")
    np.testing.assert_array_equal(run_op("matmul", a, b, out_dtype="int32"), a.astype("int32") @ b.astype("int32"))


def test_linear_with_and_without_bias():
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    w, bias = RNG.standard_normal((5, 4)).astype("float32"), RNG.standard_normal((5,)).astype("float32")
    np.testing.assert_allclose(run_op("linear", x, w, bias), x @ w.T + bias, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run_op("linear", x, w), x @ w.T, rtol=1e-5, atol=1e-5)


def test_collapse_sum_to():
    from relax import ir
    from relax.ir import tir

    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    shape = ir.ShapeExpr((tir.IntImm("int64", 3), tir.IntImm("int64", 1)))
    np.testing.assert_allclose(run_op("collapse_sum_to", x, shape), x.sum(axis=(0, 2))[:, None], rtol=1e-5, atol=1e-5)
