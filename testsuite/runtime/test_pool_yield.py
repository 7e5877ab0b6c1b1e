"""Idle pool workers yield their core at the cadence set_spin gives them, never included.

thread_pool.set_spin(us, yield_every=N): a spinning worker calls sched_yield() at every
N-th clock read (every CLOCK_ROUNDS pauses), not at all for 0.
Each cadence here runs launches separated by pauses of a few hundred microseconds, so
that the worker spins through many clock reads between them (a cadence of 0 must not
divide by zero there), and every launch must compute every iteration; between launches
the worker is idle for that long and must still be there for the next.
"""

import time

import numpy as np
import pytest

from relax.codegen import build_host_library
from relax.runtime.kernels import thread_pool

from test_pool_affinity import caller_thread
from test_pool_unstacking import N, _cpus_kernel


@pytest.mark.parametrize("every", [0, 1, thread_pool.YIELD_CHECKS, 1000],
                         ids=["never", "every-read", "default", "rarely"])
def test_launches_run_at_every_yield_cadence(every):
    lib = build_host_library({"cpus": _cpus_kernel()})
    lib.parallel_threshold_bytes = 0
    lib.num_threads = 2
    thread_pool.set_spin(5_000, yield_every=every)
    try:
        threads = set()
        for _ in range(12):
            cpus, who = np.full(N, -1, np.int32), np.zeros(N, np.uint64)
            lib.get_function("cpus")(cpus, who)
            assert (cpus >= 0).all() and (who != 0).all(), "an iteration did not run"
            threads |= set(who.tolist())
            time.sleep(0.0003)  # the worker spins through clock reads (and yields) meanwhile
        assert caller_thread() in threads
    finally:
        thread_pool.set_spin(thread_pool.spin_from_environment())
