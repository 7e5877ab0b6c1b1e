"""Where a workload's time goes: each kernel's share of a run and its GFLOP/s.

bench/peers.py prints these rows under each workload's table, so that the kernel
that leaves the most behind is visible in the same run as the peers:

    kernel  fused_matmul_add_relu    1 call     62.1%    410 us   81.2 GFLOP/s   38.6% of FMA peak

The times come from VirtualMachine.profile (every Call instruction timed, in the
interpreter) over repeated runs, summed per called function, with the kernel thread
pool's idle workers kept polling between runs: the profiler's own work after each
run outlasts their spin span, and the first parallel kernel of every run would
otherwise pay for waking them (the CNN's first convolution 27-36 us instead of
9-10), which a model called in a loop, as peers.py times it, does not; the operation counts
from lib/relax/tir/flop_count.py over the kernels of the lowered module. The share is
of the whole profiled run, so the rows leave out the VM's own time and the builtins
(allocation, shape checks), which get a row of their own. The FMA peak is
bench/fma_peak.py's, on every thread: a kernel that runs on one thread can reach
at most 1/threads of it.
"""

from __future__ import annotations

import contextlib
import time

from relax.runtime.kernels import thread_pool
from relax.tir.flop_count import flop_count
from relax.vm import VirtualMachine

# Kernels printed per workload; the rest share one row.
SHOWN = 8
# Microseconds idle pool workers poll while a workload is profiled (longer than a profiled
# run and the report work after it).
PROFILE_SPIN_US = 20_000


@contextlib.contextmanager
def workers_awake():
    """The pool's idle workers poll for PROFILE_SPIN_US, then the span they had."""
    thread_pool.set_spin(PROFILE_SPIN_US)
    try:
        yield
    finally:
        thread_pool.set_spin(thread_pool.spin_from_environment())


def profile_totals(exe, inputs, seconds: float) -> tuple[dict[str, list[float]], float, int]:
    """Seconds and calls per called function, and the whole, over runs lasting about
    `seconds` (at least three, after one untimed run)."""
    vm = VirtualMachine(exe, "cpu", exec_mode="interp")
    totals: dict[str, list[float]] = {}
    whole, runs = 0.0, 0
    with workers_awake():
        vm.profile("main", *inputs)
        deadline = time.perf_counter() + seconds
        while runs < 3 or time.perf_counter() < deadline:
            report = vm.profile("main", *inputs)
            for row in report.rows:
                entry = totals.setdefault(row.name, [0.0, 0])
                entry[0] += row.seconds
                entry[1] += row.calls
            whole += report.total
            runs += 1
    return totals, whole, runs


def kernel_share_rows(lowered, exe, inputs, fma_gflops: float, seconds: float = 0.5) -> list[str]:
    """One line per kernel of `lowered` (the module `exe` was built from), dearest first."""
    flops = {name: flop_count(func) for name, func in lowered.prim_funcs().items()}
    totals, whole, runs = profile_totals(exe, inputs, seconds)
    kernels = sorted(((n, t) for n, t in totals.items() if n in flops), key=lambda item: -item[1][0])
    rows = [_kernel_row(name, seconds_calls, runs, whole, flops[name], fma_gflops)
            for name, seconds_calls in kernels[:SHOWN]]
    rest = kernels[SHOWN:]
    if rest:
        rest_seconds = sum(t[0] for _, t in rest)
        rows.append(f"  {len(rest)} other kernels{'':<22} {100 * rest_seconds / whole:6.1f}% "
                    f"{rest_seconds / runs * 1e6:9.1f} us")
    builtins = sum(t[0] for n, t in totals.items() if n not in flops)
    vm_own = whole - sum(t[0] for t in totals.values())
    rows.append(f"  builtins {builtins / whole:6.1%} and the VM's own time {max(vm_own, 0.0) / whole:6.1%} "
                f"of {whole / runs * 1e6:.1f} us per profiled run (interpreter, {runs} runs)")
    return rows


def _kernel_row(name: str, seconds_calls, runs: int, whole: float, flops: int | None, fma_gflops: float) -> str:
    seconds, calls = seconds_calls
    per_run = seconds / runs
    text = (f"  kernel {name:<32} {calls // runs:>4} call{'s' if calls // runs != 1 else ' '} "
            f"{100 * seconds / whole:6.1f}% {per_run * 1e6:9.1f} us")
    if flops is None:
        return text + "   (symbolic loops: no operation count)"
    if flops == 0:
        return text + "   (no floating-point arithmetic)"
    gflops = flops * (calls // runs) / per_run / 1e9
    return text + f" {gflops:8.3g} GFLOP/s {100 * gflops / fma_gflops:6.3g}% of FMA peak"
