"""Expensive calls weigh in the parallel threshold (schedule/parallel.py: iteration_weight).

A GELU nest (erf per element) over 128 x 1024 elements runs on all cores, an add over
as many stays serial; parallel results equal -O0's (serial, plain nests) and numpy's
on odd sizes and a symbolic one. Tolerance: 2e-6 absolute (erf's approximation, as
test_fast_erf), the -O0 comparison in _run_both.
"""

import math

import numpy as np
import pytest

from relax.ir import tir
from relax.tir.rewrite import collect
from relax.tir.schedule import default_cpu_schedule
from relax.tir.schedule.parallel import CALL_WEIGHT, iteration_weight

from dataflow_kernels import lowered_kernels
from test_inline_output_reuse import _run_both

_erf = np.vectorize(math.erf)
_GELU = "out = R.multiply(a, R.add(R.erf(a), R.const(1.0, 'float32')))"


def _kinds(funcs):
    (func,) = funcs.values()
    return [loop.kind for loop in collect(default_cpu_schedule(func).body, tir.For)]


def test_erf_nest_is_parallel_and_add_of_the_same_size_is_not():
    params = 'a: R.Tensor((128, 1024), "float32"), b: R.Tensor((128, 1024), "float32")'
    assert "parallel" in _kinds(lowered_kernels(params, _GELU, 2))
    assert "parallel" not in _kinds(lowered_kernels(params, "out = R.add(a, b)", 2))


def test_weight_counts_each_expensive_call():
    a = tir.Var("a", "float32")
    two = tir.Evaluate(tir.Add(tir.Call("float32", "tir.exp", (a,)), tir.Call("float32", "tir.erf", (a,))))
    assert iteration_weight(two) == 1 + 2 * CALL_WEIGHT
    assert iteration_weight(tir.Evaluate(tir.Add(a, a))) == 1


@pytest.mark.parametrize("rows", [1, 7, 13, 1023])
def test_parallel_gelu_matches_numpy(rows, schedule_target):
    funcs = lowered_kernels(f'a: R.Tensor(({rows}, 1024), "float32")', _GELU, 2)
    (inputs, outputs), = _run_both(funcs, target=schedule_target).values()
    _check(inputs, outputs)


def _check(inputs, outputs):
    a = inputs[0].astype(np.float64)
    expected = a * (_erf(a) + inputs[1][()])  # the constant 1.0 is a 0-d buffer, random here
    assert np.all(np.abs(outputs[-1] - expected) <= 2e-6 * (1 + np.abs(expected)))


def test_symbolic_rows_match_numpy(schedule_target):
    funcs = lowered_kernels('a: R.Tensor(("n", 1024), "float32")', _GELU, 2)
    for n in (1, 13, 300):
        (inputs, outputs), = _run_both(funcs, {"n": n}, target=schedule_target).values()
        _check(inputs, outputs)
