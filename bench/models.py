"""Speed and memory of the mlp, cnn and transformer samples at -O0 and -O2.

    python bench/models.py                      mlp, cnn, transformer at -O0, -O2, -O2+w
    python bench/models.py transformer --repeat 500 --levels 2

-O2+w is -O2 with the weights bound as constants (what `relaxc --params` gives):
fold-constant then computes the weight transposes once, at build time.

For each sample and level, in one run on one machine:

  latency    median of N calls of vm["main"] (default pooled allocator, after 10
             warm-up calls), in microseconds
  allocs     vm.builtin.alloc_storage calls in one call
  bytes      bytes those calls asked for (naive allocation: a fresh buffer each)
  peak       the most bytes alive at once during the call (buffers are counted
             until Python frees them: kills and planning both show here)
  tensors    the sum of the sizes of every tensor the call's kernels write (the same
             level's pipeline without static-plan-block-memory and kill-after-last-use,
             where each tensor has its own buffer), outputs included
  planned    bytes / tensors

Outputs are checked against the sample's expected outputs (TVM's) first.
Times are wall-clock on a machine others may be using: compare rows of one run.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import statistics
import sys
import time
import weakref

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from relax.build import build  # noqa: E402
from relax.driver.compile import parse_source  # noqa: E402
from relax.ir import expr as rx  # noqa: E402
from relax.ir.visitor import ExprMutator  # noqa: E402
from relax.runtime import allocator  # noqa: E402
from relax.ir.pass_infra import PassContext, run_passes  # noqa: E402
from relax.transform.pipeline import pipeline  # noqa: E402
from relax.vm import VirtualMachine  # noqa: E402

SAMPLES = ROOT / "samples"
DEFAULT = ("mlp", "cnn", "transformer")
PLANNING = {"static-plan-block-memory", "kill-after-last-use"}


class CountingAllocator(allocator.NaiveAllocator):
    """A fresh buffer per request; counts requests, bytes and the peak of live bytes."""

    kind = "bench-counting"

    def __init__(self, device):
        super().__init__(device)
        self.requests = self.live = self.peak = 0

    def alloc(self, nbytes):
        storage = super().alloc(nbytes)
        self.requests += 1
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage.buffer.base, self._free, nbytes)
        return storage

    def _free(self, nbytes):
        self.live -= nbytes


allocator.ALLOCATORS.setdefault(CountingAllocator.kind, CountingAllocator)


def executable(mod, level: int, disabled=()):
    with PassContext(opt_level=level, disabled=set(disabled)) as context:
        lowered = run_passes(mod, pipeline(level), context)
    return build(lowered, "llvm", level, lowered=True)


def memory_of_one_call(exe, args):
    vm = VirtualMachine(exe, "cpu", memory=CountingAllocator.kind)
    vm["main"](*args)
    counter = vm.allocator(0)
    requests, allocated = counter.requests, counter.allocated_bytes
    counter.peak = counter.live
    out = vm["main"](*args)
    return out, counter.requests - requests, counter.allocated_bytes - allocated, counter.peak - counter.live


def latency_us(exe, args, repeat: int) -> float:
    vm = VirtualMachine(exe, "cpu")
    main = vm["main"]
    for _ in range(10):
        main(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        main(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def check(out, expected, name, level):
    outputs = out if isinstance(out, tuple) else (out,)
    for index, key in enumerate(sorted(expected.files)):
        if not np.allclose(outputs[index], expected[key], rtol=1e-4, atol=1e-5):
            raise SystemExit(f"{name} -O{level}: output {key} differs from the expected output")


def bind_weights(mod, data):
    """`main` with every parameter after the first `num_input` bound to its array."""
    func = mod["main"]
    inputs = int(func.attrs.get("num_input", len(func.params)))
    binder = ExprMutator()
    for param in func.params[inputs:]:
        binder.remember(param, rx.Constant(data[param.name_hint]))
    attrs = type(func.attrs)({k: v for k, v in func.attrs.items() if k != "num_input"})
    bound = dataclasses.replace(func, params=func.params[:inputs], body=binder.visit(func.body), attrs=attrs)
    return mod.with_function("main", bound)


def measure(name: str, level: str, repeat: int) -> dict:
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    data = np.load(SAMPLES / "data" / f"{name}.inputs.npz")
    expected = np.load(SAMPLES / "data" / f"{name}.expected.npz")
    if level.endswith("w"):
        mod = bind_weights(mod, data)
    args = [data[p.name_hint] for p in mod["main"].params]
    level = int(level.rstrip("w"))
    exe = executable(mod, level)
    out, requests, allocated, peak = memory_of_one_call(exe, args)
    check(out, expected, name, level)
    _, _, tensors, _ = memory_of_one_call(executable(mod, level, PLANNING), args)
    label = f"-O{level}" + ("+w" if len(args) < len(data.files) else "")
    return {"model": name, "level": label, "latency": latency_us(exe, args, repeat), "allocs": requests,
            "bytes": allocated, "peak": peak, "tensors": tensors, "planned": allocated / tensors if tensors else 1.0}


def table(rows) -> str:
    header = f"{'model':<12} {'level':<6} {'latency us':>11} {'allocs':>7} {'bytes':>10} {'peak':>10} {'tensors':>10} {'planned':>8}"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r['model']:<12} {r['level']:<6} {r['latency']:>11.1f} {r['allocs']:>7} {r['bytes']:>10} "
                     f"{r['peak']:>10} {r['tensors']:>10} {r['planned']:>8.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(DEFAULT))
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--levels", default="0,2,2w", help="-O levels; 2w: -O2 with the weights bound as constants")
    options = parser.parse_args(argv)
    rows = [measure(name, level, options.repeat) for name in options.models for level in options.levels.split(",")]
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
