"""narrow-division: FloorDiv/FloorMod become Div/Mod only where the dividend is
provably non-negative and the divisor a positive constant."""

import numpy as np
from hypothesis import given, settings, strategies as st

from relax.ir import tir
from relax.ir.structural import assert_structural_equal
from relax.tir import run
from relax.tir.narrow_division import NarrowDivision
from relax.tir.rewrite import collect

from tir_builders import buffer, i32, loops, prim_func


def _kernel(start, divisor, floor=True, buffers=None):
    """B[i - start] = (i // d) * 100 + i % d + A[i - start] over i in [start, start + 16)."""
    A, B = buffers or (buffer("A", (16,), "int32"), buffer("B", (16,), "int32"))
    div, mod = (tir.FloorDiv, tir.FloorMod) if floor else (tir.Div, tir.Mod)

    def body(i):
        value = tir.Add(tir.Mul(div(i, i32(divisor)), i32(100)), mod(i, i32(divisor)))
        return tir.BufferStore(B, tir.Add(value, tir.BufferLoad(A, (tir.Sub(i, i32(start)),))),
                               (tir.Sub(i, i32(start)),))

    variable = tir.Var("i")
    loop = tir.For(variable, i32(start), i32(16), "serial", body(variable))
    return prim_func([A, B], loop), variable, A, B


def test_non_negative_dividend_gets_truncating_division():
    before, _, A, B = _kernel(0, 4)
    expected, _, _, _ = _kernel(0, 4, floor=False, buffers=(A, B))
    assert_structural_equal(NarrowDivision().run(before), expected)


def test_possibly_negative_dividend_keeps_floor_division():
    before, _, _, _ = _kernel(-8, 4)
    after = NarrowDivision().run(before)
    assert len(collect(after.body, (tir.FloorDiv, tir.FloorMod))) == 2
    assert not collect(after.body, (tir.Div, tir.Mod))


def test_non_constant_or_negative_divisors_are_kept():
    n = tir.Var("n")
    for divisor in (n, i32(-4)):
        A = buffer("A", (8,), "int32")
        func = prim_func([A], loops([("i", 8)], lambda i: tir.BufferStore(A, tir.FloorDiv(i, divisor), (i,))), (n,))
        assert len(collect(NarrowDivision().run(func).body, tir.FloorDiv)) == 1


@given(start=st.integers(-20, 20), divisor=st.integers(1, 9), seed=st.integers(0, 99))
@settings(max_examples=40, deadline=None)
def test_results_are_unchanged(start, divisor, seed):
    func, _, _, _ = _kernel(start, divisor)
    after = NarrowDivision().run(func)
    a = np.random.default_rng(seed).integers(-50, 50, 16).astype(np.int32)
    b1, b2 = np.zeros(16, np.int32), np.zeros(16, np.int32)
    run(func, a, b1)
    run(after, a, b2)
    np.testing.assert_array_equal(b1, b2)
