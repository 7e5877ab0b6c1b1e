"""flatten-buffers: row-major flat indices, the buffer_map contract, same results."""

import numpy as np

from relax.ir import tir
from relax.ir.structural import structural_equal
from relax.tir import run
from relax.tir.convert_blocks_to_loops import ConvertBlocksToLoops
from relax.tir.flatten_buffers import FlattenBuffers, flat_index
from relax.tir.rewrite import collect

from tir_builders import buffer, f32, i32, loops, matmul_func, prim_func


def _copy_2d(shape):
    A, B = buffer("A", shape), buffer("B", shape)
    body = loops([("i", shape[0]), ("j", shape[1])], lambda i, j: tir.BufferStore(
        B, tir.BufferLoad(A, (i, j)), (i, j)))
    return prim_func([A, B], body), A, B


def test_two_dimensional_access_becomes_row_major_offset():
    func, A, B = _copy_2d((3, 128))
    after = FlattenBuffers().run(func)
    store = collect(after.body, tir.BufferStore)[0]
    i, j = after.body.body.body.loop_var, after.body.body.body.body.loop_var
    assert structural_equal(store.indices[0], tir.Add(tir.Mul(i, i32(128)), j))
    assert store.buffer.shape[0].value == 384 and store.buffer.data is B.data


def test_buffer_map_keeps_original_buffers_and_body_declares_flat_views():
    func, A, B = _copy_2d((3, 4))
    after = FlattenBuffers().run(func)
    assert after.buffer_map == func.buffer_map
    first, second = after.body, after.body.body
    assert isinstance(first, tir.DeclBuffer) and first.buffer.data is A.data and len(first.buffer.shape) == 1
    assert isinstance(second, tir.DeclBuffer) and second.buffer.data is B.data
    load = collect(after.body, tir.BufferLoad)[0]
    assert load.buffer is first.buffer


def test_symbolic_shape():
    n, m = tir.Var("n"), tir.Var("m")
    A = buffer("A", (n, m, 4))
    index = flat_index(A, (i32(1), i32(2), i32(3)))
    assert structural_equal(index, tir.Add(tir.Add(tir.Mul(i32(1), tir.Mul(m, i32(4))), tir.Mul(i32(2), i32(4))), i32(3)))
    decl = FlattenBuffers().run(prim_func([A], tir.Evaluate(i32(0)))).body
    assert structural_equal(decl.buffer.shape[0], tir.Mul(tir.Mul(n, m), i32(4)))


def test_allocation_extents_become_one_count():
    A = buffer("A", (2, 3))
    T = buffer("T", (2, 3))
    copy = loops([("i", 2), ("j", 3)], lambda i, j: tir.BufferStore(T, tir.BufferLoad(A, (i, j)), (i, j)))
    back = loops([("i", 2), ("j", 3)], lambda i, j: tir.BufferStore(A, tir.Add(tir.BufferLoad(T, (i, j)), f32(1.0)), (i, j)))
    body = tir.Allocate(T.data, "float32", T.shape, tir.IntImm("bool", 1), tir.DeclBuffer(T, tir.SeqStmt((copy, back))))
    func = prim_func([A], body)
    after = FlattenBuffers().run(func)
    alloc = collect(after.body, tir.Allocate)[0]
    assert len(alloc.extents) == 1 and alloc.extents[0].value == 6
    assert len(alloc.body.buffer.shape) == 1
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    run(after, a)
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3) + 1)


def test_vector_access_becomes_a_ramp_over_the_flat_offset():
    A = buffer("A", (4, 8))
    i = tir.Var("i")
    index = flat_index(A, (i, tir.Ramp(i32(4), i32(1), 4)))
    assert isinstance(index, tir.Ramp) and index.lanes == 4
    assert structural_equal(index.base, tir.Add(tir.Mul(i, i32(8)), i32(4)))


def test_strided_buffer_uses_its_strides_and_offset():
    A = tir.Buffer("A", (i32(2), i32(2)), "float32", tir.Var("A", "handle"), strides=(i32(5), i32(2)),
                   elem_offset=i32(1))
    index = flat_index(A, (i32(1), i32(1)))
    assert structural_equal(index, tir.Add(tir.Add(tir.Mul(i32(1), i32(5)), tir.Mul(i32(1), i32(2))), i32(1)))


def test_matmul_flattened_agrees_with_the_original():
    func = matmul_func(5, 3, 4)
    after = FlattenBuffers().run(ConvertBlocksToLoops().run(func))
    for access in collect(after.body, (tir.BufferLoad, tir.BufferStore)):
        assert len(access.indices) == 1 and len(access.buffer.shape) == 1
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((5, 4), dtype=np.float32), rng.standard_normal((4, 3), dtype=np.float32)
    c1, c2 = np.zeros((5, 3), np.float32), np.zeros((5, 3), np.float32)
    run(func, a, b, c1)
    run(after, a, b, c2)
    np.testing.assert_array_equal(c1, c2)


def test_one_dimensional_parameters_get_their_own_view():
    A, B = buffer("A", (8,)), buffer("B", (8,))
    func = prim_func([A, B], loops([("i", 8)], lambda i: tir.BufferStore(B, tir.BufferLoad(A, (i,)), (i,))))
    after = FlattenBuffers().run(func)
    views = [after.body.buffer, after.body.body.buffer]
    assert views[0] is not A and views[0].data is A.data and views[1] is not B
    for access in collect(after.body, (tir.BufferLoad, tir.BufferStore)):
        assert access.buffer in views


def test_allocation_without_decl_buffer_gets_one():
    A = buffer("A", (4,))
    data = tir.Var("tmp", "handle")
    scratch = tir.Buffer("tmp", (i32(2), i32(2)), "float32", data)
    copy = loops([("i", 4)], lambda i: tir.BufferStore(
        scratch, tir.BufferLoad(A, (i,)), (tir.FloorDiv(i, i32(2)), tir.FloorMod(i, i32(2)))))
    func = prim_func([A], tir.Allocate(data, "float32", (i32(4),), tir.IntImm("bool", 1), copy))
    alloc = collect(FlattenBuffers().run(func).body, tir.Allocate)[0]
    assert isinstance(alloc.body, tir.DeclBuffer) and alloc.body.buffer.data is data
    assert len(alloc.body.buffer.shape) == 1
