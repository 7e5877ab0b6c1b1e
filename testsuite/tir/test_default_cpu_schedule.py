"""default-cpu-schedule: the outer independent loop of a big nest becomes parallel."""

import numpy as np

from relax.ir import tir
from relax.target import Target
from relax.tir import lower_for_codegen, run
from relax.tir.default_cpu_schedule import DefaultCPUSchedule, estimated_work
from relax.tir.rewrite import collect

from tir_builders import block, buffer, f32, i32, loops, matmul_func, prim_func


def _kinds(func):
    return [loop.kind for loop in collect(func.body, tir.For)]


def test_big_matmul_gets_a_parallel_outer_loop():
    after = DefaultCPUSchedule(min_work=1000).run(matmul_func(16, 16, 8))
    assert _kinds(after) == ["parallel", "serial", "serial"]


def test_small_nests_stay_serial():
    assert _kinds(DefaultCPUSchedule(min_work=10**6).run(matmul_func(16, 16, 8))) == ["serial"] * 3


def test_unit_outer_loops_are_skipped():
    A, B = buffer("A", (1, 64)), buffer("B", (1, 64))
    func = prim_func([A, B], loops([("n", 1), ("i", 64)], lambda n, i: block(
        "copy", [("n", 1, "DataPar"), ("i", 64, "DataPar")], (n, i),
        lambda vn, vi: tir.BufferStore(B, tir.BufferLoad(A, (vn, vi)), (vn, vi)))))
    assert _kinds(DefaultCPUSchedule(min_work=1).run(func)) == ["serial", "parallel"]


def test_reductions_are_never_parallel():
    A, S = buffer("A", (4096,)), buffer("S", (1,))
    func = prim_func([A, S], loops([("k", 4096)], lambda k: block(
        "sum", [("k", 4096, "CommReduce")], (k,),
        lambda vk: tir.BufferStore(S, tir.Add(tir.BufferLoad(S, (i32(0),)), tir.BufferLoad(A, (vk,))), (i32(0),)),
        lambda vk: tir.BufferStore(S, f32(0.0), (i32(0),)))))
    assert _kinds(DefaultCPUSchedule(min_work=1).run(func)) == ["serial"]


def test_work_estimate():
    assert estimated_work(matmul_func(4, 5, 6).body) == 120


def test_pipeline_uses_it_for_llvm_unless_single_core():
    big = matmul_func(128, 128, 32)
    assert "parallel" in _kinds(lower_for_codegen(big, Target.parse("llvm")))
    assert "parallel" not in _kinds(lower_for_codegen(big, Target.parse("llvm -num-cores=1")))
    assert "parallel" not in _kinds(lower_for_codegen(matmul_func(8, 8, 8), Target.parse("llvm")))


def test_parallel_nest_lowered_computes_the_same():
    func = DefaultCPUSchedule(min_work=1).run(matmul_func(12, 10, 8))
    lowered = lower_for_codegen(func, Target.parse("llvm"))
    assert _kinds(lowered) == ["parallel", "serial", "serial"]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((12, 8)).astype(np.float32), rng.standard_normal((8, 10)).astype(np.float32)
    c = np.zeros((12, 10), np.float32)
    run(lowered, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
