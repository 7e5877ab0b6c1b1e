"""Every math intrinsic of the table, in float16/32/64 and on vectors, against numpy."""

import math

import numpy as np
import pytest
from codegen_tir import elementwise, i64, kernel, load, param, store

from relax.codegen import build_host_library

from cpu_targets import CPU_TARGETS
from relax.codegen.intrinsics import MATH_INTRINSICS
from relax.ir import tir

N = 29
FLOATS = ["float16", "float32", "float64"]
TOLERANCE = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-13}

_erf = np.vectorize(math.erf)

# name -> (numpy reference, input range); two-argument functions take two inputs.
FLOAT_FUNCTIONS = {
    "exp": (np.exp, (-5, 5)), "exp2": (np.exp2, (-5, 5)), "exp10": (lambda x: 10.0 ** x, (-3, 3)),
    "expm1": (np.expm1, (-2, 2)), "log": (np.log, (0.1, 9)), "log2": (np.log2, (0.1, 9)),
    "log10": (np.log10, (0.1, 9)), "log1p": (np.log1p, (-0.5, 9)), "sqrt": (np.sqrt, (0, 9)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 9)), "cbrt": (np.cbrt, (-8, 8)),
    "sin": (np.sin, (-4, 4)), "cos": (np.cos, (-4, 4)), "tan": (np.tan, (-1.2, 1.2)),
    "asin": (np.arcsin, (-1, 1)), "acos": (np.arccos, (-1, 1)), "atan": (np.arctan, (-5, 5)),
    "sinh": (np.sinh, (-3, 3)), "cosh": (np.cosh, (-3, 3)), "tanh": (np.tanh, (-4, 4)),
    "asinh": (np.arcsinh, (-5, 5)), "acosh": (np.arccosh, (1, 5)), "atanh": (np.arctanh, (-0.9, 0.9)),
    "erf": (_erf, (-3, 3)), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-6, 6)),
    "floor": (np.floor, (-5, 5)), "ceil": (np.ceil, (-5, 5)), "trunc": (np.trunc, (-5, 5)),
    "round": (np.round, (-5, 5)), "nearbyint": (np.rint, (-5, 5)), "fabs": (np.abs, (-5, 5)),
    "abs": (np.abs, (-5, 5)),
    "pow": (np.power, (0.5, 3)), "atan2": (np.arctan2, (-3, 3)), "hypot": (np.hypot, (-3, 3)),
    "copysign": (np.copysign, (-3, 3)), "fmod": (np.fmod, (-9, 9)), "nextafter": (np.nextafter, (-3, 3)),
}
TERNARY = {"fma": (lambda a, b, c: a * b + c, (-3, 3))}


def _call(name, dtype, *args):
    return tir.Call(dtype, f"tir.{name}", tuple(args))


def _arity(name):
    return MATH_INTRINSICS[name][2]


def _inputs(name, dtype, count):
    low, high = (FLOAT_FUNCTIONS.get(name) or TERNARY[name])[1]
    rng = np.random.default_rng(len(name))
    values = [rng.uniform(low, high, N).astype(dtype) for _ in range(count)]
    if name in ("round", "nearbyint"):
        values[0][:8] = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5], dtype)  # ties to even
    if name == "fmod":
        values[1][np.abs(values[1]) < 0.5] = 2.0
    return values


def test_every_float_intrinsic_is_tested():
    table = {n for n, (how, _, _) in MATH_INTRINSICS.items() if how in ("llvm", "libm")}
    assert table <= set(FLOAT_FUNCTIONS) | set(TERNARY)


@pytest.fixture(scope="module", params=CPU_TARGETS)
def library(request):
    """Every intrinsic kernel, built for each CPU level the host runs (vector math differs by level)."""
    kernels = {}
    for dtype in FLOATS:
        for name in list(FLOAT_FUNCTIONS) + list(TERNARY):
            count = _arity(name)
            kernels[f"{name}_{dtype}"] = elementwise(N, [dtype] * count, dtype,
                                                     lambda *xs, n=name, d=dtype: _call(n, d, *xs))
        for name in ("isnan", "isinf", "isfinite"):
            kernels[f"{name}_{dtype}"] = elementwise(N, [dtype], "bool", lambda x, n=name: _call(n, "bool", x))
    return build_host_library(kernels, request.param)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(FLOAT_FUNCTIONS) + list(TERNARY))
def test_float_intrinsic(library, name, dtype):
    inputs = _inputs(name, dtype, _arity(name))
    out = np.zeros(N, dtype)
    library.get_function(f"{name}_{dtype}")(*inputs, out)
    reference = (FLOAT_FUNCTIONS.get(name) or TERNARY[name])[0]
    wide = [x.astype(np.float64) if dtype != "float64" else x for x in inputs]
    if name == "nextafter":  # a one-ulp step: compare in the input's own type
        wide = inputs
    expected = np.asarray(reference(*wide)).astype(dtype)
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_classification(library, dtype):
    x = np.array([0.0, -1.5, np.inf, -np.inf, np.nan] * 6, dtype)[:N]
    out = np.zeros(N, bool)
    for name, reference in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
        library.get_function(f"{name}_{dtype}")(x, out)
        np.testing.assert_array_equal(out, reference(x), err_msg=name)


def test_round_is_half_to_even():
    lib = build_host_library({"r": elementwise(6, ["float32"], "float32", lambda x: _call("round", "float32", x))})
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999], np.float32)
    out = np.zeros(6, np.float32)
    lib.get_function("r")(x, out)
    np.testing.assert_array_equal(out, [0, 2, 2, -0.0, -2, 2])


INT_BITS = {
    "shift_left": (lambda a, b: a << b), "shift_right": (lambda a, b: a >> b),
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
}


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint16", "uint64"])
def test_bit_intrinsics(dtype):
    kernels = {name: elementwise(N, [dtype, dtype], dtype, lambda a, b, n=name: _call(n, dtype, a, b))
               for name in INT_BITS}
    kernels["bitwise_not"] = elementwise(N, [dtype], dtype, lambda a: _call("bitwise_not", dtype, a))
    kernels["abs"] = elementwise(N, [dtype], dtype, lambda a: _call("abs", dtype, a))
    kernels["popcount"] = elementwise(N, [dtype], dtype, lambda a: _call("popcount", dtype, a))
    lib = build_host_library(kernels)
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    a = rng.integers(max(info.min, -100), min(info.max, 100), N, dtype=dtype, endpoint=True)
    b = rng.integers(0, 5, N, dtype=dtype)
    out = np.zeros(N, dtype)
    for name, reference in INT_BITS.items():
        lib.get_function(name)(a, b, out)
        np.testing.assert_array_equal(out, reference(a, b).astype(dtype), err_msg=name)
    lib.get_function("bitwise_not")(a, out)
    np.testing.assert_array_equal(out, ~a)
    lib.get_function("abs")(a, out)
    np.testing.assert_array_equal(out, np.abs(a).astype(dtype))
    lib.get_function("popcount")(a, out)
    expected = [bin(int(v) & ((1 << info.bits) - 1)).count("1") for v in a]
    np.testing.assert_array_equal(out, np.array(expected, dtype))


def test_if_then_else_evaluates_only_the_chosen_branch():
    """B[i] = if_then_else(i < 10, A[i], 0): A has 10 elements, B 40; A[10..] is never read."""
    a, b = param("A", "float32", (10,)), param("B", "float32", (40,))
    i = tir.Var("i", "int64")
    value = _call("if_then_else", "float32", tir.LT(i, i64(10)), load(a[1], i), tir.FloatImm("float32", 0.0))
    func = kernel([a, b], tir.For(i, i64(0), i64(40), "serial", store(b[1], i, value)))
    lib = build_host_library({"pad": func})
    x = np.arange(10, dtype=np.float32) + 1
    out = np.full(40, -1, np.float32)
    lib.get_function("pad")(x, out)
    np.testing.assert_array_equal(out, np.concatenate([x, np.zeros(30, np.float32)]))


def test_unknown_intrinsic_is_a_clear_error():
    from relax.diagnostics import UserError

    func = elementwise(4, ["float32"], "float32", lambda x: _call("frobnicate", "float32", x))
    with pytest.raises(UserError, match="unknown intrinsic 'tir.frobnicate'"):
        build_host_library({"bad": func})
