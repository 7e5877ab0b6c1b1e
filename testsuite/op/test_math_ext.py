"""Inverse and hyperbolic unary ops, atan2, log_add_exp, ewise_fma, outer, size,
R.nn.selu and R.nn.prelu: inference and legalized kernels against numpy."""

import numpy as np
import pytest

from relax.diagnostics import DiagnosticError
from relax.ir import tir
from relax.op.infer import struct_info_of

from numeric import call, dims_of, tensor, run_op

RNG = np.random.default_rng(7)


UNARY = [("asin", np.arcsin, 0.9), ("acos", np.arccos, 0.9), ("atan", np.arctan, 3.0), ("sinh", np.sinh, 3.0),
         ("cosh", np.cosh, 3.0), ("asinh", np.arcsinh, 3.0), ("atanh", np.arctanh, 0.9)]


def test_inverse_and_hyperbolic_functions():
    x = RNG.uniform(-1, 1, (2, 3)).astype("float32")
    for name, reference, scale in UNARY:
        np.testing.assert_allclose(run_op(name, x * scale), reference(x * scale), rtol=1e-5, atol=1e-6)
    y = (np.abs(x) + 1.5).astype("float32")
    np.testing.assert_allclose(run_op("acosh", y), np.arccosh(y), rtol=1e-5)


def test_unary_math_needs_float():
    with pytest.raises(DiagnosticError, match="floating-point tensor, got int32 in R.acosh"):
        struct_info_of(call("acosh", tensor("x", (2,), "int32")))


def test_binary_math_broadcasts():
    a = RNG.normal(size=(2, 3)).astype("float32")
    b = RNG.normal(size=(3,)).astype("float32")
    np.testing.assert_allclose(run_op("atan2", a, b), np.arctan2(a, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run_op("log_add_exp", a, b), np.logaddexp(a, b), rtol=1e-5)
    np.testing.assert_allclose(run_op("ewise_fma", a, a, a), a * a + a, rtol=1e-6)
    n = tir.Var("n", "int64")
    info = struct_info_of(call("atan2", tensor("a", (n, 3)), tensor("b", (1, 3))))
    assert dims_of(info) == [n, 3]


def test_binary_math_errors():
    with pytest.raises(DiagnosticError, match="floating-point tensors, got int32 in R.log_add_exp"):
        struct_info_of(call("log_add_exp", tensor("a", (2,), "int32"), tensor("b", (2,), "int32")))
    with pytest.raises(DiagnosticError, match=r"shapes \(2, 3\) and \(3,\) must be equal in R.ewise_fma"):
        struct_info_of(call("ewise_fma", tensor("a", (2, 3)), tensor("b", (3,)), tensor("c", (2, 3))))


def test_outer_and_size():
    a, b = np.arange(3, dtype="float32"), np.arange(1, 5, dtype="float32")
    np.testing.assert_array_equal(run_op("outer", a, b), np.outer(a, b))
    x = np.zeros((2, 3, 4), "float32")
    size = run_op("size", x)
    assert size.shape == () and size.dtype == np.int64 and int(size) == 24
    n = tir.Var("n", "int64")
    assert dims_of(struct_info_of(call("outer", tensor("a", (n,)), tensor("b", (4,))))) == [n, 4]
    with pytest.raises(DiagnosticError, match="argument 2 must be a 1-D tensor, got rank 2 in R.outer"):
        struct_info_of(call("outer", tensor("a", (3,)), tensor("b", (2, 2))))


def test_selu_and_prelu():
    x = RNG.normal(size=(2, 3, 2)).astype("float32")
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    expected = scale * np.where(x > 0, x, alpha * (np.exp(x) - 1))
    np.testing.assert_allclose(run_op("nn.selu", x), expected, rtol=1e-5, atol=1e-6)
    slopes = np.array([0.1, 0.2, 0.3], "float32")
    np.testing.assert_allclose(run_op("nn.prelu", x, slopes, axis=1),
                               np.where(x > 0, x, x * slopes[None, :, None]), rtol=1e-6)
    with pytest.raises(DiagnosticError, match=r"alpha of shape \(4,\) does not match axis 1"):
        struct_info_of(call("nn.prelu", tensor("x", (2, 3)), tensor("a", (4,)), axis=1))
