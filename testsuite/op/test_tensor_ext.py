"""batch_flatten, pixel_shuffle, collapse_sum_like, bucketize, median and
multinomial_from_uniform: inference and kernels against numpy."""

import numpy as np
import pytest

from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

from numeric import call, dims_of, tensor, run_op

RNG = np.random.default_rng(3)


def test_batch_flatten_and_pixel_shuffle():
    x = np.arange(2 * 8 * 2 * 3, dtype="float32").reshape(2, 8, 2, 3)
    np.testing.assert_array_equal(run_op("nn.batch_flatten", x), x.reshape(2, -1))
    expected = x.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)  # torch's layout
    np.testing.assert_array_equal(run_op("nn.pixel_shuffle", x, upscale_factor=2), expected)
    n = tir.Var("n", "int64")
    assert dims_of(struct_info_of(call("nn.batch_flatten", tensor("x", (n, 2, 3))))) == [n, 6]
    with pytest.raises(DiagnosticError, match=r"6 channels do not divide by upscale_factor squared \(4\)"):
        struct_info_of(call("nn.pixel_shuffle", tensor("x", (1, 6, 2, 2)), upscale_factor=2))


def test_collapse_sum_like():
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    for goal in [(4,), (3, 1), (1, 3, 4), (2, 1, 4)]:
        got = run_op("collapse_sum_like", x, np.zeros(goal, "float32"))
        lead = x.ndim - len(goal)
        axes = tuple(range(lead)) + tuple(a + lead for a, g in enumerate(goal) if g == 1)
        expected = x.sum(axis=axes, keepdims=True).reshape(goal)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(DiagnosticError, match=r"cannot collapse \(2, 3\) to \(2,\)"):
        struct_info_of(call("collapse_sum_like", tensor("x", (2, 3)), tensor("t", (2,))))


def test_bucketize():
    bounds = np.array([1.0, 3.0, 5.0, 7.0], "float32")
    x = np.array([[0.0, 1.0, 2.0], [5.0, 7.0, 9.0]], "float32")
    for right in (False, True):
        got = run_op("bucketize", x, bounds, out_int32=right, right=right)
        np.testing.assert_array_equal(got, np.searchsorted(bounds, x, side="right" if right else "left"))
        assert got.dtype == (np.int32 if right else np.int64)
    with pytest.raises(DiagnosticError, match="boundaries must be a 1-D tensor, got rank 2"):
        struct_info_of(call("bucketize", tensor("x", (2,)), tensor("b", (2, 2)), out_int32=False, right=False))


def test_median():
    x = np.array([[3.0, 1.0, 2.0, 2.0], [5.0, -1.0, 4.0, 0.0], [7.0, 7.0, 1.0, 9.0]], "float32")
    values, indices = run_op("median", x, axis=(1,), keepdims=False)
    order = np.argsort(x, axis=1, kind="stable")[:, (x.shape[1] - 1) // 2]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, x[np.arange(3), order])
    values, indices = run_op("median", x, axis=0, keepdims=True)
    assert values.shape == (1, 4) and indices.shape == (1, 4)
    np.testing.assert_array_equal(values[0], np.sort(x, axis=0)[1])
    whole = run_op("median", x, axis=None, keepdims=False)
    assert whole.shape == () and whole == np.sort(x, axis=None)[(x.size - 1) // 2]
    info = struct_info_of(call("median", tensor("x", (2, 3)), axis=None, keepdims=True))
    assert dims_of(info) == [1, 1]


def test_multinomial_from_uniform():
    prob = np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]], "float32")
    uniform = np.array([[0.1], [0.25], [0.6], [0.999], [0.5]], "float32")
    rows = np.array([[0], [0], [0], [0], [1]], "int64")
    got = run_op("multinomial_from_uniform", prob, uniform, rows, dtype="int64")
    cumsum = np.cumsum(prob, axis=1)
    expected = [min(int(np.sum(cumsum[r, :] <= u)), 2) for r, u in zip(rows[:, 0], uniform[:, 0])]
    np.testing.assert_array_equal(got[:, 0], expected)
    assert got.shape == (5, 1)
