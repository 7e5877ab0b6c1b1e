"""Which loops LLVM may not unroll (relax/codegen/unroll_policy.py): the choice, the
metadata the LLVM IR carries, the smaller code, and results against numpy."""

import re

import numpy as np
import pytest
from codegen_tir import elementwise, flat, i64, kernel, load, loop, param, store
from dataflow_kernels import lowered_kernels

import relax.codegen.kernel_codegen as kernel_codegen
from relax.codegen import build_host_library
from relax.codegen.build_kernels import emit_llvm_ir
from relax.codegen.unroll_policy import ROLLED_ABOVE, SHUFFLE_NETWORK, rolled_loops
from relax.ir import tir
from relax.target import parse_target
from relax.tir.pipeline import lower_for_codegen
from relax.tir.rewrite import collect


def f32(value):
    return tir.FloatImm("float32", value)


def copy_nest(rows, cols, inner_kind="serial", outer_kind="serial"):
    """B[i, j] = A[i, j] * 2 over a rows x cols nest; returns (func, outer loop, inner loop)."""
    a, b = param("A", "float32", (rows, cols)), param("B", "float32", (rows, cols))
    fa, fb = flat(a[1], rows * cols), flat(b[1], rows * cols)
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    index = tir.Add(tir.Mul(i, i64(cols)), j)
    inner = loop(j, i64(cols), store(fb, index, tir.Mul(load(fa, index), f32(2.0))), inner_kind)
    outer = loop(i, i64(rows), inner, outer_kind)
    return kernel([a, b], outer), outer, inner


def vector_rows(rows, width=16):
    """B[i, 0:16] = A[i, 0:16] + 1 with explicit vectors, in a loop over rows inside a 4-trip loop."""
    a, b = param("A", "float32", (4 * rows * width,)), param("B", "float32", (4 * rows * width,))
    t, i = tir.Var("t", "int64"), tir.Var("i", "int64")
    base = tir.Mul(tir.Add(tir.Mul(t, i64(rows)), i), i64(width))
    ramp = tir.Ramp(base, i64(1), width)
    value = tir.Add(tir.BufferLoad(a[1], (ramp,)), tir.Broadcast(f32(1.0), width))
    inner = loop(i, i64(rows), tir.BufferStore(b[1], value, (ramp,)))
    outer = loop(t, i64(4), inner)
    return kernel([a, b], outer), outer, inner


def test_large_scalar_nests_are_rolled_small_ones_not():
    func, outer, inner = copy_nest(2, 300)
    assert rolled_loops(func.body) == {id(outer), id(inner)}
    func, outer, inner = copy_nest(64, 64)  # the inner loop alone is small
    assert rolled_loops(func.body) == {id(outer)}
    func, outer, inner = copy_nest(64, 3)  # 192 iterations in all
    assert rolled_loops(func.body) == set()
    func, outer, inner = copy_nest(300, 3)
    assert rolled_loops(func.body) == {id(outer)}
    assert ROLLED_ABOVE == 256


def test_symbolic_extents_are_rolled():
    n = tir.Var("n", "int64")
    a, b = param("A", "float32", (n,)), param("B", "float32", (n,))
    i = tir.Var("i", "int64")
    body = loop(i, n, store(b[1], i, load(a[1], i)))
    assert rolled_loops(kernel([a, b], body).body) == {id(body)}


def test_innermost_vector_loops_stay_llvms_choice_their_outer_loops_not():
    func, outer, inner = vector_rows(512)
    assert rolled_loops(func.body) == {id(outer)}


def test_a_loop_around_an_unrolled_tile_is_an_innermost_vector_loop():
    """A register tile's statement in an unrolled loop over its 4 slots, in a 300-step k loop:
    the k loop stays LLVM's choice, as the micro-kernel's k loop with the slots written out
    did; the loop around it, 4 x 300 x 4 copies, is rolled."""
    width, steps, slots = 16, 300, 4
    a, b = param("A", "float32", (4 * steps * slots * width,)), param("B", "float32", (4 * steps * slots * width,))
    t, k, s = tir.Var("t", "int64"), tir.Var("k", "int64"), tir.Var("s", "int64")
    base = tir.Mul(tir.Add(tir.Mul(tir.Add(tir.Mul(t, i64(steps)), k), i64(slots)), s), i64(width))
    ramp = tir.Ramp(base, i64(1), width)
    slot = loop(s, i64(slots), tir.BufferStore(b[1], tir.Add(tir.BufferLoad(a[1], (ramp,)), tir.Broadcast(f32(1.0), width)),
                                               (ramp,)), "unrolled")
    k_loop = loop(k, i64(steps), slot)
    outer = loop(t, i64(4), k_loop)
    assert rolled_loops(kernel([a, b], outer).body) == {id(outer)}


def test_loop_kinds_with_their_own_hints_are_left_alone():
    for kind in ("vectorized", "unrolled"):
        func, outer, inner = copy_nest(2, 300, inner_kind=kind)
        assert rolled_loops(func.body) == {id(outer)}
    func, outer, inner = copy_nest(2, 300, inner_kind="parallel", outer_kind="parallel")
    assert rolled_loops(func.body) == {id(outer), id(inner)}  # the inner one runs serially


def test_rolled_loops_carry_unroll_disable():
    func, _, _ = copy_nest(2, 300)
    text = emit_llvm_ir({"k": func}, optimized=False)
    number = re.search(r'^(!\d+) = !\{!"llvm.loop.unroll.disable"\}', text, re.MULTILINE).group(1)
    assert len(re.findall(rf"^!\d+ = distinct !\{{!\d+, {number}\}}", text, re.MULTILINE)) == 2
    small, _, _ = copy_nest(8, 8)
    assert "unroll.disable" not in emit_llvm_ir({"k": small}, optimized=False)


def test_rolled_code_is_smaller_and_computes_the_same(monkeypatch):
    """2 x 300 copies: LLVM vectorizes the inner loop either way; unrolled it was 5 times larger."""
    func, _, _ = copy_nest(2, 300)
    rolled = emit_llvm_ir({"k": func})
    monkeypatch.setattr(kernel_codegen, "rolled_loops", lambda body: frozenset())
    unrolled = emit_llvm_ir({"k": func})
    assert 2 * len(rolled.splitlines()) < len(unrolled.splitlines())
    assert "<16 x float>" in rolled or "<8 x float>" in rolled or "<4 x float>" in rolled  # still vectorized
    monkeypatch.undo()
    x = np.random.default_rng(0).standard_normal((2, 300)).astype(np.float32)
    out = np.zeros_like(x)
    build_host_library({"k": func}).get_function("k")(x, out)
    np.testing.assert_array_equal(out, x * 2)


def test_rolled_reductions_and_vectors_against_numpy():
    func, _, _ = vector_rows(300)
    x = np.random.default_rng(1).standard_normal(4 * 300 * 16).astype(np.float32)
    out = np.zeros_like(x)
    build_host_library({"v": func}).get_function("v")(x, out)
    np.testing.assert_array_equal(out, x + 1)
    lib = build_host_library({"e": elementwise(1023, ["float32", "float32"], "float32", tir.Mul)})
    a, b = np.arange(1023, dtype=np.float32), np.full(1023, 3, np.float32)
    c = np.zeros(1023, np.float32)
    lib.get_function("e")(a, b, c)
    np.testing.assert_array_equal(c, a * b)


def _shuffles(stmt) -> int:
    return len(collect(stmt, tir.Shuffle))


def _scheduled(params: str, body: str, target: str):
    (func,) = lowered_kernels(params, body).values()
    return lower_for_codegen(func, parse_target(target))


@pytest.mark.parametrize("level", ["x86-64-v3", "x86-64-v4"])
def test_loops_around_a_transpose_network_are_rolled(level):
    """The transpose's blocks (AVX2: 8 x 8, 24 shuffles; AVX-512: 16 x 16) sit in small loops
    that LLVM would unroll into several networks; every loop around a network stays rolled.
    Only the lowering is looked at: any host."""
    transpose = _scheduled('x: R.Tensor((64, 64), "float32")', "out = R.permute_dims(x, [1, 0])",
                           f"llvm -mcpu={level}")
    loops = [loop for loop in collect(transpose.body, tir.For) if _shuffles(loop.body)]
    assert loops and all(_shuffles(loop.body) >= SHUFFLE_NETWORK for loop in loops)
    assert {id(loop) for loop in loops} <= rolled_loops(transpose.body)
    if level == "x86-64-v3":  # the 2 x 2 loops of 8 x 8 blocks
        assert any(isinstance(loop.extent, tir.IntImm) and loop.extent.value <= 2 for loop in loops)


def test_a_rolled_transpose_matches_numpy(schedule_target):
    transpose = _scheduled('x: R.Tensor((64, 64), "float32")', "out = R.permute_dims(x, [1, 0])",
                           schedule_target)
    x = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    out = np.zeros_like(x)
    build_host_library({"t": transpose}, parse_target(schedule_target)).get_function("t")(x, out)
    np.testing.assert_array_equal(out, x.T)


def test_a_max_pools_single_shuffle_leaves_its_window_loops_to_llvm():
    """A 2 x 2 max pool deinterleaves with one shuffle: its small window loops stay LLVM's choice."""
    pool = _scheduled('x: R.Tensor((1, 16, 32, 32), "float32")',
                      "out = R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2])",
                      "llvm -mcpu=x86-64-v3")
    windows = [loop for loop in collect(pool.body, tir.For) if 0 < _shuffles(loop.body) < SHUFFLE_NETWORK]
    assert windows and not {id(loop) for loop in windows if loop.extent.value == 2} & rolled_loops(pool.body)
