"""Casts between every pair of dtypes, against numpy's astype (where C defines the result)."""

import numpy as np
import pytest
from codegen_tir import elementwise

from relax.codegen import build_host_library

from cpu_targets import CPU_TARGETS
from relax.ir import tir

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
N = 21


def _source_values(dtype):
    if dtype == "bool":
        return np.arange(N) % 3 == 0
    if dtype.startswith("float"):
        values = np.linspace(-3.75, 120.25, N).astype(dtype)
        values[3] = 0.0
        return values
    info = np.iinfo(dtype)
    return np.linspace(max(info.min, -100), min(info.max, 120), N).astype(dtype)


def _defined(source, target, values):
    """The elements whose cast C defines: floats converted to ints must fit the int's range."""
    if not source.startswith("float") or target == "bool" or target.startswith("float"):
        return np.ones(N, bool)
    info = np.iinfo(target)
    wide = values.astype(np.float64)
    return (wide > info.min - 1) & (wide < info.max + 1)


@pytest.fixture(scope="module", params=CPU_TARGETS)
def library(request):
    """Every cast, built for each CPU level the host runs (float16 without F16C goes through calls)."""
    return build_host_library({f"{s}_to_{t}": elementwise(N, [s], t, lambda x, t=t: tir.Cast(t, x))
                               for s in DTYPES for t in DTYPES}, request.param)


@pytest.mark.parametrize("source", DTYPES)
def test_cast_from(library, source):
    values = _source_values(source)
    for target in DTYPES:
        out = np.zeros(N, target)
        library.get_function(f"{source}_to_{target}")(values, out)
        if target == "bool":
            expected = values != 0
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                expected = values.astype(target)
        mask = _defined(source, target, values)
        np.testing.assert_array_equal(out[mask], expected[mask], err_msg=f"{source} -> {target}")


def test_negative_int_to_unsigned_wraps_and_float16_rounds():
    lib = build_host_library({
        "i2u": elementwise(3, ["int32"], "uint8", lambda x: tir.Cast("uint8", x)),
        "f2h": elementwise(3, ["float32"], "float16", lambda x: tir.Cast("float16", x)),
    })
    out = np.zeros(3, np.uint8)
    lib.get_function("i2u")(np.array([-1, 256, 300], np.int32), out)
    assert out.tolist() == [255, 0, 44]
    half = np.zeros(3, np.float16)
    source = np.array([1 / 3, 65504.0, 1e-8], np.float32)
    lib.get_function("f2h")(source, half)
    np.testing.assert_array_equal(half, source.astype(np.float16))
