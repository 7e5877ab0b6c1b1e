"""What a parallel launch costs: a kernel of two equal halves, on one thread and on two.

    python bench/pool_launch.py [--steps 250 1000] [--rounds 15]

The kernel's parallel loop has two iterations of `steps` x 16 dependent multiply-adds
each, on rows 32 KiB apart (no shared cache line, and enough bytes for the library's
parallel threshold). On two threads it would take half the one-thread time if a launch
were free; the difference is the launch's cost: waking the idle worker, its reading of
the launch and of the caller's closure, and the join. Printed for each sched_yield
cadence of the idle workers (thread_pool.set_spin's `yield_every`: at every clock read,
every 8th, the default, and never), the cadences alternated round by round in one
process, medians of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from relax.codegen import build_host_library  # noqa: E402
from relax.runtime.kernels import thread_pool  # noqa: E402
from relax.runtime.kernels.fast_call import make_fast_call  # noqa: E402
from relax.script import parse  # noqa: E402

COLUMNS = 8192
SOURCE = """
@I.ir_module
class Module:
    @T.prim_func
    def halves(x: T.Buffer((2, COLUMNS), "float32"), out: T.Buffer((2, COLUMNS), "float32")):
        for i in T.parallel(2):
            for j in range(16):
                out[i, j] = T.float32(0)
            for k, j in T.grid(STEPS, 16):
                out[i, j] = out[i, j] * x[i, j] + T.float32(1.0)
"""
CADENCES = {"every clock read": 1, f"every {thread_pool.YIELD_CHECKS}th (default)": thread_pool.YIELD_CHECKS,
            "never": 0}
CALLS = 1000


def kernels(steps: int):
    """The kernel built once, called with one thread and with two."""
    module = parse(SOURCE.replace("COLUMNS", str(COLUMNS)).replace("STEPS", str(steps)))
    calls = {}
    for threads in (1, 2):
        library = build_host_library(module.prim_funcs())
        library.num_threads = threads
        calls[threads] = make_fast_call(library.get_function("halves"))
    return calls


def per_call_us(call, args) -> float:
    for _ in range(50):
        call(*args)
    start = time.perf_counter_ns()
    for _ in range(CALLS):
        call(*args)
    return (time.perf_counter_ns() - start) / CALLS / 1e3


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[250, 1000])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    data = (np.full((2, COLUMNS), 0.5, np.float32), np.zeros((2, COLUMNS), np.float32))
    print("launch cost: two-thread time less half the one-thread time, median of "
          f"{args.rounds} rounds of {CALLS} calls")
    try:
        for steps in args.steps:
            calls = kernels(steps)
            times = {name: {1: [], 2: []} for name in CADENCES}
            for _ in range(args.rounds):
                for name, every in CADENCES.items():
                    thread_pool.set_spin(thread_pool.spin_from_environment(), yield_every=every)
                    for threads, call in calls.items():
                        times[name][threads].append(per_call_us(call, data))
            for name, measured in times.items():
                one, two = statistics.median(measured[1]), statistics.median(measured[2])
                print(f"  {steps:5d} steps  yield {name:<24} one thread {one:7.2f} us  two {two:7.2f} us  "
                      f"launch {two - one / 2:5.2f} us")
    finally:
        thread_pool.set_spin(thread_pool.spin_from_environment())


if __name__ == "__main__":
    main()
