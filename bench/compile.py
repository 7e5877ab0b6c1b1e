"""Compile time of the MLP, CNN and transformer samples: every pass, then kernels.

    python bench/compile.py [-O 2] [--samples mlp,cnn,transformer]

For each sample: the time of each pass of the -O pipeline (the table `relaxc
--time-passes` prints), bytecode generation, and kernel code generation (LLVM), and
the total of a `relax.build`. Figures from one run on a shared machine drift: compare
within a run.
"""

from __future__ import annotations

import argparse
import pathlib
import time

SAMPLES = pathlib.Path(__file__).resolve().parent.parent / "samples"


def measure(name: str, opt_level: int) -> dict:
    from relax.build import build
    from relax.codegen.build_kernels import build_kernel_object
    from relax.ir.module import IRModule
    from relax.script import parse
    from relax.target import parse_target
    from relax.transform.pass_infra import PassContext, PassTimingInstrument, run_passes
    from relax.transform.pipeline import pipeline
    from relax.vm.codegen import generate

    text = (SAMPLES / f"{name}.relax").read_text()
    start = time.perf_counter()
    mod = parse(text, f"{name}.relax")
    parse_time = time.perf_counter() - start
    timing = PassTimingInstrument()
    with PassContext(opt_level=opt_level, instruments=[timing]) as context:
        lowered = run_passes(mod, pipeline(opt_level), context)
    start = time.perf_counter()
    generate(lowered)
    bytecode_time = time.perf_counter() - start
    start = time.perf_counter()
    kernels = lowered.prim_funcs()
    build_kernel_object(IRModule.from_functions(kernels), [parse_target("llvm")])
    kernel_time = time.perf_counter() - start
    start = time.perf_counter()
    build(parse(text, f"{name}.relax"), "llvm", opt_level)
    total = time.perf_counter() - start
    return {"parse": parse_time, "passes": timing.times, "bytecode": bytecode_time, "kernels": kernel_time,
            "kernel_count": len(kernels), "total": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-O", dest="opt_level", type=int, default=2)
    parser.add_argument("--samples", default="mlp,cnn,transformer")
    args = parser.parse_args()
    names = args.samples.split(",")
    results = {name: measure(name, args.opt_level) for name in names}
    passes = [name for name, _ in results[names[0]]["passes"]]
    width = max(len(p) for p in passes + ["kernels (LLVM)"])
    print(f"compile time in ms at -O{args.opt_level}")
    print(f"{'stage':<{width}}  " + "  ".join(f"{n:>12}" for n in names))
    rows = [("parse", [results[n]["parse"] for n in names])]
    for index, pass_name in enumerate(passes):
        rows.append((pass_name, [results[n]["passes"][index][1] for n in names]))
    rows.append(("bytecode", [results[n]["bytecode"] for n in names]))
    rows.append(("kernels (LLVM)", [results[n]["kernels"] for n in names]))
    rows.append(("relax.build total", [results[n]["total"] for n in names]))
    for label, values in rows:
        print(f"{label:<{width}}  " + "  ".join(f"{v * 1e3:>12.1f}" for v in values))
    print(f"{'kernels':<{width}}  " + "  ".join(f"{results[n]['kernel_count']:>12}" for n in names))


if __name__ == "__main__":
    main()
