"""The reference interpreter against numpy, and TVM's integer division semantics."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relax.ir import tir
from relax.tir import lower_for_codegen, run
from relax.tir.interpreter import InterpreterError

from tir_builders import block, buffer, i32, loops, matmul_func, prim_func


def test_matmul_block_with_init_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 8), dtype=np.float32), rng.standard_normal((8, 4), dtype=np.float32)
    c = np.full((16, 4), 99.0, dtype=np.float32)
    run(matmul_func(), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


_DIVISIONS = {
    tir.Div: lambda a, b: np.trunc(a / b).astype(np.int32),
    tir.Mod: lambda a, b: np.fmod(a, b),
    tir.FloorDiv: np.floor_divide,
    tir.FloorMod: np.mod,
}


@pytest.mark.parametrize("op", list(_DIVISIONS), ids=lambda op: op.__name__)
@given(values=st.lists(st.integers(-1000, 1000), min_size=1, max_size=8),
       divisor=st.integers(-9, 9).filter(bool))
@settings(max_examples=30, deadline=None)
def test_integer_division_semantics(op, values, divisor):
    A, B = buffer("A", (len(values),), "int32"), buffer("B", (len(values),), "int32")
    body = loops([("i", len(values))], lambda i: tir.BufferStore(
        B, op(tir.BufferLoad(A, (i,)), i32(divisor)), (i,)))
    a = np.array(values, dtype=np.int32)
    out = np.zeros_like(a)
    run(prim_func([A, B], body), a, out)
    np.testing.assert_array_equal(out, _DIVISIONS[op](a, np.int32(divisor)))


def test_int32_arithmetic_wraps():
    A = buffer("A", (1,), "int32")
    body = tir.BufferStore(A, tir.Mul(tir.BufferLoad(A, (i32(0),)), i32(65536)), (i32(0),))
    a = np.array([65536], dtype=np.int32)
    run(prim_func([A], body), a)
    assert a[0] == 0


def test_float32_rounds_as_float32():
    A = buffer("A", (1,))
    body = tir.BufferStore(A, tir.Add(tir.BufferLoad(A, (i32(0),)), tir.FloatImm("float32", 1e-8)), (i32(0),))
    a = np.array([1.0], dtype=np.float32)
    run(prim_func([A], body), a)
    assert a[0] == np.float32(1.0)


def test_fma_is_multiply_add():
    # The CPU schedules (register tiles, conv2d, gemv) emit tir.fma; the interpreter must run them.
    A = buffer("A", (3,))
    load = lambda i: tir.BufferLoad(A, (i32(i),))
    body = tir.BufferStore(A, tir.Call("float32", "tir.fma", (load(0), load(1), load(2))), (i32(0),))
    a = np.array([2.0, 3.0, 0.5], dtype=np.float32)
    run(prim_func([A], body), a)
    assert a[0] == np.float32(6.5)


def test_symbolic_shape_binds_from_the_arguments():
    n = tir.Var("n")
    A, B = buffer("A", (n, 3)), buffer("B", (n, 3))
    body = loops([("i", n), ("j", 3)], lambda i, j: tir.BufferStore(
        B, tir.Mul(tir.BufferLoad(A, (i, j)), tir.FloatImm("float32", 2.0)), (i, j)))
    a = np.arange(15, dtype=np.float32).reshape(5, 3)
    b = np.zeros_like(a)
    run(prim_func([A, B], body), a, b)
    np.testing.assert_array_equal(b, a * 2)
    with pytest.raises(InterpreterError, match="expects shape"):
        run(prim_func([A, B], body), a, np.zeros((4, 3), np.float32))


def test_out_of_bounds_access_is_an_error():
    A = buffer("A", (4,))
    body = tir.BufferStore(A, tir.FloatImm("float32", 0.0), (i32(4),))
    with pytest.raises(InterpreterError, match="outside"):
        run(prim_func([A], body), np.zeros(4, np.float32))


def test_block_predicate_and_alloc_buffer():
    A, B = buffer("A", (10,)), buffer("B", (10,))
    T = buffer("T", (4,))

    def body(o, i):
        index = tir.Add(tir.Mul(o, i32(4)), i)
        return block("copy", [("x", 10, "DataPar")], (index,),
                     lambda vx: tir.SeqStmt((
                         tir.BufferStore(T, tir.BufferLoad(A, (vx,)), (i32(0),)),
                         tir.BufferStore(B, tir.BufferLoad(T, (i32(0),)), (vx,)))),
                     predicate=tir.LT(index, i32(10)), alloc=(T,))

    a = np.arange(10, dtype=np.float32)
    b = np.zeros(10, np.float32)
    run(prim_func([A, B], loops([("o", 3), ("i", 4)], body)), a, b)
    np.testing.assert_array_equal(a, b)


def test_reading_fresh_memory_gives_nan():
    A = buffer("A", (1,))
    T = buffer("T", (1,))
    body = tir.Allocate(T.data, "float32", (i32(1),), tir.IntImm("bool", 1),
                        tir.DeclBuffer(T, tir.BufferStore(A, tir.BufferLoad(T, (i32(0),)), (i32(0),))))
    a = np.zeros(1, np.float32)
    run(prim_func([A], body), a)
    assert np.isnan(a[0])


def test_step_limit_stops_long_runs():
    A = buffer("A", (1,))
    body = loops([("i", 1000)], lambda i: tir.BufferStore(A, tir.FloatImm("float32", 1.0), (i32(0),)))
    with pytest.raises(InterpreterError, match="step limit"):
        run(prim_func([A], body), np.zeros(1, np.float32), step_limit=100)
    run(prim_func([A], body), np.zeros(1, np.float32), step_limit=5000)


def test_vector_accesses_with_ramp_and_broadcast():
    A, B = buffer("A", (2, 4)), buffer("B", (2, 4))
    body = loops([("i", 2)], lambda i: tir.BufferStore(
        B, tir.Mul(tir.BufferLoad(A, (i, tir.Ramp(i32(0), i32(1), 4))), tir.Broadcast(tir.FloatImm("float32", 3.0), 4)),
        (i, tir.Ramp(i32(0), i32(1), 4))))
    func = prim_func([A, B], body)
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    for candidate in (func, lower_for_codegen(func)):
        b = np.zeros_like(a)
        run(candidate, a, b)
        np.testing.assert_array_equal(b, a * 3)
