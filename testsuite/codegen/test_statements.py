"""Statements and vector expressions of lowered TIR: loops, branches, lets, allocations,
asserts, Ramp/Broadcast, scalar parameters and symbolic sizes, against numpy."""

import numpy as np
import pytest
from codegen_tir import flat, i64, kernel, load, loop, param, store

from relax.codegen import build_host_library
from relax.ir import tir
from relax.runtime.kernels import KernelCallError


def f32(value):
    return tir.FloatImm("float32", value)


def matmul_kernel(m, k, n, kind="serial"):
    """C[i, j] = sum_r A[i, r] * B[r, j], with an init statement as lowering writes it."""
    a, b, c = param("A", "float32", (m, k)), param("B", "float32", (k, n)), param("C", "float32", (m, n))
    fa, fb, fc = flat(a[1], m * k), flat(b[1], k * n), flat(c[1], m * n)
    i, j, r = tir.Var("i", "int64"), tir.Var("j", "int64"), tir.Var("r", "int64")
    out_index = tir.Add(tir.Mul(i, i64(n)), j)
    update = store(fc, out_index, tir.Add(load(fc, out_index),
                                          tir.Mul(load(fa, tir.Add(tir.Mul(i, i64(k)), r)),
                                                  load(fb, tir.Add(tir.Mul(r, i64(n)), j)))))
    body = tir.SeqStmt((store(fc, out_index, f32(0.0)), loop(r, i64(k), update)))
    return kernel([a, b, c], loop(i, i64(m), loop(j, i64(n), body), kind))


@pytest.mark.parametrize("kind", ["serial", "parallel", "unrolled"])
def test_matmul(kind):
    lib = build_host_library({"mm": matmul_kernel(8, 16, 4, kind)})
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 16), np.float32), rng.standard_normal((16, 4), np.float32)
    c = np.zeros((8, 4), np.float32)
    lib.get_function("mm")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_loop_with_nonzero_start_and_vectorized_kind():
    a, b = param("A", "float32", (50,)), param("B", "float32", (50,))
    i = tir.Var("i", "int32")
    body = store(b[1], i, tir.Mul(load(a[1], i), f32(2.0)))
    lib = build_host_library({"k": kernel([a, b], loop(i, 40, body, "vectorized", start=7))})
    x = np.arange(50, dtype=np.float32)
    out = np.full(50, -1, np.float32)
    lib.get_function("k")(x, out)
    expected = np.full(50, -1, np.float32)
    expected[7:47] = x[7:47] * 2
    np.testing.assert_array_equal(out, expected)


def test_ramp_broadcast_and_vector_math():
    """B[ramp(4*i, 1, 4)] = A[ramp(4*i, 1, 4)] * broadcast(3) + A[ramp(4*i + 3, -1, 4)] (reversed)."""
    a, b = param("A", "float32", (32,)), param("B", "float32", (32,))
    i = tir.Var("i", "int64")
    base = tir.Mul(i, i64(4))
    forward = tir.Ramp(base, i64(1), 4)
    backward = tir.Ramp(tir.Add(base, i64(3)), i64(-1), 4)
    value = tir.Add(tir.Mul(load(a[1], forward), tir.Broadcast(f32(3.0), 4)), load(a[1], backward))
    lib = build_host_library({"v": kernel([a, b], loop(i, i64(8), store(b[1], forward, value)))})
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    lib.get_function("v")(x, out)
    np.testing.assert_array_equal(out, x * 3 + x.reshape(8, 4)[:, ::-1].reshape(-1))


def test_strided_vector_store_and_bool_vectors():
    """B[ramp(i, 8, 4)] = A[ramp(i, 8, 4)] > broadcast(0) (a bool vector scattered with stride)."""
    a, b = param("A", "float32", (32,)), param("B", "bool", (32,))
    i = tir.Var("i", "int64")
    index = tir.Ramp(i, i64(8), 4)
    value = tir.GT(load(a[1], index), tir.Broadcast(f32(0.0), 4))
    lib = build_host_library({"s": kernel([a, b], loop(i, i64(8), store(b[1], index, value)))})
    x = np.random.default_rng(1).standard_normal(32).astype(np.float32)
    out = np.zeros(32, bool)
    lib.get_function("s")(x, out)
    np.testing.assert_array_equal(out, x > 0)


def test_if_then_else_while_and_lets():
    """Collatz step counts: a While loop in an If, with LetStmt and Let."""
    a, b = param("A", "int64", (16,)), param("B", "int64", (16,))
    i = tir.Var("i", "int64")
    steps_buffer_var = tir.Var("steps", "handle")
    steps = tir.Buffer("steps", (i64(2),), "int64", data=steps_buffer_var)
    x, half = tir.Var("x", "int64"), tir.Var("half", "int64")
    value, count = load(steps, i64(0)), load(steps, i64(1))
    step = tir.IfThenElse(
        tir.EQ(tir.FloorMod(value, i64(2)), i64(0)),
        store(steps, i64(0), tir.Let(half, tir.FloorDiv(value, i64(2)), half)),
        store(steps, i64(0), tir.Add(tir.Mul(value, i64(3)), i64(1))),
    )
    body = tir.LetStmt(x, load(a[1], i), tir.IfThenElse(
        tir.GT(x, i64(0)),
        tir.SeqStmt((
            store(steps, i64(0), x), store(steps, i64(1), i64(0)),
            tir.While(tir.NE(value, i64(1)), tir.SeqStmt((step, store(steps, i64(1), tir.Add(count, i64(1)))))),
            store(b[1], i, count),
        )),
        store(b[1], i, i64(-1)),
    ))
    allocate = tir.Allocate(steps_buffer_var, "int64", (i64(2),), tir.const(True),
                            tir.DeclBuffer(steps, loop(i, i64(16), body)))
    lib = build_host_library({"collatz": kernel([a, b], allocate)})
    x = np.array([1, 2, 3, 6, 7, 27, 0, -5, 9, 97, 871, 5, 4, 8, 16, 11], np.int64)
    out = np.zeros(16, np.int64)
    lib.get_function("collatz")(x, out)

    def collatz(v):
        if v <= 0:
            return -1
        n = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        return n

    assert out.tolist() == [collatz(v) for v in x]


def _softmax_rows(storage):
    """B = softmax(A) over rows of an (m, n) matrix, with a scratch row in `storage`."""
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    a, b = param("A", "float32", (m, n)), param("B", "float32", (m, n))
    fa, fb = flat(a[1], tir.Mul(m, n)), flat(b[1], tir.Mul(m, n))
    scratch_var = tir.Var("scratch", "handle")
    scratch = tir.Buffer("scratch", (n,), "float32", data=scratch_var)
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    total_var = tir.Var("total", "handle")
    total = tir.Buffer("total", (i64(1),), "float32", data=total_var)
    row = tir.Add(tir.Mul(i, n), j)
    exp = tir.Call("float32", "tir.exp", (load(fa, row),))
    body = tir.SeqStmt((
        store(total, i64(0), f32(0.0)),
        loop(j, n, tir.SeqStmt((store(scratch, j, exp),
                                store(total, i64(0), tir.Add(load(total, i64(0)), load(scratch, j)))))),
        loop(j, n, store(fb, row, tir.Div(load(scratch, j), load(total, i64(0))))),
    ))
    inner = tir.Allocate(total_var, "float32", (i64(1),), tir.const(True), tir.DeclBuffer(total, body),
                         annotations=tir.FrozenDict(storage="stack"))
    outer = tir.Allocate(scratch_var, "float32", (n,), tir.const(True),
                         tir.DeclBuffer(scratch, loop(i, m, inner)),
                         annotations=tir.FrozenDict(storage=storage))
    return kernel([a, b], outer)


def test_workspace_allocation_with_symbolic_size():
    lib = build_host_library({"softmax": _softmax_rows("workspace")})
    function = lib.get_function("softmax")
    assert function.info.symbolic_vars == ("m", "n")
    assert function.info.workspace_bytes == ["mul", ["floordiv", ["add", ["mul", 4, "n"], 63], 64], 64]
    for shape in ((3, 5), (7, 100)):
        x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
        out = np.zeros(shape, np.float32)
        function(x, out)
        expected = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_scalar_parameters_and_symbolic_size():
    """scale_add(A: (n,), alpha: float32, k: int64, B: (n,)): B = A * alpha + k."""
    n = tir.Var("n", "int64")
    a, b = param("A", "float32", (n,)), param("B", "float32", (n,))
    alpha, k = tir.Var("alpha", "float32"), tir.Var("k", "int64")
    i = tir.Var("i", "int64")
    value = tir.Add(tir.Mul(load(a[1], i), alpha), tir.Cast("float32", k))
    lib = build_host_library({"scale_add": kernel([a, alpha, k, b], loop(i, n, store(b[1], i, value)))})
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    lib.get_function("scale_add")(x, 0.5, 3, out)
    np.testing.assert_allclose(out, x * 0.5 + 3, rtol=1e-7)


def test_failed_assert_reports_its_message():
    a = param("A", "int32", (4,))
    i = tir.Var("i", "int64")
    check = tir.AssertStmt(tir.GE(load(a[1], i), tir.IntImm("int32", 0)), tir.StringImm("A must be non-negative"),
                           tir.Evaluate(tir.IntImm("int32", 0)))
    lib = build_host_library({"check": kernel([a], loop(i, i64(4), check))})
    lib.get_function("check")(np.array([0, 1, 2, 3], np.int32))
    with pytest.raises(KernelCallError, match="kernel 'check': assertion failed: check: A must be non-negative"):
        lib.get_function("check")(np.array([0, 1, -2, 3], np.int32))
