"""relax.disco beside its engines: allreduce against mpi4py, a tensor-parallel MLP against one worker.

    python bench/disco.py                          both parts, about a minute
    python bench/disco.py allreduce                the collective only
    python bench/disco.py mlp --hidden 2048        the MLP only, smaller

allreduce  relax.disco's MPI communicator (relax/disco/ccl_mpi.py) against mpi4py's own
           `Allreduce` on the same float32 buffers, 1 KB to 64 MB, on 2 ranks: this script
           runs itself under `mpiexec -n 2` (the one next to this Python). Each size times the
           three ways in turn (a barrier before each call, each call timed on its own, the
           median printed): mpi4py, MPICommunicator() as the runtime uses it (every call
           first exchanges a 10-int shape signature so that mismatched workers get an error,
           not a hang) and MPICommunicator(verify=False) (the transport alone). GB/s is
           the buffer's bytes over the time (nccl-tests' "algbw"); the ratios are against
           mpi4py (target: at least 0.9).
mlp        the Megatron-style tensor-parallel MLP of samples/tp_mlp.relax at batch 64,
           hidden 4096, ffn 4 x hidden (--hidden, --ffn, --batch): relu(x @ w1 + b1) @ w2 + b2.
           The weights are sharded once, as a served model holds them (sess.scatter: w1 and
           b1 by columns, w2 by rows); each call broadcasts x, runs the program (two matmuls
           on the shards, one R.ccl.allreduce) and waits for every worker. Against it: the
           unsharded program on one VirtualMachine in this process with 2 kernel threads
           (RELAX_NUM_THREADS=2), and on a 1-worker ProcessSession with 2 threads (the same
           session overhead as the 2 workers). The 2 workers run 1 kernel thread each
           (RELAX_NUM_THREADS=1 in their environment). Latency is the median of the timed
           calls; the ratio is the baseline's latency over the 2 workers' (target: at
           least 0.8 on 2 cores).

Figures, not assertions: compare the rows of one run (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KB .. 64 MB
SECONDS_PER_SIZE = 1.0


# ---- allreduce ---------------------------------------------------------------------------------

def _allreduce_rank() -> None:
    """One rank of `mpiexec -n 2 python bench/disco.py --allreduce-rank`; rank 0 prints."""
    from mpi4py import MPI

    from relax.disco.ccl_mpi import MPICommunicator

    comm = MPI.COMM_WORLD
    ways = {"mpi4py": lambda s, r: comm.Allreduce(s, r, op=MPI.SUM),
            "relax": MPICommunicator(comm).allreduce,
            "relax-noverify": MPICommunicator(comm, verify=False).allreduce}
    if comm.rank == 0:
        print(f"allreduce, float32 sum, {comm.size} ranks (mpiexec, this host); GB/s = bytes / median time")
        print(f"{'bytes':>10}  {'mpi4py':>8}  {'relax':>8}  {'noverify':>8}  {'relax/mpi4py':>12}  "
              f"{'noverify/mpi4py':>15}  {'mpi4py us':>10}")
    for size in SIZES:
        send = np.ones(size // 4, dtype=np.float32)
        recv = np.empty_like(send)
        times = {name: [] for name in ways}
        deadline = time.perf_counter() + SECONDS_PER_SIZE
        rounds = 0
        while True:
            for name, way in ways.items():
                args = (send, recv) if name == "mpi4py" else (send, recv, "sum")
                comm.Barrier()
                start = time.perf_counter()
                way(*args)
                times[name].append(time.perf_counter() - start)
            rounds += 1
            # Rank 0 decides when to stop, so both ranks run the same number of rounds.
            if comm.bcast(rounds >= 5 and time.perf_counter() > deadline or rounds >= 2000, root=0):
                break
        if comm.rank == 0:
            median = {name: statistics.median(values) for name, values in times.items()}
            gbps = {name: size / value / 1e9 for name, value in median.items()}
            print(f"{size:>10}  {gbps['mpi4py']:>8.2f}  {gbps['relax']:>8.2f}  {gbps['relax-noverify']:>8.2f}  "
                  f"{gbps['relax'] / gbps['mpi4py']:>12.2f}  {gbps['relax-noverify'] / gbps['mpi4py']:>15.2f}  "
                  f"{median['mpi4py'] * 1e6:>10.1f}", flush=True)


def run_allreduce() -> None:
    from relax.disco.process import find_mpiexec

    command = [find_mpiexec(), "-n", "2", sys.executable, __file__, "--allreduce-rank"]
    subprocess.run(command, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "lib")))


# ---- the tensor-parallel MLP --------------------------------------------------------------------

def mlp_program(batch: int, hidden: int, ffn: int, workers: int) -> str:
    """relu(x @ w1 + b1) @ w2 + b2 on shards of `workers` (1: the plain MLP, no collective)."""
    f = ffn // workers
    t = 'dtype="float32"'
    reduce = (f'            y: R.Tensor(({batch}, {hidden}), {t}) = R.ccl.allreduce(partial, op_type="sum", '
              'in_group=True)\n' if workers > 1 else
              f'            y: R.Tensor(({batch}, {hidden}), {t}) = partial\n')
    return f"""# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({batch}, {hidden}), {t}), w1: R.Tensor(({hidden}, {f}), {t}), b1: R.Tensor(({f},), {t}), w2: R.Tensor(({f}, {hidden}), {t}), b2: R.Tensor(({hidden},), {t})) -> R.Tensor(({batch}, {hidden}), {t}):
        with R.dataflow():
            h: R.Tensor(({batch}, {f}), {t}) = R.matmul(x, w1, out_dtype="float32")
            h_bias: R.Tensor(({batch}, {f}), {t}) = R.add(h, b1)
            h_relu: R.Tensor(({batch}, {f}), {t}) = R.nn.relu(h_bias)
            partial: R.Tensor(({batch}, {hidden}), {t}) = R.matmul(h_relu, w2, out_dtype="float32")
{reduce}            out: R.Tensor(({batch}, {hidden}), {t}) = R.add(y, b2)
            R.output(out)
        return out
"""


def _build(text: str, path: str) -> str:
    from relax.build import build
    from relax.script import parse

    build(parse(text, os.path.basename(path).replace(".vmx", ".relax")), "llvm -mcpu=native").export(path)
    return path


def _time(call, seconds: float) -> list[float]:
    for _ in range(2):
        call()
    times = []
    deadline = time.perf_counter() + seconds
    while len(times) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def _session_runner(session, path: str, weights, x, sharded: bool):
    module = session.load_vm_module(path)
    w1, b1, w2, b2 = weights
    if sharded:  # once, as a served model holds its weights
        shards = [session.scatter(w1, axis=1), session.scatter(b1, axis=0), session.scatter(w2, axis=0)]
    else:
        shards = [session.broadcast(w1), session.broadcast(b1), session.broadcast(w2)]
    bias = session.broadcast(b2)
    function = module["main"]

    def call():
        return function(session.broadcast(x), *shards, bias)

    return call, lambda: call().debug_get_from_remote(0)


def run_mlp(batch: int, hidden: int, ffn: int, seconds: float) -> None:
    from relax.disco import ProcessSession

    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, hidden), dtype=np.float32)
    weights = (rng.standard_normal((hidden, ffn), dtype=np.float32) / np.float32(hidden ** 0.5),
               rng.standard_normal(ffn, dtype=np.float32) * np.float32(0.1),
               rng.standard_normal((ffn, hidden), dtype=np.float32) / np.float32(ffn ** 0.5),
               rng.standard_normal(hidden, dtype=np.float32) * np.float32(0.1))
    w1, b1, w2, b2 = weights
    reference = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    gflop = 2 * 2 * batch * hidden * ffn / 1e9
    print(f"tensor-parallel MLP: batch {batch}, hidden {hidden}, ffn {ffn} ({gflop:.1f} GFLOP a call), "
          f"{os.cpu_count()} cores")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        plain = _build(mlp_program(batch, hidden, ffn, 1), os.path.join(folder, "mlp.vmx"))
        tp = _build(mlp_program(batch, hidden, ffn, 2), os.path.join(folder, "tp_mlp.vmx"))

        os.environ["RELAX_NUM_THREADS"] = "2"  # read when a VM loads its kernels, here and by workers started now
        from relax.vm import VirtualMachine, load

        function = VirtualMachine(load(plain), "cpu")["main"]
        rows.append(("1 VM x 2 threads (no session)", _time(lambda: function(x, *weights), seconds),
                     function(x, *weights)))
        with ProcessSession(1) as session:
            call, result = _session_runner(session, plain, weights, x, sharded=False)
            rows.append(("1 worker x 2 threads", _time(call, seconds), result()))
        os.environ["RELAX_NUM_THREADS"] = "1"
        with ProcessSession(2) as session:
            call, result = _session_runner(session, tp, weights, x, sharded=True)
            rows.append(("2 workers x 1 thread", _time(call, seconds), result()))
    tp_ms = statistics.median(rows[-1][1]) * 1e3
    print(f"{'':<32}  {'median ms':>9}  {'min ms':>7}  {'GFLOP/s':>8}  {'runs':>4}  {'baseline/2x1':>12}  max err")
    for name, times, result in rows:
        median = statistics.median(times) * 1e3
        error = float(np.max(np.abs(np.asarray(result) - reference)) / np.max(np.abs(reference)))
        print(f"{name:<32}  {median:>9.2f}  {min(times) * 1e3:>7.2f}  {gflop / median * 1e3:>8.1f}  "
              f"{len(times):>4}  {median / tp_ms:>12.2f}  {error:.1e}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="*", metavar="PART", help="allreduce, mlp (default: both)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--ffn", type=int, default=None, help="default: 4 x hidden")
    parser.add_argument("--seconds", type=float, default=5.0, help="timing budget of each MLP row")
    parser.add_argument("--allreduce-rank", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.allreduce_rank:
        _allreduce_rank()
        return 0
    parts = options.parts or ["allreduce", "mlp"]
    if set(parts) - {"allreduce", "mlp"}:
        parser.error(f"unknown part(s) {sorted(set(parts) - {'allreduce', 'mlp'})} (parts: allreduce, mlp)")
    if "allreduce" in parts:
        run_allreduce()
        print()
    if "mlp" in parts:
        run_mlp(options.batch, options.hidden, options.ffn or 4 * options.hidden, options.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
