"""The vector-math rule (schedule/vector_math_rows.py): exp/erf nests as 16-lane vectors.

Kernels (-O2 fusion) are built unscheduled (-O0) and scheduled and compared with each
other and numpy on innermost extents 1, 7, 13, 33, 1023 (no vector, vectors with and
without leftovers) and symbolic rows. Tolerance: exp within 1e-6 relative (libmvec,
4 ulp), erf 2e-6 absolute (fast_math.py), the -O0 comparison rtol/atol 1e-4.
"""

import math

import numpy as np
import pytest

from relax.ir import tir
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect
from relax.tir.schedule import vector_math_rows
from relax.tir.schedule.cpu import CpuInfo
from relax.tir.schedule.inline import inline_elementwise
from relax.tir.schedule.nest import match_nest

from dataflow_kernels import lowered_kernels
from test_inline_output_reuse import _run_both

_erf = np.vectorize(math.erf)
WIDE = CpuInfo.for_level("x86-64-v4")


def _only(funcs, sizes=None, target=None):
    (inputs, outputs), = _run_both(funcs, sizes, target=target).values()
    return inputs, outputs


@pytest.mark.parametrize("shape", [(1, 1), (7, 7), (13, 13), (3, 33), (5, 1023), (2, 3, 64)])
def test_exp_of_difference_matches_numpy(shape, schedule_target):
    row = shape[:-1] + (1,)
    funcs = lowered_kernels(f'a: R.Tensor({shape}, "float32"), b: R.Tensor({row}, "float32")',
                            "out = R.exp(R.subtract(a, b))", 2)
    inputs, outputs = _only(funcs, target=schedule_target)
    expected = np.exp(inputs[0].astype(np.float64) - inputs[1])
    np.testing.assert_allclose(outputs[-1], expected, rtol=1e-6)


@pytest.mark.parametrize("n", [1, 7, 13, 33, 1023])
def test_erf_with_bias_matches_numpy(n, schedule_target):
    funcs = lowered_kernels(f'a: R.Tensor((3, {n}), "float32"), b: R.Tensor(({n},), "float32")',
                            "out = R.erf(R.add(a, b))", 2)
    inputs, outputs = _only(funcs, target=schedule_target)
    np.testing.assert_allclose(outputs[-1], _erf(inputs[0].astype(np.float64) + inputs[1]), rtol=0, atol=2e-6)


def test_symbolic_rows_match_numpy(schedule_target):
    funcs = lowered_kernels('a: R.Tensor(("n", 35), "float32")', "out = R.exp(a)", 2)
    for n in (1, 7, 130):
        inputs, outputs = _only(funcs, {"n": n}, target=schedule_target)
        np.testing.assert_allclose(outputs[-1], np.exp(inputs[0].astype(np.float64)), rtol=1e-6)


def test_softmax_rows_match_numpy(schedule_target):
    inputs, outputs = _only(lowered_kernels('x: R.Tensor((4, 13, 129), "float32")', "out = R.nn.softmax(x, axis=-1)", 2), target=schedule_target)
    x = inputs[0].astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(outputs[-1], e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def _nest(params, body):
    (func,) = lowered_kernels(params, body, 2).values()
    (stmt,) = top_level(inline_elementwise(func).body)[0]  # as the schedule sees it
    return match_nest(stmt)


def test_rule_writes_16_lane_calls_and_scalar_leftovers():
    nest = _nest('a: R.Tensor((4, 37), "float32")', "out = R.exp(a)")
    assert vector_math_rows.matches(nest, WIDE)
    stmt = vector_math_rows.apply(nest, WIDE)
    calls = collect(stmt, tir.Call)
    assert sorted(c.dtype for c in calls) == ["float32", "float32x16"]
    loops = {loop.loop_var.name.rsplit("_", 1)[-1]: loop.extent.value for loop in collect(stmt, tir.For)}
    assert loops["vector"] == 2 and loops["rest"] == 5


@pytest.mark.parametrize("params,body,cpu", [
    ('a: R.Tensor((4, 64), "float32")', "out = R.exp(a)", CpuInfo.for_level("x86-64-v3")),  # 256-bit registers: LLVM's choice stands
    ('a: R.Tensor((4, 64), "float32"), b: R.Tensor((4, 64), "float32")', "out = R.add(a, b)", WIDE),  # no exp/erf
    ('a: R.Tensor((64, 4), "float32")', "out = R.exp(R.permute_dims(a))", WIDE),  # strided read
    ('a: R.Tensor((4, 64), "float64")', "out = R.exp(a)", WIDE),  # float64
    ('a: R.Tensor((64, 15), "float32")', "out = R.exp(a)", WIDE),  # under one vector per row
])
def test_rule_leaves_other_nests(params, body, cpu):
    nest = _nest(params, body)
    assert nest is not None and not vector_math_rows.matches(nest, cpu)


_READS_ITS_OUTPUT = """
@I.ir_module
class Module:
    @T.prim_func
    def kernel(a: T.Buffer((4, 64), "float32")):
        for i, k in T.grid(4, 64):
            with T.block("e"):
                vi, vk = T.axis.remap("SS", [i, k])
                a[vi, vk] = T.exp(a[vi, vk] - a[vi, 0])
"""


def test_nest_reading_another_element_of_its_output_stays_scalar(schedule_target):
    from relax.script import parse

    (func,) = parse(_READS_ITS_OUTPUT).prim_funcs().values()
    (stmt,) = top_level(func.body)[0]
    assert not vector_math_rows.matches(match_nest(stmt), WIDE)
    (inputs, outputs), = _run_both({"kernel": func}, target=schedule_target).values()
    expected = inputs[0].astype(np.float64).copy()
    for i in range(4):
        for k in range(64):
            expected[i, k] = np.exp(expected[i, k] - expected[i, 0])
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-5)
