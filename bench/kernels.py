"""Benchmark of generated CPU kernels against the machine's memory bandwidth and numpy.

    .venv/bin/python bench/kernels.py [--size 16777216] [--repeat 7]

Reports, measured side by side in one run:
  - copy bandwidth of numpy (np.copyto), the ceiling for a streaming kernel
  - elementwise add of two float32 vectors (serial loop), as a fraction of that ceiling
  - the same add as a parallel loop on 1 and on 2 threads (speed-up)
  - a sum reduction (serial, and parallel in two stages) against np.sum
  - the fixed cost of a call, and of starting and joining one more thread
  - a libm-heavy elementwise tanh (vectorized through libmvec on x86-64 Linux)
  - a control: sha256 in two Python threads, showing how much parallelism the
    machine offers at that moment (on a loaded machine, speed-ups cannot show)
  - the build time of samples/custom_kernel.relax (parse, lower, O3, object, load)
Times are the best of --repeat runs. Bandwidth counts the bytes each kernel must
move: two reads and one write for add, one read and one write for copy.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

from relax.codegen import build_host_library
from relax.ir import FrozenDict, tir
from relax.runtime.kernels.library import PARALLEL_THRESHOLD_BYTES

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _i64(value):
    return tir.IntImm("int64", value)


def _param(name, n):
    data = tir.Var(name, "handle")
    return data, tir.Buffer(name, (n,), "float32", data=data)


def _func(params, body):
    return tir.PrimFunc(tuple(p[0] for p in params), body, buffer_map=tuple(params),
                        attrs=FrozenDict({"tir.noalias": True}))


def add_kernel(kind):
    n = tir.Var("n", "int64")
    a, b, c = _param("A", n), _param("B", n), _param("C", n)
    i = tir.Var("i", "int64")
    value = tir.Add(tir.BufferLoad(a[1], (i,)), tir.BufferLoad(b[1], (i,)))
    return _func([a, b, c], tir.For(i, _i64(0), n, kind, tir.BufferStore(c[1], value, (i,))))


def tanh_kernel(kind):
    """B = tanh(A) * 0.5 + 0.5: a libm call per element, so compute-bound rather than memory-bound."""
    n = tir.Var("n", "int64")
    a, b = _param("A", n), _param("B", n)
    i = tir.Var("i", "int64")
    value = tir.Add(tir.Mul(tir.Call("float32", "tir.tanh", (tir.BufferLoad(a[1], (i,)),)),
                            tir.FloatImm("float32", 0.5)), tir.FloatImm("float32", 0.5))
    return _func([a, b], tir.For(i, _i64(0), n, kind, tir.BufferStore(b[1], value, (i,))))


def sum_kernel():
    """S[0] = sum(A): one accumulator, which LLVM keeps in vector registers (reassociation allowed)."""
    n = tir.Var("n", "int64")
    a, s = _param("A", n), _param("S", _i64(1))
    i = tir.Var("i", "int64")
    update = tir.BufferStore(s[1], tir.Add(tir.BufferLoad(s[1], (_i64(0),)), tir.BufferLoad(a[1], (i,))), (_i64(0),))
    body = tir.SeqStmt((tir.BufferStore(s[1], tir.FloatImm("float32", 0.0), (_i64(0),)),
                        tir.For(i, _i64(0), n, "serial", update)))
    return _func([a, s], body)


def parallel_sum_kernel(blocks=64):
    """P[b] = sum of block b of A (parallel over blocks), then S[0] = sum(P): n must divide by `blocks`."""
    n = tir.Var("n", "int64")
    a, s = _param("A", n), _param("S", _i64(1))
    partial_var = tir.Var("partial", "handle")
    partial = tir.Buffer("partial", (_i64(blocks),), "float32", data=partial_var)
    b, j = tir.Var("b", "int64"), tir.Var("j", "int64")
    width = tir.FloorDiv(n, _i64(blocks))
    acc = tir.Var("acc", "handle")
    acc_buffer = tir.Buffer("acc", (_i64(1),), "float32", data=acc)
    zero = tir.FloatImm("float32", 0.0)
    block_sum = tir.SeqStmt((
        tir.BufferStore(acc_buffer, zero, (_i64(0),)),
        tir.For(j, _i64(0), width, "serial", tir.BufferStore(
            acc_buffer, tir.Add(tir.BufferLoad(acc_buffer, (_i64(0),)),
                                tir.BufferLoad(a[1], (tir.Add(tir.Mul(b, width), j),))), (_i64(0),))),
        tir.BufferStore(partial, tir.BufferLoad(acc_buffer, (_i64(0),)), (b,)),
    ))
    stack = FrozenDict(storage="stack")
    per_block = tir.Allocate(acc, "float32", (_i64(1),), tir.const(True), tir.DeclBuffer(acc_buffer, block_sum),
                             annotations=stack)
    final = tir.SeqStmt((
        tir.BufferStore(s[1], zero, (_i64(0),)),
        tir.For(b, _i64(0), _i64(blocks), "serial", tir.BufferStore(
            s[1], tir.Add(tir.BufferLoad(s[1], (_i64(0),)), tir.BufferLoad(partial, (b,))), (_i64(0),))),
    ))
    body = tir.SeqStmt((tir.For(b, _i64(0), _i64(blocks), "parallel", per_block), final))
    alloc = tir.Allocate(partial_var, "float32", (_i64(blocks),), tir.const(True), tir.DeclBuffer(partial, body),
                         annotations=stack)
    return _func([a, s], alloc)


def best(function, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    n, repeat = args.size, args.repeat
    rng = np.random.default_rng(0)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.empty_like(x)
    megabytes = x.nbytes / 1e6

    library = build_host_library({"add": add_kernel("serial"), "add_parallel": add_kernel("parallel"),
                                  "sum": sum_kernel(), "sum_parallel": parallel_sum_kernel(),
                                  "tanh": tanh_kernel("serial"), "tanh_parallel": tanh_kernel("parallel")})
    add, add_parallel = library.get_function("add"), library.get_function("add_parallel")

    rows = []
    copy_time = best(lambda: np.copyto(out, x), repeat)
    copy_bandwidth = 2 * x.nbytes / copy_time / 1e9
    rows.append(("numpy copy (np.copyto)", copy_time, copy_bandwidth, ""))
    numpy_add = best(lambda: np.add(x, y, out=out), repeat)
    rows.append(("numpy add (np.add, out=)", numpy_add, 3 * x.nbytes / numpy_add / 1e9, ""))
    add(x, y, out)
    assert np.array_equal(out, x + y)
    add_time = best(lambda: add(x, y, out), repeat)
    add_bandwidth = 3 * x.nbytes / add_time / 1e9
    rows.append(("kernel add, serial loop", add_time, add_bandwidth,
                 f"{100 * add_bandwidth / copy_bandwidth:.0f}% of copy bandwidth"))
    parallel_times = {}
    for threads in (1, 2):
        library.num_threads = threads
        add_parallel(x, y, out)
        assert np.array_equal(out, x + y)
        parallel_times[threads] = best(lambda: add_parallel(x, y, out), repeat)
        note = "" if threads == 1 else f"speed-up {parallel_times[1] / parallel_times[2]:.2f}x over 1 thread"
        rows.append((f"kernel add, parallel loop, {threads} thread(s)", parallel_times[threads],
                     3 * x.nbytes / parallel_times[threads] / 1e9, note))

    total = np.zeros(1, np.float32)
    numpy_sum = best(lambda: np.sum(x), repeat)
    rows.append(("numpy sum (np.sum)", numpy_sum, x.nbytes / numpy_sum / 1e9, ""))
    library.get_function("sum")(x, total)
    reference = np.sum(x, dtype=np.float64)
    sum_error = abs(float(total[0]) - reference) / reference
    sum_time = best(lambda: library.get_function("sum")(x, total), repeat)
    rows.append(("kernel sum, serial", sum_time, x.nbytes / sum_time / 1e9,
                 f"{numpy_sum / sum_time:.2f}x numpy, rel. error {sum_error:.1e}"))
    for threads in (1, 2):
        library.num_threads = threads
        parallel_sum = best(lambda: library.get_function("sum_parallel")(x, total), repeat)
        rows.append((f"kernel sum, parallel, {threads} thread(s)", parallel_sum, x.nbytes / parallel_sum / 1e9,
                     f"{numpy_sum / parallel_sum:.2f}x numpy"))

    small = x[: n // 4]
    small_out = np.empty_like(small)
    numpy_tanh = best(lambda: np.tanh(small, out=small_out), repeat)
    rows.append((f"numpy tanh*0.5+0.5 ({small.size} elements)", numpy_tanh, 2 * small.nbytes / numpy_tanh / 1e9, ""))
    library.get_function("tanh")(small, small_out)
    assert np.allclose(small_out, np.tanh(small) * 0.5 + 0.5, rtol=1e-6)
    tanh_serial = best(lambda: library.get_function("tanh")(small, small_out), repeat)
    rows.append(("kernel tanh, serial", tanh_serial, 2 * small.nbytes / tanh_serial / 1e9, ""))
    tanh_times = {}
    for threads in (1, 2):
        library.num_threads = threads
        tanh_times[threads] = best(lambda: library.get_function("tanh_parallel")(small, small_out), repeat)
        note = "" if threads == 1 else f"speed-up {tanh_times[1] / tanh_times[2]:.2f}x over 1 thread"
        rows.append((f"kernel tanh, parallel loop, {threads} thread(s)", tanh_times[threads],
                     2 * small.nbytes / tanh_times[threads] / 1e9, note))

    # The fixed cost of a parallel loop: starting and joining one more thread, on a 64-element add.
    tiny = x[:64], y[:64], out[:64]
    library.parallel_threshold_bytes = 0
    launch = {}
    for threads in (1, 2):
        library.num_threads = threads
        launch[threads] = best(lambda: add_parallel(*tiny), repeat * 5)
    library.parallel_threshold_bytes = PARALLEL_THRESHOLD_BYTES
    rows.append(("kernel add, 64 elements, parallel, 1 thread", launch[1], 0.0, "the call's own cost"))
    rows.append(("kernel add, 64 elements, parallel, 2 threads", launch[2], 0.0,
                 f"+{(launch[2] - launch[1]) * 1e6:.0f} us to start and join a thread"))

    # Control: what two threads give on this machine right now, without our code:
    # hashlib releases the GIL for large inputs, so two Python threads hash in parallel.
    import hashlib
    import threading

    def two_hashes_threaded():
        threads = [threading.Thread(target=hashlib.sha256, args=(x.data,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    one = best(lambda: hashlib.sha256(x.data), repeat)
    two = best(two_hashes_threaded, repeat)
    rows.append(("control: 2x sha256 (64 MB) on 2 Python threads", two, 2 * x.nbytes / two / 1e9,
                 f"speed-up {2 * one / two:.2f}x over 1 thread (the machine's parallel capacity)"))

    print(f"{n} float32 elements ({megabytes:.0f} MB per vector), best of {repeat}")
    print(f"{'what':44} {'ms':>8} {'GB/s':>7}  notes")
    for name, seconds, bandwidth, note in rows:
        print(f"{name:44} {seconds * 1e3:8.2f} {bandwidth:7.1f}  {note}")

    sample = ROOT / "samples" / "custom_kernel.relax"
    if sample.exists():
        from relax.script import parse

        start = time.perf_counter()
        mod = parse(sample.read_text(), str(sample))
        parsed = time.perf_counter()
        build_host_library(mod)
        built = time.perf_counter()
        print(f"build samples/custom_kernel.relax ({len(mod.prim_funcs())} kernels): parse "
              f"{(parsed - start) * 1e3:.0f} ms, lower+codegen+O3+object+load {(built - parsed) * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
