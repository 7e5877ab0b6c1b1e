"""Register-tiled float32 matmuls by shape and target, beside numpy, alternated in one process.

    python bench/matmul_shapes.py                                  the default shapes, this host's CPU
    python bench/matmul_shapes.py 1024x1024x1024 64x784x512 --target "llvm -mcpu=znver3" --target "llvm -mcpu=znver4"
    RELAX_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell \\
        python bench/matmul_shapes.py --target "llvm -mcpu=znver3"  one thread, numpy on OpenBLAS's AVX2 kernel

Each shape M x K x N is `out = R.matmul(a, b)` with both operands inputs (B packed per
call by the register tile, tir/schedule/register_tile.py), lowered at -O2 and built
once per --target; all of them run on this host, so a target must be one its CPU can
execute (an AVX2 model such as znver3 runs on an AVX-512 host). Every build's result is
checked against numpy's first. Then rounds: in each, every build and numpy's matmul
run a batch of about --batch-ms, the order turning every round; the figures are the
medians over --rounds rounds, and `vs first` the median of the per-round ratios of a
build's GFLOP/s to the first target's (side by side in one round, so a shared
machine's slow phases cancel). `of peak` is the fraction of the float32 FMA peak of
the threads (bench/fma_peak.py) measured at the start. Threads: RELAX_NUM_THREADS for
relax (default: every core), OPENBLAS_NUM_THREADS for numpy. With more than one thread
the run starts with fma_peak's parallel check, which warns when the cores were shared.

docs/tir-lowering.md cites this script's figures for the tile and blocking rules.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "bench"))

from fma_peak import fma_peak_gflops, parallel_check  # noqa: E402
from schedules import callable_of, kernels_of, module_text  # noqa: E402

SHAPES = ("1024x1024x1024", "64x784x512", "128x256x1024", "128x1024x256", "512x512x512")


def parse_shape(text: str) -> tuple[int, int, int]:
    try:
        m, k, n = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r} is not MxKxN") from None
    if min(m, k, n) < 1:
        raise argparse.ArgumentTypeError(f"shape {text!r} has an empty dimension")
    return m, k, n


def matmul_kernels(shape, targets: list[str]) -> dict:
    """{target: the fast call (or the checked one) of the -O2 kernel of a (M x K) @ (K x N) matmul},
    lowered once and built for each target."""
    from relax.codegen.build_kernels import build_host_library
    from relax.target import parse_target

    m, k, n = shape
    funcs = kernels_of(module_text(f'a: R.Tensor(({m}, {k}), "float32"), b: R.Tensor(({k}, {n}), "float32")',
                                   "out = R.matmul(a, b)"), 2)
    (name,) = funcs
    return {target: callable_of(build_host_library(funcs, parse_target(target)), name) for target in targets}


def _batch(call, arrays, flop: int, batch_s: float) -> float:
    """GFLOP/s of one batch of calls lasting about `batch_s`."""
    calls, start = 0, time.perf_counter()
    while True:
        call(*arrays)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= batch_s:
            return flop * calls / elapsed / 1e9


def measure(shape, targets: list[str], rounds: int, batch_s: float) -> dict:
    """{peer: [GFLOP/s per round]} for every target's build and numpy, alternated."""
    m, k, n = shape
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    expected = a @ b
    peers = {}
    for target, call in matmul_kernels(shape, targets).items():
        out = np.full((m, n), np.nan, np.float32)
        call(a, b, out)
        np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3 * np.sqrt(k))
        peers[target] = (call, (a, b, out))
    peers["numpy"] = (lambda x, y, o: np.matmul(x, y, out=o), (a, b, np.empty((m, n), np.float32)))
    order = list(peers)
    figures = {peer: [] for peer in order}
    for index in range(rounds):
        for peer in order[index % len(order):] + order[:index % len(order)]:
            call, arrays = peers[peer]
            figures[peer].append(_batch(call, arrays, 2 * m * k * n, batch_s))
    return figures


def report(shape, figures: dict, peak: float) -> list[str]:
    first = next(iter(figures.values()))
    lines = [f"{'x'.join(map(str, shape))}"]
    for peer, values in figures.items():
        median = statistics.median(values)
        ratio = statistics.median(v / f for v, f in zip(values, first))
        lines.append(f"  {peer:<36} {median:8.1f} GFLOP/s  {median / peak:6.1%} of peak  vs first {ratio:.3f}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="*", type=parse_shape, default=[parse_shape(s) for s in SHAPES],
                        metavar="MxKxN")
    parser.add_argument("--target", action="append", dest="targets", metavar="TARGET",
                        help="an LLVM target this host can run (repeatable; default: this host's CPU)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--batch-ms", type=float, default=100.0)
    args = parser.parse_args(argv)
    targets = args.targets or ["llvm -mcpu=native"]
    threads = int(os.environ.get("RELAX_NUM_THREADS") or os.cpu_count() or 1)
    peak = fma_peak_gflops(threads)
    print(f"# relax threads {threads}, float32 FMA peak {peak:.1f} GFLOP/s (bench/fma_peak.py); "
          f"{args.rounds} rounds of {args.batch_ms:.0f} ms batches")
    parallel_check(threads, "before the shapes")
    for shape in args.shapes:
        print("\n".join(report(shape, measure(shape, targets, args.rounds, args.batch_ms / 1e3), peak)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
