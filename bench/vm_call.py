"""Per-call overhead of the VM's lean path: kernel calls, a whole model call, per-op cost.

    kernel   one no-op-sized kernel (add of two float32[4] into a third) called from
             Python in a loop: the cost of the kernel call path (checks, argument
             packing, the foreign call), in nanoseconds per call
    mlp      vm["main"] of samples/mlp.relax at -O2 (784-128-64-10, batch 1, weights
             passed as arguments), median microseconds per call; and its kernels alone
             (each called on zero arrays, back to back): the difference is the VM's overhead
    mlp_b1   /work/shared/bench/mlp_b1.relax at -O2 with the weights bound as constants
             (784-512-512-10, batch 1), when that file exists
    chain200 /work/shared/bench/chain200.relax at -O0 (200 dependent adds on float32[4]),
             nanoseconds per add

Each figure is given for exec_mode "interp" (the dispatch loop) and "compiled" (the
bytecode turned into straight-line Python), both with the default pooled allocator.
Outputs of the two modes are checked against each other first. Figures are best of
--repeat rounds of CPU time of this process (steadier than wall time on a busy host),
except mlp latency (median wall time, as bench/models.py).

Usage: .venv/bin/python bench/vm_call.py [--repeat N] [--modes interp,compiled]
"""

from __future__ import annotations

import argparse
import inspect
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from relax.build import build  # noqa: E402
from relax.driver.compile import parse_source  # noqa: E402
from relax.vm import VirtualMachine  # noqa: E402
from relax.vm.bytecode.isa import FuncKind, Opcode  # noqa: E402

SHARED = pathlib.Path("/work/shared/bench")
SAMPLES = ROOT / "samples"


def best_cpu_time(function, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def make_vm(exe, mode: str):
    """A VM in `mode`; a VM without exec_mode (before the compiled mode existed) runs interp."""
    if "exec_mode" in inspect.signature(VirtualMachine.__init__).parameters:
        return VirtualMachine(exe, "cpu", exec_mode=mode)
    if mode != "interp":
        return None
    return VirtualMachine(exe, "cpu")


def kernel_call_ns(repeat: int) -> float:
    mod = parse_source(str(SHARED / "chain200.relax"))
    exe = build(mod, "llvm", 0)
    kernel = exe.imports[0].get_function("add")
    kernel = getattr(kernel, "fast_call", None) or kernel
    a = np.ones(4, np.float32)
    out = np.empty(4, np.float32)
    calls = 20_000

    def loop():
        for _ in range(calls):
            kernel(a, a, out)

    loop()
    assert np.array_equal(out, a + a)
    return best_cpu_time(loop, repeat) * 1e9 / calls


def sample_call_us(name: str, mode: str, repeat: int):
    mod = parse_source(str(SAMPLES / f"{name}.relax"))
    data = np.load(SAMPLES / "data" / f"{name}.inputs.npz")
    expected = np.load(SAMPLES / "data" / f"{name}.expected.npz")
    vm = make_vm(build(mod, "llvm", 2), mode)
    if vm is None:
        return None
    main = vm["main"]
    args = [data[p.name_hint] for p in mod["main"].params]
    np.testing.assert_allclose(main(*args)[0], expected["00"], rtol=1e-4, atol=1e-5)
    return median_latency_us(main, args, repeat), kernels_alone_us(vm, repeat)


def kernel_calls(vm) -> list:
    """(lean call, zero arrays of its parameters) for each kernel call of the VM's bytecode.

    The kernels are read from the executable's CALL instructions: each names a function of
    the VM's pool, where a kernel is its lean call, which keeps the kernel. The decoded
    code calls native entries, which do not."""
    calls = []
    for info in vm.exe.func_table:
        if info.kind != FuncKind.VM_FUNC:
            continue
        for instruction in vm.exe.instructions(info):
            if instruction.opcode != Opcode.CALL:
                continue
            function = vm.func_pool[instruction.fields[1]]
            kernel = getattr(function, "kernel", None)
            if kernel is not None:
                calls.append((function, [np.zeros(tuple(p.shape), dtype=p.dtype) for p in kernel.info.params]))
    return calls


def kernels_alone_us(vm, repeat: int) -> float:
    """The kernels of one call run back to back on zero arrays: the call's arithmetic, not its overhead."""
    calls = kernel_calls(vm)
    if not calls:
        raise SystemExit("vm_call.py: no kernel calls found in the bytecode")

    def run():
        for function, arrays in calls:
            function(*arrays)

    for _ in range(10):
        run()
    times = []
    for _ in range(200 * repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def median_latency_us(main, args, repeat: int) -> float:
    for _ in range(20):
        main(*args)
    times = []
    for _ in range(200 * repeat):
        start = time.perf_counter()
        main(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def mlp_b1_call_us(mode: str, repeat: int):
    path = SHARED / "mlp_b1.relax"
    if not path.exists():
        return None
    mod = parse_source(str(path))
    params = dict(np.load(SHARED / "mlp_b1.params.npz"))
    func = mod["main"]
    inputs = int(func.attrs.get("num_input", len(func.params)))
    vm = make_vm(build(mod, "llvm", 2, params=params), mode)
    if vm is None:
        return None
    x = np.random.default_rng(0).standard_normal(tuple(int(d) for d in _shape(func.params[0]))).astype("float32")
    assert inputs == 1
    return median_latency_us(vm["main"], [x], repeat)


def _shape(param):
    return [v.value for v in param.struct_info.shape.values]


def chain200_ns_per_op(mode: str, repeat: int):
    mod = parse_source(str(SHARED / "chain200.relax"))
    vm = make_vm(build(mod, "llvm", 0), mode)
    if vm is None:
        return None
    main = vm["main"]
    x = np.arange(4, dtype=np.float32)
    assert np.array_equal(main(x), x * 201)
    rounds = 200

    def loop():
        for _ in range(rounds):
            main(x)

    loop()
    return best_cpu_time(loop, repeat) * 1e9 / (rounds * 200)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modes", default="interp,compiled")
    options = parser.parse_args(argv)
    print(f"kernel call (add, float32[4]) : {kernel_call_ns(options.repeat):8.0f} ns/call")
    for mode in options.modes.split(","):
        measured = sample_call_us("mlp", mode, options.repeat)
        if measured is None:
            print(f"[{mode}] not available in this VM")
            continue
        b1 = mlp_b1_call_us(mode, options.repeat)
        chain = chain200_ns_per_op(mode, options.repeat)
        mlp, kernels = measured
        print(f"[{mode:8s}] mlp sample -O2   : {mlp:8.1f} us/call ({kernels:.1f} us in its kernels alone, "
              f"{mlp - kernels:.1f} us overhead)")
        if b1 is not None:
            print(f"[{mode:8s}] mlp_b1 -O2+w     : {b1:8.1f} us/call")
        print(f"[{mode:8s}] chain200 -O0     : {chain:8.0f} ns/add")
    return 0


if __name__ == "__main__":
    sys.exit(main())
