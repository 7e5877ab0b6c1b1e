"""Where a parallel loop starts to pay: the measurement behind parallel.SERIAL_WORK.

    .venv/bin/python bench/parallel_threshold.py [--threads 2] [--repeat 2000]

Builds three parallel kernels with the too-small rule switched off (SERIAL_WORK = 0)
and times each on 1 thread and on --threads threads over a range of sizes; prints
the time of both, and the estimated work (iterations x work_per_iteration, the
unit SERIAL_WORK counts in) where the parallel run first becomes faster and stays
faster. Times are the best of --repeat calls; a call is the Python wrapper plus
the kernel, the same on both sides. Also prints the cost of one pool launch (a
loop of 2 iterations on --threads threads minus the same on 1 thread).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from relax.codegen import build_host_library, parallel
from relax.ir import FrozenDict, tir


def _param(name, n, dtype="float32"):
    data = tir.Var(name, "handle")
    return data, tir.Buffer(name, (n,), dtype, data=data)


def _kernel(name, compute):
    n = tir.Var("n", "int64")
    (da, a), (db, b) = _param("A", n), _param("B", n)
    i = tir.Var("i", "int64")
    body = tir.BufferStore(b, compute(tir.BufferLoad(a, (i,))), (i,))
    loop = tir.For(i, tir.IntImm("int64", 0), n, "parallel", body)
    func = tir.PrimFunc((da, db), loop, buffer_map=((da, a), (db, b)), attrs=FrozenDict({"tir.noalias": True}))
    return func, parallel.work_per_iteration(body)


KERNELS = {
    "scale": lambda x: tir.Mul(x, tir.FloatImm("float32", 3.0)),
    "poly": lambda x: tir.Add(tir.Mul(tir.Add(tir.Mul(x, x), x), x), tir.FloatImm("float32", 1.0)),
    "tanh": lambda x: tir.Call("float32", "tir.tanh", (x,)),
}


def _best(function, args, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    saved, parallel.SERIAL_WORK = parallel.SERIAL_WORK, 0
    try:
        built = {name: _kernel(name, compute) for name, compute in KERNELS.items()}
        lib = build_host_library({name: func for name, (func, _) in built.items()})
    finally:
        parallel.SERIAL_WORK = saved
    lib.parallel_threshold_bytes = 0
    tiny = np.ones(2, np.float32), np.zeros(2, np.float32)
    lib.num_threads = 1
    one = _best(lib.get_function("scale"), tiny, args.repeat)
    lib.num_threads = args.threads
    many = _best(lib.get_function("scale"), tiny, args.repeat)
    print(f"pool launch on {args.threads} threads: {(many - one) * 1e6:.2f} us "
          f"over a serial call of {one * 1e6:.2f} us")
    print(f"SERIAL_WORK now {parallel.SERIAL_WORK}")
    print(f"{'kernel':8} {'work/it':>7} {'n':>9} {'work':>10} {'1 thread':>10} {f'{args.threads} threads':>10}")
    for name, (_, cost) in built.items():
        function = lib.get_function(name)
        crossover = None
        for n in [1 << k for k in range(6, 21)]:
            a, b = np.random.default_rng(n).standard_normal(n).astype(np.float32), np.zeros(n, np.float32)
            repeat = max(20, args.repeat >> max(0, (n.bit_length() - 12)))
            lib.num_threads = 1
            serial = _best(function, (a, b), repeat)
            lib.num_threads = args.threads
            threaded = _best(function, (a, b), repeat)
            if threaded < serial and crossover is None:
                crossover = n * cost
            elif threaded >= serial:
                crossover = None
            print(f"{name:8} {cost:7d} {n:9d} {n * cost:10d} {serial * 1e6:8.2f}us {threaded * 1e6:8.2f}us")
        print(f"{name}: parallel faster from about {crossover} units of work")


if __name__ == "__main__":
    main()
