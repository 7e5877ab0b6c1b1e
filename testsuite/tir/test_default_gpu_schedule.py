"""default-gpu-schedule: spatial loops fused onto blockIdx.x x threadIdx.x, reductions
serial in each thread; the interpreter (threads one after another) checks results."""

import numpy as np
from hypothesis import given, settings, strategies as st

from relax.ir import tir
from relax.target import Target
from relax.tir import lower_for_codegen, run
from relax.tir.default_gpu_schedule import DefaultGPUSchedule
from relax.tir.gpu_schedule import CONFIG_KEY as GPU_RULES
from relax.tir.rewrite import collect
from relax.tir.verify_lowered import verify_lowered
from relax.ir.pass_infra import PassContext

from tir_builders import block, buffer, f32, i32, loops, matmul_func, prim_func


def _add_func(rows, cols):
    A, B = buffer("A", (rows, cols)), buffer("B", (rows, cols))
    body = loops([("i", rows), ("j", cols)], lambda i, j: block(
        "add", [("i", rows, "DataPar"), ("j", cols, "DataPar")], (i, j),
        lambda vi, vj: tir.BufferStore(B, tir.Add(tir.BufferLoad(A, (vi, vj)), f32(1.0)), (vi, vj))))
    return prim_func([A, B], body)


def _thread_loops(func):
    return [(f.thread_tag, f.extent) for f in collect(func.body, tir.For) if f.kind == "thread_binding"]


def test_elementwise_nest_is_fused_and_split_with_a_guard():
    after = DefaultGPUSchedule(1024).run(_add_func(16, 300))
    (block_tag, blocks), (thread_tag, threads) = _thread_loops(after)
    assert (block_tag, blocks.value, thread_tag, threads.value) == ("blockIdx.x", 5, "threadIdx.x", 1024)
    assert len(collect(after.body, tir.IfThenElse)) == 1
    a = np.random.default_rng(0).standard_normal((16, 300)).astype(np.float32)
    b = np.zeros_like(a)
    run(after, a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_exact_division_needs_no_guard():
    after = DefaultGPUSchedule(256).run(_add_func(8, 64))
    assert [e.value for _, e in _thread_loops(after)] == [2, 256]
    assert not collect(after.body, tir.IfThenElse)


@given(m=st.integers(1, 7), n=st.integers(1, 7), k=st.integers(1, 5), threads=st.sampled_from([1, 4, 32]))
@settings(max_examples=25, deadline=None)
def test_matmul_reduction_stays_serial_per_thread(m, n, k, threads):
    func = matmul_func(m, n, k)
    after = DefaultGPUSchedule(threads).run(func)
    serial = [f for f in collect(after.body, tir.For) if f.kind == "serial"]
    assert len(serial) == 1 and serial[0].extent.value == k
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    with PassContext(config={GPU_RULES: 0}):  # this fallback, not the gpu_schedule/ rules
        run(lower_for_codegen(func, Target.parse(f"cuda -arch=sm_80 -max_threads_per_block={threads}")), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_symbolic_extent_gets_a_computed_grid():
    n = tir.Var("n")
    A, B = buffer("A", (n,)), buffer("B", (n,))
    func = prim_func([A, B], loops([("i", n)], lambda i: block(
        "copy", [("i", n, "DataPar")], (i,), lambda vi: tir.BufferStore(B, tir.BufferLoad(A, (vi,)), (vi,)))))
    lowered = lower_for_codegen(func, Target.parse("cuda -arch=sm_80"))
    assert verify_lowered(lowered, Target.parse("cuda -arch=sm_80")) == []
    for size in (0, 1, 1023, 1025):
        a = np.arange(size, dtype=np.float32)
        b = np.zeros(size, np.float32)
        run(lowered, a, b)
        np.testing.assert_array_equal(a, b)


def test_full_reduction_runs_in_one_thread():
    A, S = buffer("A", (10,)), buffer("S", (1,))
    func = prim_func([A, S], loops([("k", 10)], lambda k: block(
        "sum", [("k", 10, "CommReduce")], (k,),
        lambda vk: tir.BufferStore(S, tir.Add(tir.BufferLoad(S, (i32(0),)), tir.BufferLoad(A, (vk,))), (i32(0),)),
        lambda vk: tir.BufferStore(S, f32(0.0), (i32(0),)))))
    after = DefaultGPUSchedule().run(func)
    assert [e.value for _, e in _thread_loops(after)] == [1, 1]
    a, s = np.arange(10, dtype=np.float32), np.zeros(1, np.float32)
    run(after, a, s)
    assert s[0] == 45


def test_a_loop_that_does_not_feed_every_block_is_not_parallel():
    A = buffer("A", (4,))
    func = prim_func([A], loops([("r", 3), ("j", 4)], lambda r, j: block(
        "bump", [("j", 4, "DataPar")], (j,),
        lambda vj: tir.BufferStore(A, tir.Add(tir.BufferLoad(A, (vj,)), f32(1.0)), (vj,)))))
    after = DefaultGPUSchedule().run(func)
    assert [e.value for _, e in _thread_loops(after)] == [1, 1]
    a = np.zeros(4, np.float32)
    run(after, a)
    np.testing.assert_array_equal(a, [3, 3, 3, 3])


def test_functions_with_thread_bindings_are_left_alone():
    A = buffer("A", (8,))
    bound = tir.For(tir.Var("t"), i32(0), i32(8), "thread_binding", tir.Evaluate(i32(0)), thread_tag="threadIdx.x")
    func = prim_func([A], bound)
    assert DefaultGPUSchedule().run(func) is func


def test_llvm_targets_are_not_scheduled():
    lowered = lower_for_codegen(_add_func(4, 4), Target.parse("llvm"))
    assert not _thread_loops(lowered)
