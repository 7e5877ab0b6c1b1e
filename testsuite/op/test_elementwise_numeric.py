"""Legalized elementwise operators against numpy, several shapes and dtypes."""

import math

import numpy as np
import pytest

from numeric import run_op

RNG = np.random.default_rng(0)


def rand(shape, dtype="float32", low=-3, high=3):
    if np.dtype(dtype).kind == "f":
        return RNG.uniform(low, high, shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    return RNG.integers(low, high + 1, shape).astype(dtype)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 3)), ((), (2,))])
def test_binary_float(name, shapes):
    a, b = rand(shapes[0]), rand(shapes[1])
    np.testing.assert_array_equal(run_op(name, a, b), BINARY[name](a, b))


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8"])
def test_integer_division_semantics(dtype):
    a = np.array([7, -7, 7, -7, 0, 5], dtype)
    b = np.array([2, 2, -2, -2, 3, 5], dtype)
    np.testing.assert_array_equal(run_op("floor_divide", a, b), np.floor_divide(a, b))
    np.testing.assert_array_equal(run_op("floor_mod", a, b), np.mod(a, b))
    np.testing.assert_array_equal(run_op("divide", a, b), np.trunc(a / b).astype(dtype))  # truncating, as C
    np.testing.assert_array_equal(run_op("mod", a, b), np.fmod(a, b))


def test_float_floor_divide_and_power():
    a, b = rand((5,), low=0.5, high=4), rand((5,), low=0.5, high=3)
    np.testing.assert_allclose(run_op("floor_divide", a, b), np.floor(a / b), rtol=1e-6)
    np.testing.assert_allclose(run_op("floor_mod", a, b), a - np.floor(a / b) * b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run_op("power", a, b), np.power(a, b), rtol=1e-5)


def test_logical_and_bitwise():
    p, q = rand((6,), "bool"), rand((6,), "bool")
    np.testing.assert_array_equal(run_op("logical_and", p, q), p & q)
    np.testing.assert_array_equal(run_op("logical_or", p, q), p | q)
    np.testing.assert_array_equal(run_op("logical_xor", p, q), p ^ q)
    np.testing.assert_array_equal(run_op("logical_not", p), ~p)
    a, b = rand((6,), "int32", 0, 100), rand((6,), "int32", 0, 4)
    np.testing.assert_array_equal(run_op("bitwise_and", a, b), a & b)
    np.testing.assert_array_equal(run_op("bitwise_xor", a, b), a ^ b)
    np.testing.assert_array_equal(run_op("left_shift", a, b), a << b)
    np.testing.assert_array_equal(run_op("right_shift", a, b), a >> b)
    np.testing.assert_array_equal(run_op("bitwise_not", a), ~a)


def _erf(x):
    return np.vectorize(math.erf)(x).astype(x.dtype)


UNARY = {
    "abs": np.abs, "negative": np.negative, "exp": np.exp, "sqrt": None, "square": np.square,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "erf": _erf,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "floor": np.floor, "ceil": np.ceil, "round": np.round,
    "trunc": np.trunc, "sign": np.sign,
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary(name, dtype):
    x = rand((3, 4), dtype)
    if name == "sqrt":
        x = np.abs(x)
        expected = np.sqrt(x)
    else:
        expected = UNARY[name](x)
    np.testing.assert_allclose(run_op(name, x), expected, rtol=1e-5, atol=1e-6)


def test_log_and_rsqrt():
    x = rand((7,), low=0.1, high=5)
    np.testing.assert_allclose(run_op("log", x), np.log(x), rtol=1e-6)
    np.testing.assert_allclose(run_op("rsqrt", x), 1 / np.sqrt(x), rtol=1e-5)


def test_predicates():
    x = np.array([0.0, np.inf, -np.inf, np.nan, 2.5], "float32")
    np.testing.assert_array_equal(run_op("isnan", x), np.isnan(x))
    np.testing.assert_array_equal(run_op("isinf", x), np.isinf(x))
    np.testing.assert_array_equal(run_op("isfinite", x), np.isfinite(x))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_unary(dtype):
    x = rand((5,), dtype, -9, 9)
    np.testing.assert_array_equal(run_op("abs", x), np.abs(x))
    np.testing.assert_array_equal(run_op("sign", x), np.sign(x))
    np.testing.assert_array_equal(run_op("round", x), x)


def test_clip():
    x = rand((8,))
    np.testing.assert_allclose(run_op("clip", x, min=-1.0, max=0.5), np.clip(x, -1.0, 0.5))


def _gelu(x):
    return (0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))).astype(x.dtype)


ACTIVATIONS = {
    "relu": (lambda x: np.maximum(x, 0), {}),
    "relu6": (lambda x: np.clip(x, 0, 6), {}),
    "leakyrelu": (lambda x: np.where(x > 0, x, x * 0.2), {"alpha": 0.2}),
    "gelu": (_gelu, {}),
    "gelu_tanh": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), {}),
    "silu": (lambda x: x / (1 + np.exp(-x)), {}),
    "softplus": (lambda x: np.log1p(np.exp(x)), {}),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations(name):
    x = rand((2, 5), low=-8, high=8)
    reference, attrs = ACTIVATIONS[name]
    np.testing.assert_allclose(run_op(f"nn.{name}", x, **attrs), reference(x), rtol=1e-5, atol=1e-6)
