"""Default CPU schedules (relax.tir.schedule): kernels unscheduled (-O0) vs scheduled (-O2) vs numpy.

    python bench/schedules.py                 all workloads
    python bench/schedules.py matmul vadd     some of them

Workloads (kernels as legalization and, for the models, -O2 fusion write them):

  matmul    1024x1024 @ 1024x1024 float32                 GFLOP/s
  mlp       every kernel of samples/mlp.relax (1x784 -> 128 -> 64 -> 10), per kernel
  vadd      a + b on float32[16M]                         GB/s (three arrays)
  softmax   softmax over the last axis of float32[128, 1024] (its fused kernels)
  conv      the CNN benchmark's two 3x3 conv2d + bias + relu kernels, NCHW and NHWC   GFLOP/s (numpy: im2col + sgemm)
  cnn, transformer   every kernel of the sample at -O2 (the five slowest listed), no numpy

Each kernel is built twice in one process: with PassContext(opt_level=0) (plain loop
nests) and at -O2 (the default schedule). Times are medians of calls through the
kernel's fast path where it has one; numpy does the same computation in the same run.
Outputs of the two builds are compared before timing. Wall-clock on a shared machine:
compare the columns of one run, not across runs.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from relax.build import lower  # noqa: E402
from relax.codegen.build_kernels import build_host_library  # noqa: E402
from relax.driver.compile import parse_source  # noqa: E402
from relax.ir import tir  # noqa: E402
from relax.script import parse  # noqa: E402
from relax.ir.pass_infra import PassContext  # noqa: E402


def timed(call, budget: float = 1.0, most: int = 200) -> float:
    """Median seconds per call, calling for about `budget` seconds (at least 3 times)."""
    call()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget and len(times) < most):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def kernels_of(text: str, level: int) -> dict:
    funcs = lower(parse(text), level).prim_funcs()
    return {name: f for name, f in funcs.items() if not any(
        not isinstance(d, tir.IntImm) for _, b in f.buffer_map for d in b.shape)}


def both_builds(funcs: dict):
    with PassContext(opt_level=0):
        plain = build_host_library(funcs)
    return plain, build_host_library(funcs)


def arrays_for(func, rng):
    return [rng.standard_normal(tuple(d.value for d in b.shape)).astype(b.dtype) for _, b in func.buffer_map]


def callable_of(library, name):
    kernel = library.get_function(name)
    return kernel.fast_call or kernel


def compare_kernels(funcs: dict, budget: float, plain_budget: float | None = None):
    """[(name, plain seconds, scheduled seconds)] after checking both give the same outputs."""
    plain, scheduled = both_builds(funcs)
    rows = []
    for name, func in sorted(funcs.items()):
        args = arrays_for(func, np.random.default_rng(0))
        a, b = [x.copy() for x in args], [x.copy() for x in args]
        callable_of(plain, name)(*a)
        callable_of(scheduled, name)(*b)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-3, atol=1e-3)
        t_plain = timed(lambda: callable_of(plain, name)(*a), plain_budget or budget)
        t_sched = timed(lambda: callable_of(scheduled, name)(*b), budget)
        rows.append((name, t_plain, t_sched))
    return rows


def module_text(params: str, body: str) -> str:
    """A module whose main computes `body` (ending in `out`) from `params` in one dataflow block."""
    return f"""
@I.ir_module
class Module:
    @R.function
    def main({params}):
        with R.dataflow():
            {body}
            R.output(out)
        return out
"""


def row(label, plain, scheduled, reference, unit, amount):
    rate = lambda t: f"{amount / t / 1e9:8.2f} {unit}"  # noqa: E731
    print(f"{label:<34} {plain * 1e6:>12.1f} us {rate(plain)} | {scheduled * 1e6:>10.1f} us {rate(scheduled)}"
          f" | {reference * 1e6:>10.1f} us {rate(reference)} | x{plain / scheduled:.1f}")


def bench_matmul(budget):
    n = 1024
    funcs = kernels_of(module_text(f'a: R.Tensor(({n}, {n}), "float32"), b: R.Tensor(({n}, {n}), "float32")',
                               "out = R.matmul(a, b)"), 0)
    (name, plain, scheduled), = compare_kernels(funcs, budget, plain_budget=0.0)
    a, b = np.random.rand(n, n).astype("float32"), np.random.rand(n, n).astype("float32")
    reference = timed(lambda: a @ b, budget)
    row("matmul 1024^3", plain, scheduled, reference, "GFLOP/s", 2 * n ** 3)


def bench_mlp(budget):
    funcs = lower(parse_source(str(ROOT / "samples" / "mlp.relax")), 2).prim_funcs()
    total_plain = total_sched = 0.0
    for name, plain, scheduled in compare_kernels(funcs, budget):
        flops = 2 * np.prod([d.value for d in funcs[name].buffer_map[0][1].shape]) * \
            funcs[name].buffer_map[1][1].shape[-1].value if "matmul" in name else 0
        total_plain, total_sched = total_plain + plain, total_sched + scheduled
        print(f"  mlp {name:<30} {plain * 1e6:>12.1f} us | {scheduled * 1e6:>10.1f} us"
              + (f"   ({flops / scheduled / 1e9:.2f} GFLOP/s scheduled)" if flops else ""))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 784)).astype("float32")
    w = [rng.standard_normal(s).astype("float32") for s in ((784, 128), (128, 64), (64, 10))]
    bias = [rng.standard_normal(s).astype("float32") for s in (128, 64, 10)]

    def forward():
        h = np.maximum(x @ w[0] + bias[0], 0)
        h = np.maximum(h @ w[1] + bias[1], 0)
        return h @ w[2] + bias[2]

    reference = timed(forward, budget)
    flops = 2 * (784 * 128 + 128 * 64 + 64 * 10)
    row("mlp (all kernels, sum)", total_plain, total_sched, reference, "GFLOP/s", flops)


def bench_vadd(budget):
    n = 16 * 1024 * 1024
    funcs = kernels_of(module_text(f'a: R.Tensor(({n},), "float32"), b: R.Tensor(({n},), "float32")',
                               "out = R.add(a, b)"), 0)
    (name, plain, scheduled), = compare_kernels(funcs, budget)
    a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
    c = np.empty_like(a)
    reference = timed(lambda: np.add(a, b, out=c), budget)
    row("vadd 16M", plain, scheduled, reference, "GB/s", 3 * 4 * n)


def bench_softmax(budget):
    funcs = kernels_of(module_text('x: R.Tensor((128, 1024), "float32")', "out = R.nn.softmax(x, axis=-1)"), 2)
    rows = compare_kernels(funcs, budget)
    plain, scheduled = sum(r[1] for r in rows), sum(r[2] for r in rows)
    x = np.random.rand(128, 1024).astype("float32")

    def softmax():
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    reference = timed(softmax, budget)
    row(f"softmax 128x1024 ({len(rows)} kernels)", plain, scheduled, reference, "GB/s", 2 * 4 * 128 * 1024)


def bench_conv(budget):
    """The two convolutions of ../shared/bench/cnn.relax, each with its fused bias add and relu, NCHW and NHWC."""
    rng = np.random.default_rng(0)
    for layout in ("NCHW", "NHWC"):
        for channels, out_channels, size in ((3, 16, 32), (16, 32, 16)):
            if layout == "NCHW":
                shapes = ((1, channels, size, size), (out_channels, channels, 3, 3), (1, out_channels, 1, 1))
                attrs = ""
            else:
                shapes = ((1, size, size, channels), (3, 3, channels, out_channels), (1, 1, 1, out_channels))
                attrs = ', data_layout="NHWC", kernel_layout="HWIO"'
            text = module_text(", ".join(f'{name}: R.Tensor({shape}, "float32")' for name, shape in zip("xwb", shapes)),
                           f"y = R.nn.conv2d(x, w, padding=[1, 1, 1, 1]{attrs})\n            z = R.add(y, b)\n"
                           "            out = R.nn.relu(z)")
            (name, plain, scheduled), = compare_kernels(kernels_of(text, 2), budget)
            x = rng.standard_normal((channels, size + 2, size + 2)).astype("float32")
            w = rng.standard_normal((out_channels, channels * 9)).astype("float32")
            b = rng.standard_normal((out_channels, 1)).astype("float32")

            def im2col():  # numpy's best: the 3x3 windows as a matrix, one sgemm, then bias and relu
                cols = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(1, 2))
                cols = cols.transpose(0, 3, 4, 1, 2).reshape(channels * 9, size * size)
                return np.maximum(w @ cols + b, 0)

            reference = timed(im2col, budget)
            flops = 2 * out_channels * size * size * channels * 9
            row(f"conv {layout} {channels}x{size}x{size} -> {out_channels} +bias+relu", plain, scheduled, reference,
                "GFLOP/s", flops)


def bench_sample(sample: str):
    def run(budget):
        funcs = lower(parse_source(str(ROOT / "samples" / f"{sample}.relax")), 2).prim_funcs()
        funcs = {name: f for name, f in funcs.items() if all(
            isinstance(d, tir.IntImm) for _, b in f.buffer_map for d in b.shape)}
        rows = compare_kernels(funcs, budget)
        for name, plain, scheduled in sorted(rows, key=lambda r: -r[1])[:5]:
            print(f"  {sample} {name:<40} {plain * 1e6:>10.1f} us | {scheduled * 1e6:>10.1f} us")
        plain, scheduled = sum(r[1] for r in rows), sum(r[2] for r in rows)
        print(f"{sample + f' ({len(rows)} kernels, sum)':<34} {plain * 1e6:>12.1f} us | {scheduled * 1e6:>10.1f} us"
              f" | x{plain / scheduled:.1f}")
    return run


WORKLOADS = {"matmul": bench_matmul, "mlp": bench_mlp, "vadd": bench_vadd, "softmax": bench_softmax, "conv": bench_conv,
             "cnn": bench_sample("cnn"), "transformer": bench_sample("transformer")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", help=f"some of {', '.join(WORKLOADS)} (default: all)")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timing per measurement")
    args = parser.parse_args(argv)
    unknown = [name for name in args.workloads if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {unknown[0]}; choose from {', '.join(WORKLOADS)}")
    print(f"{'workload':<34} {'unscheduled (-O0)':>27} | {'scheduled (-O2)':>25} | {'numpy':>25} | speedup")
    for name in args.workloads or WORKLOADS:
        WORKLOADS[name](args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
