"""Where the kernel build of a bench model goes: lowering pass by pass, code generation, LLVM.

    python bench/kernel_compile.py [MODEL ...] [--target T] [--repeat 3]

For each model of ../shared/bench (weights bound, as `relaxc --params` binds them) and
each kernel group in the order relaxc generates them (kernel_order.py): the Python
lowering (the default CPU schedules, then each TIR pass), code generation to LLVM IR
text, its size, and LLVM's O3 pipeline and object emission. Everything runs on one
thread, one kernel after another, with nothing overlapped: relaxc generates in Python
while LLVM compiles earlier parts on worker threads (codegen/object_parts.py), so these
are the costs of the two sides, not a build's wall time (bench/compile.py --relaxc).
Each figure is the best of --repeat runs.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import subprocess
import sys
import time

BENCH = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "bench"
MODELS = ("mlp_b1", "mlp_b64", "cnn", "transformer", "matmul1024", "vadd16m")


def lowered_module(model: str):
    """The model's -O2 module as relaxc -S prints it, read back (what relaxc builds kernels from)."""
    from relax.driver.assemble import read_vms

    command = [sys.executable, "-m", "relaxc", "-S", str(BENCH / f"{model}.relax"), "-o", "-"]
    params = BENCH / f"{model}.params.npz"
    if params.exists():
        command += ["--params", str(params)]
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return read_vms(text, f"{model}.vms")


def lower_by_pass(func, target, times: collections.Counter):
    """lower_for_codegen, one step at a time, each step's seconds added to `times`."""
    from relax.ir.pass_infra import PassContext
    from relax.tir import pipeline

    context = PassContext.current()
    start = time.perf_counter()
    func = pipeline.schedule_for_codegen(func, target, context)
    times["schedules"] += time.perf_counter() - start
    for tir_pass in pipeline.passes(target, context):
        start = time.perf_counter()
        func = tir_pass.run(func)
        times[tir_pass.name] += time.perf_counter() - start
    return func.with_fields(attrs=func.attrs.without("s_tir").updated(**{"tir.lowered": True}))


def llvm_seconds(text: str, spec, machine) -> tuple[float, float]:
    """(O3 pipeline, object emission) seconds for one group's LLVM IR text."""
    from relax.llvm_capi import Context, Module, optimize
    from relax.runtime.kernels.llvm_compile import slp_is_safe

    with Context() as context:
        module = Module.parse(text, context)
        start = time.perf_counter()
        optimize(module, machine, spec.opt_level, slp_is_safe(text))
        middle = time.perf_counter()
        machine.emit(module)
        return middle - start, time.perf_counter() - middle


def measure(model: str, target) -> tuple[list, collections.Counter]:
    """Per group: (name, Python lowering s, codegen s, IR bytes, LLVM O3 s, emission s);
    and the lowering's seconds by step."""
    from relax.codegen import build_kernels
    from relax.codegen.kernel_order import generation_groups
    from relax.target.llvm_target import target_machine, target_spec

    spec = target_spec(target)
    machine = target_machine(spec)
    funcs = build_kernels.prim_funcs(lowered_module(model))
    groups = list(generation_groups(funcs))
    steps: collections.Counter = collections.Counter()
    rows = []
    for names in groups:
        start = time.perf_counter()
        lowered = {name: lower_by_pass(funcs[name], target, steps) for name in names[:1]}
        lowering = time.perf_counter() - start
        start = time.perf_counter()
        # The group's other names forward to the first's body, lowered or not (kernel_dedup.py).
        group_funcs = {**{name: funcs[name] for name in names[1:]}, **lowered}
        text, _ = next(build_kernels.generate_kernel_groups(group_funcs, spec, target, [names]))
        codegen = time.perf_counter() - start
        rows.append((names[0], lowering, codegen, len(text)) + llvm_seconds(text, spec, machine))
    return rows, steps


def best(runs: list) -> tuple[list, collections.Counter]:
    rows = [min(column, key=lambda row: sum(row[1:3]) + sum(row[4:])) for column in zip(*(r[0] for r in runs))]
    steps = collections.Counter({key: min(r[1][key] for r in runs) for key in runs[0][1]})
    return rows, steps


def report(model: str, rows: list, steps: collections.Counter) -> None:
    print(f"{model}: kernel groups in generation order, ms (best of the runs)")
    print(f"  {'kernel':<42}{'lower':>8}{'codegen':>9}{'IR kB':>8}{'LLVM O3':>9}{'emit':>8}")
    totals = [0.0] * 5
    for name, *values in rows:
        totals = [t + v for t, v in zip(totals, values)]
        lower, codegen, size, optimize, emit = values
        print(f"  {name[:42]:<42}{lower * 1e3:>8.1f}{codegen * 1e3:>9.1f}{size / 1e3:>8.1f}"
              f"{optimize * 1e3:>9.1f}{emit * 1e3:>8.1f}")
    lower, codegen, size, optimize, emit = totals
    print(f"  {'total':<42}{lower * 1e3:>8.1f}{codegen * 1e3:>9.1f}{size / 1e3:>8.1f}"
          f"{optimize * 1e3:>9.1f}{emit * 1e3:>8.1f}")
    print(f"  Python {(lower + codegen) * 1e3:.0f} ms, LLVM {(optimize + emit) * 1e3:.0f} ms; lowering by step: "
          + ", ".join(f"{name} {seconds * 1e3:.1f}" for name, seconds in steps.most_common()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["transformer"], help=f"some of {', '.join(MODELS)}")
    parser.add_argument("--target", default=None, help="LLVM target (default: this host)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from relax.target import host_target, parse_target

    target = parse_target(args.target) if args.target else host_target()
    for model in args.models:
        report(model, *best([measure(model, target) for _ in range(args.repeat)]))


if __name__ == "__main__":
    main()
