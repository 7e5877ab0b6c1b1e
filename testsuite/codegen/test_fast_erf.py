"""float32 erf defined in the module on x86-64 Linux (codegen/fast_math.py).

Kernels of 1, 7, 13, 1023 and a symbolic number of elements (vectorized loops with
and without a scalar remainder, and a scalar call) against math.erf in double
precision. Tolerance: 5e-7 absolute, the approximation's measured 4.0e-7 bound plus
the input's rounding; special values exactly (+-0, +-inf, NaN).
"""

import math

import numpy as np
import pytest
from codegen_tir import elementwise

from relax.codegen import build_host_library
from relax.codegen.fast_math import define_fast_erf
from relax.runtime.kernels.libmvec import uses_libmvec
from relax.ir import tir
from relax.target.llvm_info import host_triple

from dataflow_kernels import lowered_kernels

_erf = np.vectorize(math.erf)
ATOL = 5e-7


def _erf_kernel(n):
    return {"erf": elementwise(n, ["float32"], "float32", lambda x: tir.Call("float32", "tir.erf", (x,)))}


@pytest.mark.parametrize("n", [1, 7, 13, 1023, 1 << 16])
def test_erf_matches_double_precision(n, cpu_target):
    x = np.linspace(-6, 6, n, dtype=np.float32) if n > 1 else np.array([0.7], np.float32)
    out = np.zeros_like(x)
    build_host_library(_erf_kernel(n), cpu_target).get_function("erf")(x, out)
    np.testing.assert_allclose(out, _erf(x.astype(np.float64)), rtol=0, atol=ATOL)


def test_special_values(cpu_target):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 4.0, -4.0, 1e-30, -1e-30, 3.3148, 50.0, -50.0], np.float32)
    n = len(x)
    out = np.zeros_like(x)
    build_host_library(_erf_kernel(n), cpu_target).get_function("erf")(x, out)
    expected = np.array([math.erf(v) if not math.isnan(v) else math.nan for v in x.astype(np.float64)])
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=ATOL)
    assert np.signbit(out[1]) and not np.signbit(out[0])  # erf(-0) is -0
    assert np.isnan(out[4])


def test_symbolic_length(cpu_target):
    funcs = lowered_kernels('x: R.Tensor(("n",), "float32")', "out = R.erf(x)", 2)
    library = build_host_library(funcs, cpu_target)
    (name,) = funcs
    for n in (1, 7, 13, 1023):
        x = np.random.default_rng(n).uniform(-5, 5, n).astype(np.float32)
        out = np.zeros_like(x)
        library.get_function(name)(x, out)
        np.testing.assert_allclose(out, _erf(x.astype(np.float64)), rtol=0, atol=ATOL)


def test_float64_erf_keeps_libm():
    text = 'define float @k(double %".1") {\n  %".2" = call double @"erf"(double %".1")\n}\ndeclare double @"erf"(double %".1")\n'
    assert define_fast_erf(text) == text


def test_calls_are_renamed_and_the_declaration_replaced():
    text = ('define float @k(float %".1") {\n  %".2" = call float @"erff"(float %".1")\n  ret float %".2"\n}\n'
            'declare float @"erff"(float %".1")\n')
    defined = define_fast_erf(text)
    assert "@\"erff\"" not in defined and defined.count("define internal float @__relax_erff(") == 1
    assert "call float @__relax_erff(float" in defined
    assert defined.count("declare float @llvm.fmuladd.f32(") == 1
    again = 'declare float @"llvm.fmuladd.f32"(float %".1", float %".2", float %".3")\n' + text
    assert "declare float @llvm.fmuladd.f32(" not in define_fast_erf(again)  # declared once


@pytest.mark.skipif(not uses_libmvec(host_triple()), reason="the fast erf is defined on x86-64 Linux only")
def test_host_kernel_has_no_erff_call():
    from relax.codegen.build_kernels import emit_llvm_ir

    assert "erff" not in emit_llvm_ir(_erf_kernel(1023), "llvm")
