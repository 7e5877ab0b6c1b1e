"""The thread pool's cache affinity, stealing and spin policy, and the fast path of parallel kernels.

Participant p of a launch (the calling thread is 0, pool worker i is i) runs its own
block of chunks first, so the same thread reads the same data launch after launch; a
busy or absent participant's chunks are taken by the others; idle workers spin for a
time (RELAX_POOL_SPIN_US) and then sleep; parallel kernels with static shapes take the
fast call path with ctx->num_threads from the library (RELAX_NUM_THREADS). Objects
built before the participant argument (a one-argument trampoline) still run.

`python testsuite/runtime/test_pool_affinity.py --write-old-object` with a toolchain from
before the participant argument (commit 64a0d3d) first on PYTHONPATH wrote
data/pool_one_argument_trampoline.ko from old_object_kernels() below.
"""

import os
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from relax.codegen import build_host_library
from relax.diagnostics import UserError
from relax.ir import FrozenDict, tir
from relax.runtime.kernels import load_kernel_file
from relax.runtime.kernels import thread_pool
from relax.runtime.kernels import fast_call
from relax.runtime.kernels.object_symbols import undefined_symbols

OLD_OBJECT = pathlib.Path(__file__).parent / "data" / "pool_one_argument_trampoline.ko"


def i64(value):
    return tir.IntImm("int64", value)


def param(name, dtype, shape):
    data = tir.Var(name, "handle")
    return data, tir.Buffer(name, tuple(i64(d) if isinstance(d, int) else d for d in shape), dtype, data=data)


def kernel(params, body):
    buffer_map = tuple(p for p in params if isinstance(p, tuple))
    return tir.PrimFunc(tuple(p[0] if isinstance(p, tuple) else p for p in params), body,
                        buffer_map=buffer_map, attrs=FrozenDict({"tir.noalias": True}))


def loop(var, extent, body, kind="serial"):
    return tir.For(var, i64(0), extent if not isinstance(extent, int) else i64(extent), kind, body)


def load(buffer, index):
    return tir.BufferLoad(buffer, (index,))


def store(buffer, index, value):
    return tir.BufferStore(buffer, value, (index,))


def extern(dtype, name, *args):
    return tir.Call(dtype, "tir.call_extern", (tir.StringImm(name),) + args)


def scaled_add(kind, n=None):
    """C[i] = A[i] * 3 + B[i] over a symbolic (or given) length."""
    n = tir.Var("n", "int64") if n is None else i64(n)
    a, b, c = param("A", "float32", (n,)), param("B", "float32", (n,)), param("C", "float32", (n,))
    i = tir.Var("i", "int64")
    body = store(c[1], i, tir.Add(tir.Mul(load(a[1], i), tir.FloatImm("float32", 3.0)), load(b[1], i)))
    return kernel([a, b, c], loop(i, n, body, kind))


def nested_sums(outer, inner):
    """S[i] = sum_j A[i * 211 + j] * 0.5 + 1 over 97 x 211; the inner loop accumulates in S itself."""
    rows, cols = 97, 211
    a, s = param("A", "float32", (rows * cols,)), param("S", "float32", (rows,))
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    term = tir.Mul(load(a[1], tir.Add(tir.Mul(i, i64(cols)), j)), tir.FloatImm("float32", 0.5))
    body = tir.SeqStmt((store(s[1], i, tir.FloatImm("float32", 1.0)),
                        loop(j, cols, store(s[1], i, tir.Add(load(s[1], i), term)), inner)))
    return kernel([a, s], loop(i, rows, body, outer))


def thread_ids(n, nap_us, slow=None, slow_us=0):
    """T[i] = pthread_self() after a nap of nap_us (slow_us for iteration `slow`): who ran what."""
    out = param("T", "uint64", (n,))
    i = tir.Var("i", "int64")
    nap = tir.IntImm("uint32", nap_us)
    if slow is not None:
        nap = tir.Select(tir.EQ(i, i64(slow)), tir.IntImm("uint32", slow_us), nap)
    record = store(out[1], i, extern("uint64", "pthread_self"))
    return kernel([out], loop(i, n, tir.SeqStmt((tir.Evaluate(extern("int32", "usleep", nap)), record)), "parallel"))


def old_object_kernels():
    return {"add_parallel": scaled_add("parallel"), "who": thread_ids(32, 500)}


# 32 iterations in 2 x 4 chunks of 4 on 2 threads: participant 0 owns iterations 0-15, participant 1 16-31.
AFFINITY_N = 32


@pytest.fixture(scope="module", autouse=True)
def no_backoff():
    """Every launch uses the pool, so that a loaded machine cannot make a test see one thread."""
    thread_pool.set_max_backoff(0)
    yield
    thread_pool.set_max_backoff(thread_pool.MAX_BACKOFF)


@pytest.fixture(scope="module")
def library():
    lib = build_host_library({
        "add_serial": scaled_add("serial"), "add_parallel": scaled_add("parallel"),
        "nested_serial": nested_sums("serial", "serial"), "nested_parallel": nested_sums("parallel", "parallel"),
        "who": thread_ids(AFFINITY_N, 2000), "slow_block": thread_ids(AFFINITY_N, 500, slow=16, slow_us=60000),
    })
    lib.parallel_threshold_bytes = 0  # the kernels' own rule decides, not the loader's size gate
    return lib


def caller_thread() -> int:
    import ctypes

    self_id = ctypes.CDLL(None).pthread_self
    self_id.restype = ctypes.c_ulong
    return self_id()


def test_each_thread_keeps_its_block_across_launches(library):
    """With 2 threads the caller runs iterations 0-15 and one and the same pool worker 16-31,
    launch after launch (one shared counter handed chunks out alternately instead). A
    launch the worker joined late (the machine is shared) may be mixed: most must not be."""
    library.num_threads = 2
    me = caller_thread()
    workers, clean = set(), 0
    for _ in range(12):
        ran = np.zeros(AFFINITY_N, np.uint64)
        library.get_function("who")(ran)
        first, second = set(ran[:16].tolist()), set(ran[16:].tolist())
        if first == {me} and len(second) == 1 and me not in second:
            clean += 1
            workers |= second
    assert clean >= 6, f"only {clean} of 12 launches ran each block on its own thread"
    assert len(workers) == 1, "the second block moved between pool workers"


def test_busy_participant_chunks_are_stolen(library):
    """Iteration 16 (in 16-19, the first chunk of participant 1's block) naps 60 ms, the
    others 0.5 ms: whichever thread holds that chunk, the other runs the rest of the block
    (20-31) instead of leaving it queued behind the slow chunk."""
    library.num_threads = 2
    both = 0
    for _ in range(3):
        ran = np.zeros(AFFINITY_N, np.uint64)
        start = time.perf_counter()
        library.get_function("slow_block")(ran)
        elapsed = time.perf_counter() - start
        if len(set(ran.tolist())) == 1:
            continue  # the worker never joined this launch: nothing to steal from
        both += 1
        slow = int(ran[16])
        assert set(ran[16:20].tolist()) == {slow}
        assert slow not in set(ran[20:].tolist()), ran
        assert elapsed >= 0.06
    assert both >= 1, "no launch ran on two threads"


@pytest.mark.parametrize("threads", [2, 4])
def test_nested_parallel_loops_equal_serial(library, threads):
    library.num_threads = threads
    a = np.random.default_rng(5).standard_normal(97 * 211).astype(np.float32)
    expected, out = np.zeros(97, np.float32), np.full(97, np.nan, np.float32)
    library.get_function("nested_serial")(a, expected)
    library.get_function("nested_parallel")(a, out)  # the inner parallel loop runs serially
    np.testing.assert_array_equal(out, expected)


def test_idle_workers_sleep_after_the_spin_span(library):
    """After its last launch the process burns at most about the spin span of CPU, not more:
    the spin is time, so a sleeping process costs nothing."""
    library.num_threads = 2
    n = 50021
    a, b, out = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    try:
        thread_pool.set_spin(2000)
        for _ in range(20):
            library.get_function("add_parallel")(a, b, out)
        before = thread_times()
        time.sleep(0.3)
        after = thread_times()
    finally:
        thread_pool.set_spin(thread_pool.spin_from_environment())
    burnt = {tid: after[tid] - before.get(tid, 0) for tid in after}
    assert sum(burnt.values()) < 10, f"threads used CPU (clock ticks) in 300 ms of idleness: {burnt}"


def thread_times() -> dict[int, int]:
    """utime + stime (clock ticks) of each thread of this process."""
    times = {}
    for task in pathlib.Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        times[int(task.name)] = int(fields[11]) + int(fields[12])
    return times


@pytest.mark.parametrize("value", ["-1", "ten", "2000000"])
def test_bad_spin_setting_is_a_user_error(monkeypatch, value):
    monkeypatch.setenv(thread_pool.SPIN_ENV, value)
    with pytest.raises(UserError, match="RELAX_POOL_SPIN_US"):
        thread_pool.spin_from_environment()


def test_spin_setting_from_the_environment(monkeypatch):
    monkeypatch.setenv(thread_pool.SPIN_ENV, "750")
    assert thread_pool.spin_from_environment() == 750
    monkeypatch.delenv(thread_pool.SPIN_ENV)
    assert thread_pool.spin_from_environment() == thread_pool.DEFAULT_SPIN_US


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_kernel_takes_the_fast_path_with_the_library_threads(threads):
    """A parallel kernel with static shapes gets a fast call, whose context has the library's
    thread count (RELAX_NUM_THREADS at load): one thread ran everything, or two did."""
    lib = build_host_library({"who": thread_ids(AFFINITY_N, 2000), "add": scaled_add("parallel", 70001)})
    lib.parallel_threshold_bytes = 0
    lib.num_threads = threads
    who = fast_call.make_fast_call(lib.get_function("who"))
    assert who is not None and fast_call.static_threads(lib.get_function("who")) == threads
    seen = set()
    for _ in range(5):
        ran = np.zeros(AFFINITY_N, np.uint64)
        assert who(ran) is None
        seen |= set(ran.tolist())
    assert len(seen) == 1 if threads == 1 else len(seen) == 2
    add = fast_call.make_fast_call(lib.get_function("add"))
    a, b = np.random.default_rng(7).standard_normal((2, 70001)).astype(np.float32)
    out = np.zeros(70001, np.float32)
    add(a, b, out)
    np.testing.assert_array_equal(out, a * np.float32(3) + b)
    with pytest.raises(Exception, match="dimension 0 must be 70001"):
        add(a[:5], b[:5], out[:5])  # a failed check goes to the checked path, which reports it


def test_num_threads_follows_the_environment(monkeypatch):
    monkeypatch.setenv("RELAX_NUM_THREADS", "1")
    lib = build_host_library({"add": scaled_add("parallel", 70001)})
    assert fast_call.static_threads(lib.get_function("add")) == 1
    monkeypatch.setenv("RELAX_NUM_THREADS", "2")
    lib = build_host_library({"add": scaled_add("parallel", 70001)})
    assert fast_call.static_threads(lib.get_function("add")) == 2
    small = build_host_library({"add": scaled_add("parallel", 7)})
    assert fast_call.static_threads(small.get_function("add")) == 1  # under parallel_threshold_bytes


def test_object_with_a_one_argument_trampoline_still_runs():
    """Built before the participant argument: the pool's extra argument is ignored (C calling
    conventions), and its chunks come from one shared counter as before."""
    lib = load_kernel_file(str(OLD_OBJECT))
    assert thread_pool.POOL_LAUNCH in undefined_symbols(lib.kernel_object.objects[0])
    lib.parallel_threshold_bytes = 0
    rng = np.random.default_rng(9)
    for threads in (1, 2, 3):
        lib.num_threads = threads
        for n in (1, 13, 40009):
            a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
            out = np.full(n, np.nan, np.float32)
            lib.get_function("add_parallel")(a, b, out)
            np.testing.assert_array_equal(out, a * np.float32(3) + b)
    lib.num_threads = 2
    used = set()
    for _ in range(3):
        ran = np.zeros(32, np.uint64)
        lib.get_function("who")(ran)
        used |= set(ran.tolist())
    assert len(used) == 2


def test_pool_in_a_fresh_process_reads_the_spin_setting():
    code = ("from relax.runtime.kernels import thread_pool as t; t.ensure_pool(); "
            "print(t.spin_from_environment())")
    env = dict(os.environ, RELAX_POOL_SPIN_US="123")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "123"
    env[thread_pool.SPIN_ENV] = "x"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "RELAX_POOL_SPIN_US" in result.stderr


if __name__ == "__main__" and sys.argv[1:] == ["--write-old-object"]:
    from relax.codegen.build_kernels import build_kernel_object

    OLD_OBJECT.parent.mkdir(exist_ok=True)
    OLD_OBJECT.write_bytes(build_kernel_object(old_object_kernels(), ["llvm"]))
