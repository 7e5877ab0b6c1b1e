"""Compile time of the MLP, CNN and transformer samples: every pass, then kernels.

    python bench/compile.py [-O 2] [--samples mlp,cnn,transformer]
    python bench/compile.py --relaxc [--models mlp_b1,mlp_b64,cnn,transformer] [--repeat 3]
    python bench/compile.py --relaxc --against OTHER_CHECKOUT [--models transformer] [--repeat 12]

For each sample: the time of each pass of the -O pipeline (the table `relaxc
--time-passes` prints), bytecode generation, and kernel code generation (LLVM), and
the total of a `relax.build`. Figures from one run on a shared machine drift: compare
within a run.

--relaxc times the whole command the way a user runs it, for the models of
../shared/bench with their weights (`relaxc X.relax --params X.params.npz -o
X.vmx`), in a fresh process each time: cold (RELAX_CACHE=0, every kernel built) and
warm (the kernel cache, in a temporary directory, filled by a first run), the
median of --repeat runs each, and checks that the warm artifact is byte-identical
to the cold one. The header says how many relax modules have no up-to-date .pyc:
each run compiles those from source (with PYTHONDONTWRITEBYTECODE=1 and no
__pycache__, all of them: 0.25-0.3 s of every run on the 2-core machine), so
figures taken with and without .pyc files do not compare. Beside the wall time it
prints the CPU time the runs took (user and system, all threads): on a machine whose
cores are shared it moves less than the wall time. A parallel check before and after
(bench/fma_peak.py) says whether the second core was shared meanwhile, and a pure-Python
loop timed before and after (best of 3) how fast one core runs Python just then: a
virtual machine's core can run at half its speed with both cores its own, and relaxc
is mostly Python, so figures from two sessions compare only beside their loop times.

--against times this checkout's cold build and another checkout's (a `git worktree`
of an older commit, say) alternately, round after round, each run on its own tree's
code with the same Python, and prints both medians and the paired ratios this / other
(wall and CPU): a change's effect measured side by side, in the same phases of a shared
machine, where one tree timed now and the other an hour ago would not compare. Beside the
wall ratio it prints a 95% interval for it (the median's, from the rounds' order: no
assumption about how the ratios spread; six rounds at least): a figure whose interval
stays on one side of a target is shown, one whose interval straddles it is not. With
RELAX_TEST_HOST=avx2 set, both trees build as on an AVX2 host (testsuite/avx2_host, as
`make test-avx2-host` shows an AVX-512 host).
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
BENCH = ROOT.parent / "shared" / "bench"
# What `make test-avx2-host` puts on the path to show this host as an AVX2 one (RELAX_TEST_HOST=avx2).
HOST_VIEW = ROOT / "testsuite" / "avx2_host"


def measure(name: str, opt_level: int) -> dict:
    from relax.build import build
    from relax.codegen.build_kernels import build_kernel_object
    from relax.ir.module import IRModule
    from relax.script import parse
    from relax.target import parse_target
    from relax.ir.pass_infra import PassContext, PassTimingInstrument, run_passes
    from relax.transform.pipeline import pipeline
    from relax.vm.codegen.codegen_vm import generate

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


def time_relaxc(model: str, output: pathlib.Path, environment: dict, tree: pathlib.Path = ROOT) -> tuple[float, float]:
    """(wall, CPU) seconds of one `relaxc MODEL.relax --params MODEL.params.npz -o output` run
    on `tree`'s code, process start included; CPU is the child's user and system time."""
    command = [sys.executable, "-m", "relaxc", str(BENCH / f"{model}.relax"), "-o", str(output)]
    params = BENCH / f"{model}.params.npz"
    if params.exists():
        command += ["--params", str(params)]
    paths = [str(tree / "lib"), str(tree)]
    if environment.get("RELAX_TEST_HOST"):
        # The host shown as another kind (testsuite/avx2_host) to either tree: that folder's
        # start-up file is found only on the path, which names the tree's code otherwise.
        paths.insert(0, str(HOST_VIEW))
    environment = dict(environment, PYTHONPATH=os.pathsep.join(paths))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=environment, cwd=tree, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def stale_bytecode(root: pathlib.Path = ROOT) -> tuple[int, int]:
    """(relax and tool modules of the checkout at `root` without an up-to-date .pyc, all of them)."""
    import importlib.util

    sources = sorted((root / "lib" / "relax").rglob("*.py")) + sorted(root.glob("relax*/*.py"))
    stale = 0
    for source in sources:
        try:
            header = pathlib.Path(importlib.util.cache_from_source(str(source))).read_bytes()[:16]
        except OSError:
            stale += 1
            continue
        stat = source.stat()
        # A timestamp-based .pyc records its source's mtime and size (PEP 552, flags 0).
        recorded = (int.from_bytes(header[4:8], "little"), int.from_bytes(header[8:12], "little"),
                    int.from_bytes(header[12:16], "little"))
        if header[:4] != importlib.util.MAGIC_NUMBER or recorded != (0, int(stat.st_mtime) & 0xFFFFFFFF,
                                                                    stat.st_size & 0xFFFFFFFF):
            stale += 1
    return stale, len(sources)


def relaxc_table(models: list[str], repeat: int) -> None:
    stale, total = stale_bytecode()
    print(f"relaxc one-shot time in s (median of {repeat}: wall, then CPU), {BENCH}; "
          f"{stale} of {total} modules compiled from source each run (no up-to-date .pyc)")
    print(f"{'model':<14}{'cold':>8}{'cpu':>7}{'warm':>8}{'cpu':>7}  warm == cold")
    with tempfile.TemporaryDirectory(prefix="relax-compile-bench-") as scratch:
        directory = pathlib.Path(scratch)
        for model in models:
            cold_env = dict(os.environ, RELAX_CACHE="0")
            warm_env = dict(os.environ, RELAX_CACHE="1", RELAX_CACHE_DIR=str(directory / f"cache-{model}"))
            # The same output name for every run: the artifact records it.
            output = directory / f"{model}.vmx"
            cold = _medians([time_relaxc(model, output, cold_env) for _ in range(repeat)])
            cold_bytes = output.read_bytes()
            time_relaxc(model, output, warm_env)  # fills the cache
            warm = _medians([time_relaxc(model, output, warm_env) for _ in range(repeat)])
            same = output.read_bytes() == cold_bytes
            print(f"{model:<14}{cold[0]:>8.2f}{cold[1]:>7.2f}{warm[0]:>8.2f}{warm[1]:>7.2f}  {'yes' if same else 'NO'}",
                  flush=True)


def relaxc_against(models: list[str], rounds: int, other: pathlib.Path) -> None:
    """Cold builds of this checkout and `other`, alternated: the medians and the paired ratios."""
    for tree in (ROOT, other):
        stale, total = stale_bytecode(tree)
        print(f"# {tree}: {stale} of {total} modules compiled from source each run (no up-to-date .pyc)")
    print(f"cold relaxc one-shot, {rounds} rounds, the two trees alternated (which goes first alternates too)")
    print(f"{'model':<14}{'this':>8}{'cpu':>7}{'other':>8}{'cpu':>7}{'wall ratio':>12}{'95% interval':>15}"
          f"{'cpu ratio':>11}  same bytes")
    environment = dict(os.environ, RELAX_CACHE="0")
    trees = (ROOT, other)
    with tempfile.TemporaryDirectory(prefix="relax-compile-bench-") as scratch:
        directory = pathlib.Path(scratch)
        for model in models:
            # The same output path for both trees: the artifact records it.
            output = directory / f"{model}.vmx"
            times: tuple[list, list] = ([], [])  # by position: `other` may be this very checkout
            artifacts = [b"", b""]
            for index in range(rounds):
                for side in (0, 1) if index % 2 == 0 else (1, 0):
                    times[side].append(time_relaxc(model, output, environment, trees[side]))
                    artifacts[side] = output.read_bytes()
            this, that = _medians(times[0]), _medians(times[1])
            walls = [a[0] / b[0] for a, b in zip(*times)]
            wall = statistics.median(walls)
            interval = median_interval(walls)
            shown = f"{interval[0]:.3f}-{interval[1]:.3f}" if interval else "-"
            cpu = statistics.median(a[1] / b[1] for a, b in zip(*times))
            same = "yes" if artifacts[0] == artifacts[1] else "no"
            print(f"{model:<14}{this[0]:>8.2f}{this[1]:>7.2f}{that[0]:>8.2f}{that[1]:>7.2f}{wall:>12.3f}{shown:>15}"
                  f"{cpu:>11.3f}  {same}", flush=True)
    print("(ratios: medians of the rounds' this / other; under 1: this checkout builds faster)")


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """A `confidence` interval for the median of the distribution `values` were drawn from:
    the k-th smallest and k-th largest value, k the largest for which fewer than k of n
    values fall below the median with probability at most (1 - confidence) / 2 (binomial,
    p = 1/2). None when no such k exists (under six values at 95%)."""
    ordered = sorted(values)
    n = len(ordered)
    tail = (1 - confidence) / 2
    k, below = 0, 0.0  # below: P(fewer than k+1 of n values under the median)
    while True:
        below += math.comb(n, k) / 2 ** n
        if below > tail:
            break
        k += 1
    return (ordered[k - 1], ordered[n - k]) if k >= 1 else None


def _medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(run[0] for run in runs), statistics.median(run[1] for run in runs)


def _machine_checks(when: str) -> None:
    """bench/fma_peak.py's check whether the second core is the machine's own just now, and
    how fast one core runs Python."""
    bench = str(pathlib.Path(__file__).resolve().parent)
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from fma_peak import parallel_check, python_check

    parallel_check(2, when)
    python_check(when)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-O", dest="opt_level", type=int, default=2)
    parser.add_argument("--samples", default="mlp,cnn,transformer")
    parser.add_argument("--relaxc", action="store_true",
                        help="time whole relaxc runs on the bench models with weights, cold and warm")
    parser.add_argument("--models", default="mlp_b1,mlp_b64,cnn,transformer")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per median (with --against: rounds, each one run of either tree)")
    parser.add_argument("--against", type=pathlib.Path, metavar="CHECKOUT",
                        help="with --relaxc: alternate cold builds with this other checkout's, side by side")
    parser.add_argument("--no-parallel-check", action="store_true",
                        help="with --relaxc: skip the check of the second core before and after")
    args = parser.parse_args()
    if args.relaxc:
        if not args.no_parallel_check:
            _machine_checks("before the builds")
        if args.against is not None:
            relaxc_against(args.models.split(","), args.repeat, args.against.resolve())
        else:
            relaxc_table(args.models.split(","), args.repeat)
        if not args.no_parallel_check:
            _machine_checks("after the builds")
        return
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
