"""The machine's float32 multiply-add peak: independent vector FMAs, one loop per thread.

    python bench/fma_peak.py [--threads 2]

A loop of ACCUMULATORS independent `fma(acc, x, y)` on LLVM vectors of the host's
widest float32 vector (16 lanes with AVX-512, else 8), compiled for this CPU with
llvmlite (MCJIT, O2) and called through ctypes from one Python thread per core (ctypes
releases the GIL, so the loops run at once). Twelve accumulators cover the latency
of two FMA pipes. GFLOP/s counts two flops per lane per FMA; the best of a few runs
is printed. bench/peers.py prints it with the machine's other limits, the ceiling
the matmul's GFLOP/s is a fraction of.

thread_scaling times the threads' loops against one thread's in short pairs: a
virtual machine whose other cores are shared (the 2-core machines here, some days)
runs two threads at one thread's rate for tens of milliseconds at a time, and every
two-thread figure of such a run is low. bench/peers.py reports it before and after
its workloads and warns when the cores were shared.

python_loop_seconds times a plain Python loop: how fast one core runs Python just then.
A virtual machine's core runs Python a quarter to a third slower for seconds at a
time (on the 2-core Zen 4 here about one process in ten ran its whole life so), and
whatever is mostly Python slows with it (relaxc, the VM's interpreter) while compiled
peers barely move. bench/compile.py and bench/peers.py print it before and after.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import pathlib
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

ACCUMULATORS = 12
ITERATIONS = 10_000_000
# thread_scaling's median ratio, as a fraction of the threads, under which a run's cores
# were shared: a core of its own gives 0.95-1.0 per thread.
SHARED_SCALING = 0.85


def _loop_ir(lanes: int) -> str:
    vec = f"<{lanes} x float>"
    lines = [f"define float @fma_loop(i64 %n, float %seed) {{", "entry:",
             f"  %x0 = insertelement {vec} undef, float %seed, i32 0",
             f"  %x = shufflevector {vec} %x0, {vec} undef, <{lanes} x i32> zeroinitializer",
             "  br label %loop", "loop:", "  %i = phi i64 [0, %entry], [%i.next, %loop]"]
    for a in range(ACCUMULATORS):
        lines.append(f"  %a{a} = phi {vec} [%x, %entry], [%n{a}, %loop]")
    for a in range(ACCUMULATORS):
        lines.append(f"  %n{a} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{a}, {vec} %x, {vec} %x)")
    lines += ["  %i.next = add i64 %i, 1", "  %more = icmp ult i64 %i.next, %n",
              "  br i1 %more, label %loop, label %done", "done:"]
    total = "%n0"
    for a in range(1, ACCUMULATORS):
        lines.append(f"  %s{a} = fadd {vec} {total}, %n{a}")
        total = f"%s{a}"
    lines += [f"  %r = extractelement {vec} {total}, i32 0", "  ret float %r", "}",
              f"declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})"]
    return "\n".join(lines)


@functools.cache  # one build per process: the peak and the parallel checks share it
def _compiled_loop():
    import llvmlite.binding as llvm

    from relax.runtime.kernels.host import host, host_target_machine, initialize_llvm

    initialize_llvm()
    lanes = 16 if "+avx512f" in host().features.split(",") else 8
    machine = host_target_machine(opt=2)
    module = llvm.parse_assembly(_loop_ir(lanes))
    module.triple, module.data_layout = machine.triple, str(machine.target_data)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    function = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64, ctypes.c_float)(engine.get_function_address("fma_loop"))
    function(1000, 1.0)  # warm: the first call pays for paging the code in
    return function, lanes, engine


def fma_peak_gflops(threads: int = 2, repeat: int = 3) -> float:
    """Best GFLOP/s of `threads` FMA loops run at once."""
    function, lanes, _engine = _compiled_loop()
    return max(_rate(function, lanes, threads, ITERATIONS) for _ in range(repeat))


def _rate(function, lanes: int, threads: int, iterations: int) -> float:
    """GFLOP/s of `threads` FMA loops of `iterations` run at once."""
    workers = [threading.Thread(target=function, args=(iterations, 1.0)) for _ in range(threads)]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return threads * iterations * ACCUMULATORS * lanes * 2 / (time.perf_counter() - start) / 1e9


def thread_scaling(threads: int = 2, samples: int = 10, iterations: int = ITERATIONS // 20) -> list[float]:
    """`samples` ratios of `threads` loops' FMA rate to one loop's, each pair run back to back
    (a few ms each): near `threads` where the cores are the process's own, lower where a
    virtual machine's other cores are shared."""
    function, lanes, _engine = _compiled_loop()
    return [_rate(function, lanes, threads, iterations) / _rate(function, lanes, 1, iterations)
            for _ in range(samples)]


def scaling_report(ratios: list[float], threads: int, when: str) -> str:
    """One line on `thread_scaling`'s ratios; a warning where their median is under
    SHARED_SCALING of `threads`: the figures of more than one thread are then not the machine's."""
    ordered = sorted(ratios)
    median = ordered[len(ordered) // 2]
    line = (f"# parallel check {when}: {threads} threads ran {ordered[0]:.2f}-{ordered[-1]:.2f}x one thread's "
            f"FMA rate, median {median:.2f} ({len(ratios)} samples, bench/fma_peak.py)")
    if median < SHARED_SCALING * threads:
        line += (f"\n# warning: the cores were shared {when} (median under {SHARED_SCALING:.2f} x {threads}): "
                 f"figures on more than one thread are unreliable; run again")
    return line


PYTHON_LOOP = 3_000_000  # iterations of python_loop_seconds's loop


def python_loop_seconds(repeat: int = 3, iterations: int | None = None) -> float:
    """The best of `repeat` timings of a plain Python loop of `iterations` (default
    PYTHON_LOOP): one core's speed at Python now."""
    iterations = PYTHON_LOOP if iterations is None else iterations
    best = float("inf")
    for _ in range(repeat):
        start, total = time.perf_counter(), 0
        for i in range(iterations):
            total += i * i
        best = min(best, time.perf_counter() - start)
    return best


def python_check(when: str) -> None:
    """Prints python_loop_seconds `when` (bench/compile.py's and bench/peers.py's line)."""
    print(f"# one core {when}: a Python loop of {PYTHON_LOOP:,} iterations took {python_loop_seconds():.3f} s"
          " (best of 3)", flush=True)


def parallel_check(threads: int, when: str) -> None:
    """Prints scaling_report of a fresh thread_scaling run `when`, with more than one thread."""
    if threads > 1:
        print(scaling_report(thread_scaling(threads), threads, when), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    for threads in sorted({1, args.threads}):
        print(f"fma peak, {threads} thread{'s' if threads > 1 else ''}: {fma_peak_gflops(threads):.1f} GFLOP/s")
    parallel_check(args.threads, "now")


if __name__ == "__main__":
    main()
