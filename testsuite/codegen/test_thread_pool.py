"""The process-wide thread pool of parallel kernels (runtime/kernels/thread_pool.py).

Parallel results equal serial ones; many launches in a row and from several
Python threads at once finish; the too-small-to-gain rule; RELAX_NUM_THREADS=1;
a fork; and an object built before the pool (its own pthread launcher) still runs.
"""

import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest
from codegen_tir import flat, i64, kernel, load, loop, param, store
from test_parallel import row_sums

from relax.codegen import build_host_library, emit_llvm_ir
from relax.codegen.parallel import SERIAL_WORK, work_per_iteration
from relax.ir import tir
from relax.runtime.kernels import load_kernel_file
from relax.runtime.kernels.object_symbols import undefined_symbols
from relax.runtime.kernels.thread_pool import MAX_BACKOFF, POOL_LAUNCH, set_max_backoff

OLD_OBJECT = pathlib.Path(__file__).parent / "data" / "abi1_parallel_launcher.ko"


def scaled_add(kind, n=None):
    """C[i] = A[i] * 3 + B[i] over a symbolic (or given) length."""
    n = tir.Var("n", "int64") if n is None else n
    a, b, c = param("A", "float32", (n,)), param("B", "float32", (n,)), param("C", "float32", (n,))
    i = tir.Var("i", "int64")
    body = store(c[1], i, tir.Add(tir.Mul(load(a[1], i), tir.FloatImm("float32", 3.0)), load(b[1], i)))
    return kernel([a, b, c], loop(i, n, body, kind))


def transpose_scale(kind, rows=37, cols=1029):
    """B[j, i] = A[i, j] * 2 with a static shape: parallel rows, serial columns."""
    a, b = param("A", "float64", (rows, cols)), param("B", "float64", (cols, rows))
    fa, fb = flat(a[1], i64(rows * cols)), flat(b[1], i64(rows * cols))
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    value = tir.Mul(load(fa, tir.Add(tir.Mul(i, i64(cols)), j)), tir.FloatImm("float64", 2.0))
    body = loop(j, i64(cols), store(fb, tir.Add(tir.Mul(j, i64(rows)), i), value))
    return kernel([a, b], loop(i, i64(rows), body, kind))


def thread_ids(n=64):
    """T[i] = pthread_self() after a 1 ms nap: which native threads ran which iterations."""
    out = param("T", "uint64", (n,))
    i = tir.Var("i", "int64")
    nap = tir.Evaluate(tir.Call("int32", "tir.call_extern", (tir.StringImm("usleep"), tir.IntImm("uint32", 1000))))
    record = store(out[1], i, tir.Call("uint64", "tir.call_extern", (tir.StringImm("pthread_self"),)))
    return kernel([out], loop(i, i64(n), tir.SeqStmt((nap, record)), "parallel"))


@pytest.fixture(scope="module", autouse=True)
def no_backoff():
    """Every launch uses the pool, so that a loaded machine cannot make a test see one thread."""
    set_max_backoff(0)
    yield
    set_max_backoff(MAX_BACKOFF)


@pytest.fixture(scope="module")
def library():
    lib = build_host_library({
        "add_serial": scaled_add("serial"), "add_parallel": scaled_add("parallel"),
        "tr_serial": transpose_scale("serial"), "tr_parallel": transpose_scale("parallel"),
        "rows_serial": row_sums("serial"), "rows_nested": row_sums("parallel", "parallel"),
        "who": thread_ids(),
    })
    lib.parallel_threshold_bytes = 0  # the kernels' own rule decides, not the loader's size gate
    return lib


@pytest.mark.parametrize("threads", [2, 3, 5])
@pytest.mark.parametrize("n", [1, 7, 13, 1023, 100003])
def test_parallel_equals_serial_odd_sizes(library, threads, n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    library.num_threads = threads
    expected, out = np.zeros(n, np.float32), np.full(n, np.nan, np.float32)
    library.get_function("add_serial")(a, b, expected)
    library.get_function("add_parallel")(a, b, out)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(out, a * 3 + b, rtol=1e-6)


@pytest.mark.parametrize("threads", [2, 4])
def test_static_two_level_and_nested_loops_equal_serial(library, threads):
    library.num_threads = threads
    x = np.random.default_rng(3).standard_normal((37, 1029))
    expected, out = np.zeros((1029, 37)), np.full((1029, 37), np.nan)
    library.get_function("tr_serial")(x, expected)
    library.get_function("tr_parallel")(x, out)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(out, x.T * 2)
    rows = np.random.default_rng(4).standard_normal((301, 129)).astype(np.float32)
    want, got = np.zeros(301, np.float32), np.full(301, np.nan, np.float32)
    library.get_function("rows_serial")(rows, 0.25, -1.0, want)
    library.get_function("rows_nested")(rows, 0.25, -1.0, got)  # the inner parallel loop runs serially
    np.testing.assert_array_equal(got, want)


def test_ten_thousand_launches_in_a_row(library):
    library.num_threads = 2
    n = 20011
    a = np.arange(n, dtype=np.float32)
    b = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    function = library.get_function("add_parallel")
    for step in range(10000):
        b[step % n] = step
        function(a, b, out)
        assert out[step % n] == a[step % n] * 3 + step
    np.testing.assert_array_equal(out, a * 3 + b)


def test_launches_from_several_python_threads_at_once(library):
    """One launch owns the pool at a time; the others run on their own thread; none waits forever."""
    library.num_threads = 3
    n = 50021
    a = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    b = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    expected = a * 3 + b
    failures = []

    def work(seed):
        out = np.zeros(n, np.float32)
        ids = np.zeros(64, np.uint64)
        for step in range(1500):
            out[:] = 0
            library.get_function("add_parallel")(a, b, out)
            if not np.allclose(out, expected, rtol=1e-6):
                failures.append((seed, step))
            if step % 500 == 0:
                library.get_function("who")(ids)

    workers = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers), "a launch never returned"
    assert failures == []


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_chunks_are_shared_by_pool_threads(library, threads):
    library.num_threads = threads
    first, second = np.zeros(64, np.uint64), np.zeros(64, np.uint64)
    library.get_function("who")(first)
    library.get_function("who")(second)
    used = set(first.tolist())
    assert len(used) == 1 if threads == 1 else 2 <= len(used) <= threads
    assert len(set(second.tolist())) == len(used) if threads == 1 else 2 <= len(set(second.tolist())) <= threads


def test_small_static_loop_is_compiled_serial():
    small = scaled_add("parallel", n=i64(64))
    assert 64 * work_per_iteration(small.body.body) < SERIAL_WORK
    assert POOL_LAUNCH not in emit_llvm_ir({"k": small})
    lib = build_host_library({"k": small})
    assert not lib.get_function("k").info.parallel
    a, b, out = np.arange(64, dtype=np.float32), np.ones(64, np.float32), np.zeros(64, np.float32)
    lib.get_function("k")(a, b, out)
    np.testing.assert_array_equal(out, a * 3 + 1)
    large = scaled_add("parallel", n=i64(1 << 20))
    assert POOL_LAUNCH in emit_llvm_ir({"k": large})


def test_work_estimate_counts_inner_trips_and_extern_calls():
    j = tir.Var("j", "int64")
    a = param("A", "float32", (1000,))
    leaf = store(a[1], j, tir.FloatImm("float32", 1.0))
    one = work_per_iteration(leaf)
    assert work_per_iteration(loop(j, i64(10), leaf)) == 1 + 10 * one
    assert work_per_iteration(loop(j, tir.Var("n", "int64"), leaf)) > work_per_iteration(loop(j, i64(10), leaf))
    call = tir.Evaluate(tir.Call("int32", "tir.call_extern", (tir.StringImm("usleep"), tir.IntImm("uint32", 1))))
    assert work_per_iteration(call) > 100 * one


def test_capped_work_estimate_is_the_estimate_up_to_the_cap():
    # The code generator only needs min(work, SERIAL_WORK) and stops counting there.
    j, k = tir.Var("j", "int64"), tir.Var("k", "int64")
    a = param("A", "float32", (1000,))
    leaf = store(a[1], j, tir.FloatImm("float32", 1.0))
    call = tir.Evaluate(tir.Call("int32", "tir.call_extern", (tir.StringImm("usleep"), tir.IntImm("uint32", 1))))
    nests = [leaf, call, loop(j, i64(10), leaf), loop(k, i64(7), tir.SeqStmt((loop(j, i64(10), leaf), call))),
             loop(k, tir.Var("n", "int64"), loop(j, i64(3), leaf)), loop(j, i64(0), leaf)]
    for nest in nests:
        full = work_per_iteration(nest)
        for cap in (1, 2, 5, full - 1, full, full + 1, 4095, 4096, 4097, SERIAL_WORK):
            if cap >= 1:
                assert work_per_iteration(nest, cap) == min(full, cap), (nest, cap)


def test_symbolic_small_loop_runs_on_the_calling_thread():
    """Iterations below the run-time bound do not launch: a tiny symbolic loop records one thread."""
    n = tir.Var("n", "int64")
    out = param("T", "uint64", (n,))
    i = tir.Var("i", "int64")
    record = store(out[1], i, tir.Call("uint64", "tir.call_extern", (tir.StringImm("pthread_self"),)))
    lib = build_host_library({"who": kernel([out], loop(i, n, record, "parallel"))})
    lib.parallel_threshold_bytes = 0
    lib.num_threads = 4
    few = np.zeros(4, np.uint64)   # 4 x ~4100 units of work: serial
    lib.get_function("who")(few)
    assert len(set(few.tolist())) == 1
    many = np.zeros(4096, np.uint64)
    lib.get_function("who")(many)
    assert len(set(many.tolist())) >= 1  # may use the pool; must finish and fill every slot
    assert np.all(many != 0)


def _run_python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env}, cwd=pathlib.Path(__file__).parent)


PROGRAM = """
import numpy as np
from test_thread_pool import thread_ids
from relax.codegen import build_host_library
from relax.runtime.kernels.thread_pool import set_max_backoff
set_max_backoff(0)
lib = build_host_library({"who": thread_ids()})
lib.parallel_threshold_bytes = 0
ids = np.zeros(64, np.uint64)
lib.get_function("who")(ids)
print(lib.num_threads, len(set(ids.tolist())))
"""


def test_relax_num_threads_one_runs_serially():
    result = _run_python(PROGRAM, RELAX_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "1"]


def test_a_forked_child_starts_its_own_pool():
    code = PROGRAM + """
import os
pid = os.fork()
if pid == 0:
    lib.num_threads = 2
    ids[:] = 0
    lib.get_function("who")(ids)
    os._exit(0 if len(set(ids.tolist())) == 2 and np.all(ids != 0) else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""
    result = _run_python(code, RELAX_NUM_THREADS="2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["child", "0"]


def test_object_built_before_the_pool_still_runs():
    """An ABI 1 object whose parallel loops start their own pthreads (built by the previous toolchain)."""
    lib = load_kernel_file(str(OLD_OBJECT))
    code = lib.kernel_object.objects[0]
    assert "pthread_create" in undefined_symbols(code) and POOL_LAUNCH not in undefined_symbols(code)
    lib.parallel_threshold_bytes = 0
    x = np.random.default_rng(11).standard_normal((257, 33)).astype(np.float32)
    expected = np.zeros(257, np.float32)
    lib.get_function("serial")(x, 0.5, 1.0, expected)
    np.testing.assert_allclose(expected, x.sum(axis=1) * 0.5 + 1.0, rtol=1e-5, atol=1e-5)
    for threads in (1, 2, 3):
        lib.num_threads = threads
        for name in ("parallel", "nested"):
            out = np.full(257, np.nan, np.float32)
            lib.get_function(name)(x, 0.5, 1.0, out)
            np.testing.assert_array_equal(out, expected)
    bitcode_lib = load_kernel_file(str(OLD_OBJECT), prefer="bitcode")
    bitcode_lib.parallel_threshold_bytes = 0
    bitcode_lib.num_threads = 2
    out = np.zeros(257, np.float32)
    bitcode_lib.get_function("parallel")(x, 0.5, 1.0, out)
    np.testing.assert_array_equal(out, expected)
