"""The machine's float32 multiply-add peak: independent vector FMAs, one loop per thread.

    python bench/fma_peak.py [--threads 2]

A loop of ACCUMULATORS independent `fma(acc, x, y)` on LLVM vectors of the host's
widest float32 vector (16 lanes with AVX-512, else 8), compiled for this CPU with
llvmlite (MCJIT, O2) and called through ctypes from one Python thread per core (ctypes
releases the GIL, so the loops run at once). Twelve accumulators cover the latency
of two FMA pipes. GFLOP/s counts two flops per lane per FMA; the best of a few runs
is printed. bench/peers.py prints it with the machine's other limits, the ceiling
the matmul's GFLOP/s is a fraction of.
"""

from __future__ import annotations

import argparse
import ctypes
import pathlib
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

ACCUMULATORS = 12
ITERATIONS = 10_000_000


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
    return function, lanes, engine


def fma_peak_gflops(threads: int = 2, repeat: int = 3) -> float:
    """Best GFLOP/s of `threads` FMA loops run at once."""
    function, lanes, engine = _compiled_loop()
    function(1000, 1.0)
    best = 0.0
    for _ in range(repeat):
        workers = [threading.Thread(target=function, args=(ITERATIONS, 1.0)) for _ in range(threads)]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        seconds = time.perf_counter() - start
        best = max(best, threads * ITERATIONS * ACCUMULATORS * lanes * 2 / seconds / 1e9)
    del engine
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    for threads in sorted({1, args.threads}):
        print(f"fma peak, {threads} thread{'s' if threads > 1 else ''}: {fma_peak_gflops(threads):.1f} GFLOP/s")


if __name__ == "__main__":
    main()
