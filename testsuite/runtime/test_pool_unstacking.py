"""A pool worker that finds itself on its caller's CPU moves to another one (thread_pool.ll, leave_caller_cpu).

The scheduler sometimes puts the calling thread and the pool's worker on one CPU while
another idles, and leaves them there for milliseconds: each launch then runs at one
thread's speed. The test makes that happen on purpose: it pins the calling thread to
the CPU the worker ran its block on, then runs launches whose iterations record the
CPU and thread they ran on (sched_getcpu, pthread_self) around a busy loop (no sleep,
so no wake-up places a thread anew). The first iteration the worker ran must be on
another CPU than the caller's: before the change it ran next to the caller. On a
machine too busy for the worker to join any launch the test skips.
"""

import os

import numpy as np
import pytest

from relax.codegen import build_host_library
from relax.ir import FrozenDict, tir
from relax.runtime.kernels import thread_pool

from test_pool_affinity import caller_thread

N = 32  # iterations: participant 0 (the caller) owns 0-15, participant 1 (the worker) 16-31
SPINS = 200_000  # busy iterations per recorded one: about 0.1-0.3 ms


def _cpus_kernel() -> tir.PrimFunc:
    """CPU[i] = sched_getcpu() and WHO[i] = pthread_self() after a busy loop, over a parallel
    loop of N iterations."""
    i64 = lambda v: tir.IntImm("int64", v)  # noqa: E731
    cpu_data, who_data, acc_data = tir.Var("CPU", "handle"), tir.Var("WHO", "handle"), tir.Var("acc", "handle")
    cpu = tir.Buffer("CPU", (i64(N),), "int32", data=cpu_data)
    who = tir.Buffer("WHO", (i64(N),), "uint64", data=who_data)
    acc = tir.Buffer("acc", (i64(1),), "int64", data=acc_data)
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    spin = tir.For(j, i64(0), i64(SPINS), "serial",
                   tir.BufferStore(acc, tir.Add(tir.Mul(tir.BufferLoad(acc, (i64(0),)), i64(3)), i64(1)), (i64(0),)))
    # acc is never -1: the test keeps the busy loop from being removed
    record = tir.Call("int32", "tir.call_extern", (tir.StringImm("sched_getcpu"),))
    value = tir.Select(tir.EQ(tir.BufferLoad(acc, (i64(0),)), i64(-1)), tir.IntImm("int32", -2), record)
    body = tir.SeqStmt((tir.BufferStore(acc, i64(1), (i64(0),)), spin, tir.BufferStore(cpu, value, (i,)),
                        tir.BufferStore(who, tir.Call("uint64", "tir.call_extern", (tir.StringImm("pthread_self"),)),
                                        (i,))))
    alloc = tir.Allocate(acc_data, "int64", (i64(1),), tir.const(True), tir.DeclBuffer(acc, body),
                         annotations=FrozenDict(storage="stack"))
    loop = tir.For(i, i64(0), i64(N), "parallel", alloc)
    return tir.PrimFunc((cpu_data, who_data), loop, buffer_map=((cpu_data, cpu), (who_data, who)),
                        attrs=FrozenDict({"tir.noalias": True}))


def _launch(lib):
    cpus, who = np.full(N, -1, np.int32), np.zeros(N, np.uint64)
    lib.get_function("cpus")(cpus, who)
    mine = who == caller_thread()
    # the worker's iterations in its own block (16-31), which it runs first, in order
    return cpus[mine], cpus[N // 2:][~mine[N // 2:]]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs two CPUs this process may run on")
def test_worker_leaves_the_callers_cpu():
    lib = build_host_library({"cpus": _cpus_kernel()})
    lib.parallel_threshold_bytes = 0
    lib.num_threads = 2
    allowed = os.sched_getaffinity(0)
    thread_pool.set_max_backoff(0)
    thread_pool.set_spin(200_000)  # the worker stays awake (spinning) between launches
    checked = 0
    try:
        for _ in range(20):
            os.sched_setaffinity(0, allowed)
            _, worker_cpus = _launch(lib)
            if not len(worker_cpus):
                continue  # the worker did not join that launch
            os.sched_setaffinity(0, {int(worker_cpus[0])})  # the caller joins the worker's CPU
            caller_cpus, worker_cpus = _launch(lib)
            assert len(set(caller_cpus.tolist())) == 1, "the pinned caller moved"
            if len(worker_cpus):
                checked += 1
                # The worker's first iteration, right after it joined: later ones may find it
                # moved back by a scheduler balancing a loaded machine.
                assert worker_cpus[0] != caller_cpus[0], (caller_cpus, worker_cpus)
    finally:
        os.sched_setaffinity(0, allowed)
        thread_pool.set_spin(thread_pool.spin_from_environment())
        thread_pool.set_max_backoff(thread_pool.MAX_BACKOFF)
    if not checked:
        pytest.skip("the machine is too busy: the worker joined none of the launches next to the pinned caller")
