"""split-divided-loops: a loop whose variable is divided by one constant becomes two loops
with no division left, computing what it did; the loops it must leave alone."""

import numpy as np
import pytest

from tir_builders import buffer, prim_func

from relax.ir import tir
from relax.tir import run
from relax.tir.pipeline import passes
from relax.tir.rewrite import collect
from relax.tir.split_divided_loops import SplitDividedLoops


def c32(value):
    return tir.IntImm("int32", value)


def head_merge(extent=32, divisor=8, kind="serial", start=0, second_divisor=None):
    """B[i * 32 + j] = A[j // 8 * 64 + i * 8 + j % 8] for i < 8, j < 32: heads merged back into rows."""
    A, B = buffer("A", (256,)), buffer("B", (256,))
    i, j = tir.Var("i"), tir.Var("j")
    modulo = tir.FloorMod(j, c32(second_divisor or divisor))
    source = tir.Add(tir.Add(tir.Mul(tir.FloorDiv(j, c32(divisor)), c32(64)), tir.Mul(i, c32(8))), modulo)
    store = tir.BufferStore(B, tir.BufferLoad(A, (source,)), (tir.Add(tir.Mul(i, c32(32)), j),))
    inner = tir.For(j, c32(start), c32(extent), kind, store)
    return prim_func([A, B], tir.For(i, c32(0), c32(8), "serial", inner))


def outputs(func):
    a = np.arange(256, dtype=np.float32)
    b = np.full(256, -1.0, np.float32)
    run(func, a, b)
    return b


def test_a_merged_axis_becomes_two_loops_without_division():
    func = head_merge()
    after = SplitDividedLoops().run(func)
    assert not collect(after.body, tir.FloorDiv) and not collect(after.body, tir.FloorMod)
    assert [loop.extent.value for loop in collect(after.body, tir.For)] == [8, 4, 8]
    np.testing.assert_array_equal(outputs(after), outputs(func))


@pytest.mark.parametrize("case", [
    dict(extent=30),                 # 8 does not divide 30
    dict(start=2, extent=24),        # does not start at 0
    dict(kind="parallel"),           # a parallel loop keeps its trip count
    dict(second_divisor=4),          # divided by two constants
])
def test_loops_it_leaves_alone(case):
    func = head_merge(**case)
    assert SplitDividedLoops().run(func).body is func.body


def test_a_buffer_shaped_by_the_variable_keeps_the_loop():
    A = buffer("A", (64,))
    j = tir.Var("j")
    local_var = tir.Var("local", "handle")
    local = tir.Buffer("local", (tir.Add(tir.FloorDiv(j, c32(8)), c32(1)),), "float32", local_var)
    body = tir.Allocate(local_var, "float32", local.shape, tir.const(True, "bool"), tir.DeclBuffer(
        local, tir.BufferStore(A, tir.FloatImm("float32", 1.0), (j,))))
    func = prim_func([A], tir.For(j, c32(0), c32(64), "serial", body))
    assert SplitDividedLoops().run(func).body is func.body


def test_it_runs_after_simplify_and_before_narrow_division():
    names = [tir_pass.name for tir_pass in passes()]
    assert names.index("simplify") < names.index("split-divided-loops") < names.index("narrow-division")
