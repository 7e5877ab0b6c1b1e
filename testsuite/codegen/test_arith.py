"""Arithmetic, comparisons, logic and min/max for every dtype, against numpy."""

import zlib

import numpy as np
import pytest
from codegen_tir import elementwise

from relax.codegen import build_host_library

from cpu_targets import CPU_TARGETS
from relax.ir import tir

N = 37  # not a multiple of any vector width, so the loop epilogue runs too
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _trunc_mod(a, b):
    return (a - _trunc_div(a, b) * b).astype(a.dtype)


# op name -> (TIR node, numpy reference for ints, numpy reference for floats)
BINARY = {
    "add": (tir.Add, np.add, np.add),
    "sub": (tir.Sub, np.subtract, np.subtract),
    "mul": (tir.Mul, np.multiply, np.multiply),
    "div": (tir.Div, _trunc_div, np.divide),
    "mod": (tir.Mod, _trunc_mod, np.fmod),
    "floordiv": (tir.FloorDiv, np.floor_divide, lambda a, b: np.floor(a / b)),
    "floormod": (tir.FloorMod, np.mod, lambda a, b: a - np.floor(a / b) * b),
    "min": (tir.Min, np.minimum, np.minimum),
    "max": (tir.Max, np.maximum, np.maximum),
}
COMPARE = {"eq": (tir.EQ, np.equal), "ne": (tir.NE, np.not_equal), "lt": (tir.LT, np.less),
           "le": (tir.LE, np.less_equal), "gt": (tir.GT, np.greater), "ge": (tir.GE, np.greater_equal)}


def _inputs(dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype.startswith("float"):
        a = rng.uniform(-20, 20, N).astype(dtype)
        b = rng.uniform(-20, 20, N).astype(dtype)
        b[np.abs(b) < 0.5] = 1.5
        return a, b
    info = np.iinfo(dtype)
    low, high = max(info.min, -100), min(info.max, 100)
    a = rng.integers(low, high, N, dtype=dtype, endpoint=True)
    b = rng.integers(low, high, N, dtype=dtype, endpoint=True)
    b[b == 0] = 3
    return a, b


def _name(op, dtype):
    return f"{op}_{dtype}"


@pytest.fixture(scope="module", params=CPU_TARGETS)
def library(request):
    """Every operator kernel, built for each CPU level the host runs."""
    kernels = {}
    for dtype in INTS + FLOATS:
        for op, (node, _, _) in BINARY.items():
            kernels[_name(op, dtype)] = elementwise(N, [dtype, dtype], dtype, node)
        for op, (node, _) in COMPARE.items():
            kernels[_name(op, dtype)] = elementwise(N, [dtype, dtype], "bool", node)
    kernels["and"] = elementwise(N, ["bool", "bool"], "bool", tir.And)
    kernels["or"] = elementwise(N, ["bool", "bool"], "bool", tir.Or)
    kernels["not"] = elementwise(N, ["bool"], "bool", tir.Not)
    kernels["select"] = elementwise(N, ["bool", "float32", "float32"], "float32", tir.Select)
    return build_host_library(kernels, request.param)


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary(library, op, dtype):
    a, b = _inputs(dtype, zlib.crc32(f"{op}{dtype}".encode()))
    out = np.zeros(N, dtype)
    library.get_function(_name(op, dtype))(a, b, out)
    _, int_ref, float_ref = BINARY[op]
    if dtype.startswith("float"):
        expected = float_ref(a, b).astype(dtype)
        tolerance = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-12}[dtype]
        # floormod/mod of values near a multiple of b may differ by rounding of a / b.
        np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance * 20)
    else:
        with np.errstate(over="ignore"):
            expected = int_ref(a, b).astype(dtype)
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("op", list(COMPARE))
def test_compare(library, op, dtype):
    a, b = _inputs(dtype, 7)
    b[::3] = a[::3]  # some equal pairs
    out = np.zeros(N, bool)
    library.get_function(_name(op, dtype))(a, b, out)
    np.testing.assert_array_equal(out, COMPARE[op][1](a, b))


def test_logic_and_select(library):
    rng = np.random.default_rng(0)
    p, q = rng.integers(0, 2, N).astype(bool), rng.integers(0, 2, N).astype(bool)
    out = np.zeros(N, bool)
    library.get_function("and")(p, q, out)
    np.testing.assert_array_equal(out, p & q)
    library.get_function("or")(p, q, out)
    np.testing.assert_array_equal(out, p | q)
    library.get_function("not")(p, out)
    np.testing.assert_array_equal(out, ~p)
    x, y, z = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32), np.zeros(N, np.float32)
    library.get_function("select")(p, x, y, z)
    np.testing.assert_array_equal(z, np.where(p, x, y))


def test_signed_division_rounds_like_c_and_python():
    """-7 / 2 == -3 and -7 % 2 == -1 (C); -7 // 2 == -4 and -7 mod 2 == 1 (floor)."""
    a = np.array([-7, 7, -7, 7, 0, -1], np.int32)
    b = np.array([2, -2, -2, 2, 5, 3], np.int32)
    lib = build_host_library({op: elementwise(6, ["int32", "int32"], "int32", BINARY[op][0])
                              for op in ("div", "mod", "floordiv", "floormod")})
    results = {}
    for op in ("div", "mod", "floordiv", "floormod"):
        out = np.zeros(6, np.int32)
        lib.get_function(op)(a, b, out)
        results[op] = out.tolist()
    assert results["div"] == [-3, -3, 3, 3, 0, 0]
    assert results["mod"] == [-1, 1, -1, 1, 0, -1]
    assert results["floordiv"] == [-4, -4, 3, 3, 0, -1]
    assert results["floormod"] == [1, -1, -1, 1, 0, 2]


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint32"])
def test_integer_division_never_traps(dtype):
    """x / 0 and x % 0 give 0 (numpy's answer, with no SIGFPE); MIN / -1 gives MIN."""
    lib = build_host_library({op: elementwise(4, [dtype, dtype], dtype, BINARY[op][0])
                              for op in ("div", "mod", "floordiv", "floormod")})
    info = np.iinfo(dtype)
    a = np.array([7, info.min, 5, info.max], dtype)
    b = np.array([0, 0, 0, 0], dtype)
    if info.min < 0:
        b[1] = -1
    out = np.full(4, 99, dtype)
    for op in ("div", "mod", "floordiv", "floormod"):
        lib.get_function(op)(a, b, out)
        expected = [0, info.min if op in ("div", "floordiv") and info.min < 0 else 0, 0, 0]
        assert out.tolist() == expected, op
