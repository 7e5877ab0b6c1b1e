"""Our toolchain beside numpy, ONNX Runtime and TVM on every workload of /work/shared/bench.

    python bench/peers.py                                  every workload, about 2 minutes
    python bench/peers.py mlp_b1 cnn --budget 2            some workloads, 2 s of timing each
    python bench/peers.py --tvm-python /opt/tvm/bin/python also TVM 0.27 (side environment)
    python bench/peers.py --threads 1                      every peer on one thread
    OPENBLAS_CORETYPE=Haswell python bench/peers.py --target "llvm -mcpu=x86-64-v3"
                                                           AVX2 code, numpy on OpenBLAS's AVX2 kernel
                                                           (ONNX Runtime has no such switch)

For each workload, in one process and one run:

  relax        relax.build(mod, "llvm -mcpu=native", opt_level=2, params=weights): the weights bound
               as constants (what `relaxc --params` does), run by VirtualMachine(exe, "cpu",
               exec_mode="compiled") (--exec-mode); chain200 at -O0 in both exec modes
               (relax-interp, relax-compiled), where it measures the cost per operator call
  numpy        bench/peers_numpy.py, weights prepared once
  onnxruntime  the same graph in ONNX (bench/peers_onnx.py), default session options;
               only when `onnxruntime` and `onnx` import (`pip install .[bench]`)
  tvm          tvm.compile at its default pipeline, through bench/tvm_peer.py run by the
               interpreter given with --tvm-python (the project never imports TVM)

Inputs are seeded random float32. Every peer's first result is checked against
numpy's (largest difference relative to the largest output value, at most 1e-3).
Timing alternates between the peers, a batch of about 20 ms each in turn (longer
next to a slow peer: a quarter of its call, at most 0.5 s), the first
peer changing every round, with 150 ms of idle time before each batch (--settle-ms:
numpy's and ONNX Runtime's pool threads keep spinning for tens of milliseconds after a
call and would take the next peer's second core) and about 5 ms of untimed calls (at
least two), so that the peer's own threads are awake again, until the budget is spent; each call is timed on its own
and the latency printed is the median. `x best` is the latency over the best one of
the workload; throughput is GFLOP/s for the models and the matmul, GB/s (bytes read
and written) for vadd16m, and ns per add for chain200. The machine's limits measured
in the same run come first: numpy copy bandwidth, numpy sgemm GFLOP/s and the float32
FMA peak of independent vector multiply-adds on every thread (bench/fma_peak.py).
Before the workloads and after them, a parallel check times the threads' FMA loops
against one thread's in short pairs and warns when the median falls under 0.85 of the
thread count: a virtual machine's shared cores then ran the run's two-thread figures
slow, and the run should be repeated. A plain Python loop is timed there too, and,
for a workload with an interpreter row (chain200), after each round: the interpreter
is Python, and a core that runs Python a quarter to a third slower for seconds at a
time (one process in ten on the 2-core Zen 4 here) slows its row and not the compiled
peers'.
numpy's OpenBLAS threads are told not to busy-wait between calls
(OPENBLAS_THREAD_TIMEOUT=4), so that they do not take the next peer's cores.
Absolute times drift on shared machines: compare the rows of one run.

Under each workload's rows, bench/kernel_shares.py prints where relax's time goes: each
kernel's share of a profiled run (interpreter, every call timed), its time, and its
GFLOP/s (lib/relax/tir/flop_count.py) as a fraction of the FMA peak above
(--no-kernel-shares leaves them out).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

# numpy's OpenBLAS keeps its worker threads busy-waiting for 2^28 cycles (about 0.1 s)
# after every call, so the peer timed next found one core taken: relax's matmul1024
# measured 151 GFLOP/s instead of 261, vadd16m 16 GB/s instead of 32. With the shortest
# wait every peer starts its batch on an idle machine; numpy's own figures do not move
# (sgemm 341 vs 346 GFLOP/s). Set before numpy loads OpenBLAS.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "bench"))

import peers_numpy  # noqa: E402
from fma_peak import fma_peak_gflops, parallel_check, python_check, python_loop_seconds  # noqa: E402
from kernel_shares import kernel_share_rows  # noqa: E402
from peers_report import cpu_name, ratio_lines  # noqa: E402

BENCH = ROOT.parent / "shared" / "bench"
WORKLOADS = ("mlp_b1", "mlp_b64", "cnn", "transformer", "vadd16m", "matmul1024", "chain200")
OPT_LEVEL = {"chain200": 0}
# Workloads timed in both exec modes whatever --exec-mode says: the chain's targets are
# per-call costs of the interpreter and of compiled code.
BOTH_EXEC_MODES = ("chain200",)
MLP_FLOPS = 2 * (784 * 512 + 512 * 512 + 512 * 10)
# Multiply-adds count two; elementwise work is left out (the models are matmul-bound).
FLOPS = {
    "mlp_b1": MLP_FLOPS,
    "mlp_b64": 64 * MLP_FLOPS,
    "cnn": 2 * (16 * 32 * 32 * 27 + 32 * 16 * 16 * 144 + 2048 * 10),
    "transformer": 2 * (4 * 128 * 256 * 256 + 2 * 4 * 128 * 128 * 64 + 2 * 128 * 256 * 1024),
    "matmul1024": 2 * 1024 ** 3,
}
BYTES = {"vadd16m": 3 * 4 * 16 * 1024 * 1024}
BATCH_SECONDS = 0.02
# After each batch the process idles this long before the next peer runs. A peer's idle
# pool threads keep spinning after its last call, and the next peer finds a core taken:
# relax's two-thread matmul1024 ran at one-thread speed (15 ms instead of 7.6) right after
# numpy's batch until about 100 ms had passed (OpenBLAS, even with OPENBLAS_THREAD_TIMEOUT=4),
# and after ONNX Runtime's until about 20-50 ms had (its threads spin some 28 ms of CPU after
# a batch of mlp_b1; measured with time.process_time() across a sleep). 150 ms lets every
# peer's threads go to sleep, so each batch starts on an idle machine.
SETTLE_SECONDS = 0.15
# Untimed calls at the start of each batch, about this long (at least two): after the
# settle, a peer's first calls find its threads asleep and its data out of the caches.
WARM_UP_SECONDS = 0.005
# Iterations of the Python loop timed between the rounds of a workload with an
# interpreter row (a few ms).
PROBE_LOOP = 300_000
THREAD_VARIABLES = ("RELAX_BENCH_THREADS", "RELAX_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS", "TVM_NUM_THREADS")
TOLERANCE = 1e-3


@dataclasses.dataclass
class Peer:
    name: str
    run_batch: Callable[[int], list[int]]  # n calls -> their times in ns
    output: np.ndarray
    times: list[int] = dataclasses.field(default_factory=list)
    close: Callable[[], None] = lambda: None


def local_batch(call: Callable[[], object]) -> Callable[[int], list[int]]:
    def run_batch(n: int) -> list[int]:
        times = []
        for _ in range(n):
            start = time.perf_counter_ns()
            call()
            times.append(time.perf_counter_ns() - start)
        return times

    return run_batch


def local_peer(name: str, call: Callable[[], object]) -> Peer:
    output = call()
    output = output[0] if isinstance(output, (list, tuple)) else output
    return Peer(name, local_batch(call), np.asarray(output))


# ---- the workloads and the peers -------------------------------------------------------


def load_workload(name: str):
    from relax.driver.compile import parse_source

    mod = parse_source(str(BENCH / f"{name}.relax"))
    params_path = BENCH / f"{name}.params.npz"
    weights = dict(np.load(params_path)) if params_path.exists() else {}
    main = mod["main"]
    num_input = int(main.attrs.get("num_input", len(main.params)))
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal([int(d.value) for d in p.struct_info.shape_values]).astype(np.float32)
              for p in main.params[:num_input]]
    return mod, weights, inputs


# Our kernels are compiled for this host, as ONNX Runtime's and numpy's are
# (`--target llvm` measures the generic CPU of the host's triple instead).
TARGET = "llvm -mcpu=native"


def relax_peers(name, mod, weights, inputs, exec_modes):
    """The relax peers (one per exec mode), and the lowered module and executable they run."""
    from relax.build import build, lower
    from relax.target import parse_target
    from relax.transform.bind_params import BindParams
    from relax.vm import VirtualMachine

    target = parse_target(TARGET)
    lowered = lower(BindParams(weights).run(mod) if weights else mod, OPT_LEVEL.get(name, 2), target=target)
    exe = build(lowered, target, opt_level=OPT_LEVEL.get(name, 2), lowered=True)
    peers = []
    for mode in exec_modes:
        function = VirtualMachine(exe, "cpu", exec_mode=mode)["main"]
        peers.append(local_peer("relax" if len(exec_modes) == 1 else f"relax-{mode}",
                                lambda function=function: function(*inputs)))
    return peers, lowered, exe


def numpy_peer(name, weights, inputs) -> Peer:
    run = peers_numpy.MAKERS[name](weights)
    return local_peer("numpy", lambda: run(*inputs))


def onnxruntime_peer(name, mod, weights, inputs, output_shape, threads: int | None) -> Peer | None:
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        return None
    import onnxruntime

    import peers_onnx

    names = [p.name_hint for p in mod["main"].params[:len(inputs)]]
    model = peers_onnx.BUILDERS[name](weights, {n: x.shape for n, x in zip(names, inputs)}, output_shape)
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = dict(zip(names, inputs))
    return local_peer("onnxruntime", lambda: session.run(None, feeds))


def tvm_peer(name, python: str, inputs, scratch: pathlib.Path) -> Peer:
    """TVM in its own process (bench/tvm_peer.py): asked for batches of calls in turn."""
    params = BENCH / f"{name}.params.npz"
    inputs_path, output_path = scratch / f"{name}.inputs.npz", scratch / f"{name}.tvm.npz"
    np.savez(inputs_path, **{f"arg{i}": x for i, x in enumerate(inputs)})
    worker = subprocess.Popen(
        [python, str(ROOT / "bench" / "tvm_peer.py"), str(BENCH / f"{name}.relax"),
         str(params) if params.exists() else "-", str(inputs_path), str(output_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if json.loads(worker.stdout.readline() or "{}").get("ready") is not True:
        worker.kill()
        raise RuntimeError("the TVM worker did not start (see its messages above)")

    def run_batch(n: int) -> list[int]:
        worker.stdin.write(f"{n}\n")
        worker.stdin.flush()
        return json.loads(worker.stdout.readline())

    def close():
        worker.stdin.close()
        worker.wait()

    return Peer("tvm", run_batch, np.load(output_path)["out"], close=close)


# ---- timing --------------------------------------------------------------------------------


def measure(peers: list[Peer], budget: float, settle: float = SETTLE_SECONDS,
            probe: Callable[[], float] | None = None) -> list[float]:
    """Round robin: the machine idles `settle` seconds, then each peer in turn runs a few
    untimed calls and a timed batch; `probe`, when given, runs after each round, and
    its results are returned."""
    probes: list[float] = []
    # Each peer has run once already (its checked output); two more calls estimate its cost.
    estimates = {}
    for peer in peers:
        peer.run_batch(3)  # the first calls after building pay for cold caches and sleeping threads
        estimates[peer.name] = statistics.median(peer.run_batch(5)) / 1e9
    # Next to a slow peer, the fast ones run longer batches (up to half a second), so
    # that they too get many calls in the rounds the slow one allows.
    batch_seconds = min(max(BATCH_SECONDS, max(estimates.values()) / 4), 0.5)
    batches = {name: max(1, int(batch_seconds / max(one, 1e-9))) for name, one in estimates.items()}
    warm_up = {name: max(2, int(WARM_UP_SECONDS / max(one, 1e-9))) for name, one in estimates.items()}
    minimum_calls = 3 if max(estimates.values()) > 0.5 else 5
    deadline = time.perf_counter() + budget
    round_index = 0
    while True:
        for offset in range(len(peers)):
            peer = peers[(round_index + offset) % len(peers)]
            time.sleep(settle)
            peer.run_batch(warm_up[peer.name])  # untimed: its threads awake, its data in cache
            peer.times.extend(peer.run_batch(batches[peer.name]))
        if probe is not None:
            probes.append(probe())
        round_index += 1
        if time.perf_counter() > deadline and all(len(p.times) >= minimum_calls for p in peers):
            return probes


def machine_limits() -> dict[str, float]:
    """numpy copy bandwidth (64 MiB, bytes read + written) and numpy sgemm (1024^3)."""
    source = np.ones(16 * 1024 * 1024, np.float32)
    target = np.empty_like(source)
    a = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)
    copies, products = [], []
    for _ in range(10):
        start = time.perf_counter()
        np.copyto(target, source)
        copies.append(time.perf_counter() - start)
        start = time.perf_counter()
        a @ a
        products.append(time.perf_counter() - start)
    return {"copy_gbs": 2 * source.nbytes / min(copies) / 1e9, "sgemm_gflops": 2 * 1024 ** 3 / min(products) / 1e9}


# ---- report ----------------------------------------------------------------------------------


def duration_text(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def throughput_text(name: str, ns: float) -> str:
    if name in FLOPS:
        return f"{FLOPS[name] / ns:.2f} GFLOP/s"
    if name in BYTES:
        return f"{BYTES[name] / ns:.1f} GB/s"
    if name == "chain200":
        return f"{ns / 200:.0f} ns/add"
    return ""


def check_text(peer: Peer, reference: np.ndarray) -> str:
    if peer.output.shape != reference.shape:
        return f"MISMATCH shape {peer.output.shape}"
    error = float(np.max(np.abs(peer.output.astype(np.float64) - reference))) / max(float(np.max(np.abs(reference))), 1e-30)
    return f"ok {error:.0e}" if error <= TOLERANCE else f"MISMATCH {error:.1e}"


def bench_workload(name: str, args, scratch: pathlib.Path) -> list[str]:
    mod, weights, inputs = load_workload(name)
    modes = ("interp", "compiled") if name in BOTH_EXEC_MODES or args.exec_mode == "both" else (args.exec_mode,)
    numpy_side = numpy_peer(name, weights, inputs)
    relax_side, lowered, exe = relax_peers(name, mod, weights, inputs, modes)
    peers = [*relax_side, numpy_side]
    if not args.no_onnxruntime:
        peer = onnxruntime_peer(name, mod, weights, inputs, numpy_side.output.shape, args.threads)
        if peer is not None:
            peers.append(peer)
    if args.tvm_python:
        peers.append(tvm_peer(name, args.tvm_python, inputs, scratch))
    # The interpreter is Python: its row moves with the core's speed at Python, which a
    # loop timed between the rounds shows (bench/fma_peak.py, python_loop_seconds).
    probe = (lambda: python_loop_seconds(1, PROBE_LOOP)) if "interp" in modes else None
    try:
        probes = measure(peers, args.budget, args.settle_ms / 1000, probe)
    finally:
        for peer in peers:
            peer.close()
    reference = numpy_side.output.astype(np.float64)
    medians = {p.name: statistics.median(p.times) for p in peers}
    best = min(medians.values())
    rows = []
    for peer in peers:
        ns = medians[peer.name]
        rows.append(f"{name if peer is peers[0] else '':<12} {peer.name:<14} {duration_text(ns):>10} "
                    f"{ns / best:>8.1f}x {throughput_text(name, ns):>16} {len(peer.times):>7}  {check_text(peer, reference)}")
    if probes:
        rows.append(f"  one core at Python between the rounds: a loop of {PROBE_LOOP:,} iterations took "
                    f"{statistics.median(probes) * 1e3:.1f} ms (median; {min(probes) * 1e3:.1f}-"
                    f"{max(probes) * 1e3:.1f})")
    if not args.no_kernel_shares:
        rows.extend(kernel_share_rows(lowered, exe, inputs, args.fma_gflops))
    return rows, medians


def main(argv=None) -> int:
    global TARGET
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS), metavar="WORKLOAD",
                        help=f"some of: {', '.join(WORKLOADS)} (default: all)")
    parser.add_argument("--budget", type=float, default=4.0, help="seconds of alternating timing per workload")
    parser.add_argument("--tvm-python", default=os.environ.get("RELAX_BENCH_TVM_PYTHON"),
                        help="a Python with apache-tvm installed: adds TVM as a peer (env RELAX_BENCH_TVM_PYTHON)")
    parser.add_argument("--no-onnxruntime", action="store_true", help="leave ONNX Runtime out")
    parser.add_argument("--target", default=TARGET, help="relax's target (default: this host's CPU)")
    parser.add_argument("--settle-ms", type=float, default=SETTLE_SECONDS * 1000,
                        help="idle time after each batch, so that no peer's spinning threads hold a core "
                             "the next one needs (default: %(default).0f)")
    parser.add_argument("--exec-mode", choices=("interp", "compiled", "both"), default="compiled",
                        help="relax's VM exec mode (default: compiled, a static model as one native call; "
                             "chain200 is always timed in both)")
    parser.add_argument("--no-kernel-shares", action="store_true",
                        help="leave out the rows of each kernel's share of a run and GFLOP/s (bench/kernel_shares.py)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for every peer (default: each peer's own default, all cores)")
    args = parser.parse_args(argv)
    TARGET = args.target
    if args.threads and os.environ.get("RELAX_BENCH_THREADS") != str(args.threads):
        # BLAS reads its thread count when numpy is first imported: start again with it set.
        for variable in THREAD_VARIABLES:
            os.environ[variable] = str(args.threads)
        os.execv(sys.executable, [sys.executable, __file__, *(sys.argv[1:] if argv is None else argv)])
    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {unknown[0]!r} (choose from {', '.join(WORKLOADS)})")
    started = time.perf_counter()

    limits = machine_limits()
    threads = args.threads or os.cpu_count() or 1
    limits["fma_gflops"] = args.fma_gflops = fma_peak_gflops(threads)
    print(f"# {cpu_name()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, numpy {np.__version__}, "
          f"threads: {args.threads or 'each peer its default'}, relax exec mode: {args.exec_mode}")
    print(f"# machine limits (this run): numpy copy {limits['copy_gbs']:.1f} GB/s (read + write), "
          f"numpy sgemm {limits['sgemm_gflops']:.1f} GFLOP/s, "
          f"float32 FMA peak {limits['fma_gflops']:.1f} GFLOP/s (bench/fma_peak.py)")
    parallel_check(threads, "before the workloads")
    python_check("before the workloads")
    if args.no_onnxruntime or importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        print("# onnxruntime: not measured (pip install .[bench] for onnxruntime and onnx)")
    else:
        import onnxruntime

        print(f"# onnxruntime {onnxruntime.__version__}")
    if not args.tvm_python:
        print("# tvm: not measured (--tvm-python PATH to a Python with apache-tvm)")
    print(f"{'workload':<12} {'peer':<14} {'median':>10} {'x best':>9} {'throughput':>16} {'calls':>7}  check")
    medians = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.workloads:
            rows, medians[name] = bench_workload(name, args, pathlib.Path(scratch))
            print("\n".join(rows), flush=True)
    parallel_check(threads, "after the workloads")
    python_check("after the workloads")
    print("\n".join([f"# {time.perf_counter() - started:.0f} s in all", *ratio_lines(medians)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
