"""convert-blocks-to-loops: Before/Expected pairs and same results as the blocks."""

import numpy as np

from relax.ir import tir
from relax.ir.structural import assert_structural_equal
from relax.tir import run
from relax.tir.convert_blocks_to_loops import ConvertBlocksToLoops
from relax.tir.rewrite import collect

from tir_builders import block, buffer, f32, i32, loops, matmul_func, prim_func


def test_reduction_init_runs_when_the_reduction_iterator_starts():
    A, B = buffer("A", (4, 8)), buffer("B", (4,))

    def before_body(i, k):
        return block("sum", [("i", 4, "DataPar"), ("k", 8, "CommReduce")], (i, k),
                     lambda vi, vk: tir.BufferStore(B, tir.Add(tir.BufferLoad(B, (vi,)), tir.BufferLoad(A, (vi, vk))), (vi,)),
                     lambda vi, vk: tir.BufferStore(B, f32(0.0), (vi,)),
                     predicate=tir.LT(i, i32(3)))

    def expected_body(i, k):
        return tir.IfThenElse(tir.LT(i, i32(3)), tir.SeqStmt((
            tir.IfThenElse(tir.EQ(k, i32(0)), tir.BufferStore(B, f32(0.0), (i,))),
            tir.BufferStore(B, tir.Add(tir.BufferLoad(B, (i,)), tir.BufferLoad(A, (i, k))), (i,)),
        )))

    before = prim_func([A, B], loops([("i", 4), ("k", 8)], before_body))
    expected = prim_func([A, B], loops([("i", 4), ("k", 8)], expected_body))
    after = ConvertBlocksToLoops().run(before)
    assert_structural_equal(after, expected, map_free_vars=True)


def test_alloc_buffers_become_allocate_and_decl_buffer():
    A = buffer("A", (2,))
    T = buffer("T", (2, 2))
    before = prim_func([A], block("root", [], (), lambda: tir.BufferStore(
        T, tir.BufferLoad(A, (i32(0),)), (i32(0), i32(1))), alloc=(T,)))
    after = ConvertBlocksToLoops().run(before)
    assert isinstance(after.body, tir.Allocate)
    assert after.body.buffer_var is T.data and after.body.extents == T.shape
    assert isinstance(after.body.body, tir.DeclBuffer) and after.body.body.buffer is T
    assert isinstance(after.body.body.body, tir.BufferStore)


def test_no_blocks_remain_and_results_agree():
    func = matmul_func(6, 5, 7)
    after = ConvertBlocksToLoops().run(func)
    assert not collect(after.body, (tir.Block, tir.BlockRealize))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 7), dtype=np.float32), rng.standard_normal((7, 5), dtype=np.float32)
    c1, c2 = np.zeros((6, 5), np.float32), np.full((6, 5), 7.0, np.float32)
    run(func, a, b, c1)
    run(after, a, b, c2)
    np.testing.assert_array_equal(c1, c2)


def test_nested_blocks_substitute_outer_iterators():
    A, B = buffer("A", (4,)), buffer("B", (4,))
    inner = lambda vo: block("inner", [("x", 4, "DataPar")], (vo,),
                             lambda vx: tir.BufferStore(B, tir.BufferLoad(A, (vx,)), (vx,)))
    func = prim_func([A, B], loops([("i", 4)], lambda i: block("outer", [("o", 4, "DataPar")], (i,), inner)))
    after = ConvertBlocksToLoops().run(func)
    store = collect(after.body, tir.BufferStore)[0]
    loop_var = after.body.loop_var
    assert store.indices[0] is loop_var
    a, b = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    run(after, a, b)
    np.testing.assert_array_equal(a, b)


def test_init_without_reduction_iterators_always_runs():
    A = buffer("A", (3,))
    func = prim_func([A], loops([("i", 3)], lambda i: block(
        "b", [("i", 3, "DataPar")], (i,),
        lambda vi: tir.BufferStore(A, tir.Add(tir.BufferLoad(A, (vi,)), f32(1.0)), (vi,)),
        lambda vi: tir.BufferStore(A, f32(5.0), (vi,)))))
    after = ConvertBlocksToLoops().run(func)
    assert not collect(after.body, tir.IfThenElse)
    a = np.zeros(3, np.float32)
    run(after, a)
    np.testing.assert_array_equal(a, [6, 6, 6])
