"""lower_for_codegen: the lowered form, and lowered == unlowered on random inputs."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relax.ir import tir
from relax.target import Target
from relax.tir import LoweringError, lower_for_codegen, run
from relax.tir.verify_lowered import verify_lowered
from relax.tir.rewrite import collect

from tir_builders import block, buffer, f32, i32, loops, matmul_func, prim_func


def _random(shape, rng):
    return rng.standard_normal(shape).astype(np.float32)


def _check_same(func, arrays, outputs):
    lowered = lower_for_codegen(func, None)
    assert verify_lowered(lowered) == []
    first = [a.copy() for a in outputs]
    second = [a.copy() for a in outputs]
    run(func, *arrays, *first)
    run(lowered, *arrays, *second)
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)
    return lowered, second


@given(m=st.integers(1, 6), n=st.integers(1, 6), k=st.integers(1, 6), seed=st.integers(0, 2**16))
@settings(max_examples=25, deadline=None)
def test_matmul_lowered_matches_numpy(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a, b = _random((m, k), rng), _random((k, n), rng)
    lowered, (c,) = _check_same(matmul_func(m, n, k), [a, b], [np.zeros((m, n), np.float32)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    assert lowered.attrs["tir.lowered"] is True


def _split_copy(total, factor):
    """B[x] = A[x // cols, x % cols] * 2 over a split loop with a predicate."""
    cols = max(1, total // 3) if total % max(1, total // 3) == 0 else 1
    rows = total // cols
    A, B = buffer("A", (rows, cols)), buffer("B", (total,))
    outer = -(-total // factor)

    def body(o, i):
        x = tir.Add(tir.Mul(o, i32(factor)), i)
        return block("copy", [("x", total, "DataPar")], (x,), lambda vx: tir.BufferStore(
            B, tir.Mul(tir.BufferLoad(A, (tir.FloorDiv(vx, i32(cols)), tir.FloorMod(vx, i32(cols)))), f32(2.0)), (vx,)),
            predicate=tir.LT(x, i32(total)))

    return prim_func([A, B], loops([("o", outer), ("i", factor)], body)), rows, cols


@given(total=st.integers(1, 40), factor=st.integers(1, 8), seed=st.integers(0, 2**16))
@settings(max_examples=40, deadline=None)
def test_split_loops_with_predicates(total, factor, seed):
    func, rows, cols = _split_copy(total, factor)
    a = _random((rows, cols), np.random.default_rng(seed))
    _, (b,) = _check_same(func, [a], [np.zeros(total, np.float32)])
    np.testing.assert_array_equal(b, a.reshape(-1) * 2)


@given(n=st.integers(0, 7), seed=st.integers(0, 2**16))
@settings(max_examples=20, deadline=None)
def test_symbolic_shapes_with_a_scratch_buffer(n, seed):
    size = tir.Var("n")
    A, B = buffer("A", (size, 3)), buffer("B", (size,))
    T = buffer("T", (3,))

    def body(i):
        fill = loops([("j", 3)], lambda j: tir.BufferStore(
            T, tir.Mul(tir.BufferLoad(A, (i, j)), tir.BufferLoad(A, (i, j))), (j,)))
        total = tir.Add(tir.Add(tir.BufferLoad(T, (i32(0),)), tir.BufferLoad(T, (i32(1),))), tir.BufferLoad(T, (i32(2),)))
        return tir.SeqStmt((fill, tir.BufferStore(B, total, (i,))))

    func = prim_func([A, B], block("root", [], (), lambda: loops([("i", size)], body), alloc=(T,)))
    a = _random((n, 3), np.random.default_rng(seed))
    lowered, (b,) = _check_same(func, [a], [np.zeros(n, np.float32)])
    np.testing.assert_allclose(b, (a * a).sum(axis=1), rtol=1e-6)
    alloc = collect(lowered.body, tir.Allocate)[0]
    assert alloc.annotations["storage"] == "stack" and len(alloc.extents) == 1


def test_lowered_form_contract():
    lowered = lower_for_codegen(matmul_func(), Target.parse("llvm"))
    assert not collect(lowered.body, (tir.Block, tir.BlockRealize, tir.AttrStmt))
    for access in collect(lowered.body, (tir.BufferLoad, tir.BufferStore)):
        assert len(access.indices) == 1 and len(access.buffer.shape) == 1
    assert [len(b.shape) for _, b in lowered.buffer_map] == [2, 2, 2]


def _thread_bound():
    A = buffer("A", (64,))
    body = tir.For(tir.Var("t"), i32(0), i32(64), "thread_binding",
                   tir.BufferStore(A, f32(0.0), (tir.Var("unused"),)), thread_tag="threadIdx.x")
    body = body.with_fields(body=tir.BufferStore(A, f32(0.0), (body.loop_var,)))
    return prim_func([A], body)


def test_thread_binding_needs_a_cuda_target():
    with pytest.raises(LoweringError, match="needs a cuda target"):
        lower_for_codegen(_thread_bound(), Target.parse("llvm"))
    lowered = lower_for_codegen(_thread_bound(), Target.parse("cuda -arch=sm_80"))
    assert collect(lowered.body, tir.For)[0].thread_tag == "threadIdx.x"


def test_attr_stmts_are_removed():
    A = buffer("A", (1,))
    func = prim_func([A], tir.AttrStmt(None, "pragma_unroll", i32(1), tir.BufferStore(A, f32(1.0), (i32(0),))))
    assert not collect(lower_for_codegen(func).body, tir.AttrStmt)


def test_the_input_function_is_not_modified():
    func = matmul_func()
    before = collect(func.body, tir.BlockRealize)
    lower_for_codegen(func)
    assert collect(func.body, tir.BlockRealize) == before


def test_thread_launches_become_thread_bound_loops():
    A = buffer("A", (8,))
    bx = tir.IterVar(tir.Var("bx"), tir.Range(i32(0), i32(8)), "ThreadIndex", "blockIdx.x")
    body = tir.AttrStmt(bx, "thread_extent", i32(8), tir.BufferStore(A, f32(1.0), (bx.var,)))
    func = prim_func([A], body)
    lowered = lower_for_codegen(func, Target.parse("cuda -arch=sm_80"))
    loop = lowered.body.body
    assert isinstance(loop, tir.For) and loop.kind == "thread_binding" and loop.thread_tag == "blockIdx.x"
    assert loop.loop_var is bx.var and loop.extent.value == 8
    a1, a2 = np.zeros(8, np.float32), np.zeros(8, np.float32)
    run(func, a1)
    run(lowered, a2)
    np.testing.assert_array_equal(a1, a2)
    with pytest.raises(LoweringError, match="needs a cuda target"):
        lower_for_codegen(func, Target.parse("llvm"))


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
@settings(max_examples=30, deadline=None)
def test_random_transposes_lowered_match_numpy(shape, data):
    order = data.draw(st.permutations(range(len(shape))))
    symbolic = data.draw(st.booleans())
    dims = [tir.Var(f"d{axis}") if symbolic else extent for axis, extent in enumerate(shape)]
    A = buffer("A", dims)
    B = buffer("B", [dims[axis] for axis in order])
    names = [(f"i{axis}", dims[axis]) for axis in order]

    def body(*out_index):
        return block("T", [(f"v{p}", dims[axis], "DataPar") for p, axis in enumerate(order)], out_index,
                     lambda *v: tir.BufferStore(B, tir.BufferLoad(A, tuple(
                         v[order.index(axis)] for axis in range(len(shape)))), tuple(v)))

    func = prim_func([A, B], loops(names, body))
    a = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    target = Target.parse("cuda -arch=sm_80 -max_threads_per_block=8") if data.draw(st.booleans()) else None
    lowered = lower_for_codegen(func, target)
    b = np.zeros([shape[axis] for axis in order], np.float32)
    run(lowered, a, b)
    np.testing.assert_array_equal(b, np.transpose(a, order))
