"""The cuda target on this machine's GPU: kernels and models against cupy and PyTorch.

    python bench/gpu.py                      everything, about a minute on an H100
    python bench/gpu.py add matmul           some workloads
    python bench/gpu.py --arch sm_90         build for this arch (default: the GPU's)
    python bench/gpu.py matmul --matmul-tiles 16x4x16,16x8x8
                                             the matmul rule's block shapes side by side
                                             (SIDExREGxK_STEP, pass config tir.gpu_matmul_tile)
    python bench/gpu.py matmul --tensor-cores
                                             also float16 on mma.sync (tir.gpu_tensor_cores)

  add          C = A + B on 256M float32 (3 GiB moved), the relax kernel against cupy's
               own device-to-device copy of the same bytes (the bandwidth ceiling);
               target: 85% of the copy's GB/s or better
  matmul       4096 x 4096 x 4096 in float16 and float32, the relax kernel against
               cupy.matmul (cuBLAS); target: 70% of cuBLAS's TFLOP/s or better
  mlp          samples/mlp.relax and samples/transformer.relax end to end through the
  transformer  VM on the GPU (inputs already on the device: vm.save_function), next to
               the same model in PyTorch when torch is installed

Kernel times are CUDA-event times of the median of the runs, after warm-up. Without
cupy or a GPU it says so and exits 1.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from relax.runtime.cuda.support import cuda_problem  # noqa: E402

WORKLOADS = ("add", "matmul", "mlp", "transformer")
ADD_N = 256 * 1024 * 1024
MATMUL_N = 4096


def gpu_time_ms(cupy, run, repeat: int = 20, warmup: int = 3) -> float:
    """Median milliseconds of `run()` measured with CUDA events."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def build_kernel(text: str, name: str, target: str, config: dict | None = None):
    """The GPU kernel `name` of a one-operator Relax module, loaded on the GPU; `config` is
    the build's pass config."""
    from relax.build import build
    from relax.ir.pass_infra import PassContext
    from relax.script import parse
    from relax.vm import VirtualMachine

    with PassContext(config=config or {}):
        executable = build(parse(text), target)
    vm = VirtualMachine(executable, "cuda")
    for library in vm._device_libraries:
        kernel = library.get_function(name)
        if kernel is not None:
            return kernel
    raise SystemExit(f"gpu.py: no kernel '{name}' in the build (kernels: "
                     f"{[k for lib in vm._device_libraries for k in lib.kernels]})")


def one_op_module(op: str, shape_a, shape_b, shape_c, dtype: str) -> str:
    def tensor(shape):
        dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
        return f'R.Tensor(({dims}), dtype="{dtype}")'

    return f"""
@I.ir_module
class Module:
    @R.function
    def main(a: {tensor(shape_a)}, b: {tensor(shape_b)}) -> {tensor(shape_c)}:
        with R.dataflow():
            c: {tensor(shape_c)} = R.{op}(a, b)
            R.output(c)
        return c
"""


def bench_add(cupy, target: str) -> None:
    kernel = build_kernel(one_op_module("add", (ADD_N,), (ADD_N,), (ADD_N,), "float32"), "add", target)
    a = cupy.random.random(ADD_N, dtype=cupy.float32)
    b = cupy.random.random(ADD_N, dtype=cupy.float32)
    c = cupy.empty_like(a)
    ms = gpu_time_ms(cupy, lambda: kernel(a, b, c))
    assert cupy.allclose(c, a + b), "add: wrong result"
    copy_ms = gpu_time_ms(cupy, lambda: cupy.copyto(c, a))
    moved, copied = 3 * a.nbytes, 2 * a.nbytes
    ours, ceiling = moved / ms / 1e6, copied / copy_ms / 1e6
    print(f"add 256M float32    relax {ms:8.3f} ms  {ours:7.1f} GB/s   cupy copy {copy_ms:8.3f} ms "
          f"{ceiling:7.1f} GB/s   {100 * ours / ceiling:5.1f}% of copy (target 85%)")


def matmul_tolerance(largest: float, k: int, dtype: str) -> float:
    """The largest error a correct matmul may show against a float32 reference.

    R.matmul accumulates in its output dtype (TVM's semantics), so a float16 product
    rounds each of its k partial sums to float16: a random walk of k roundings of at
    most half an ulp of the largest partial sum. Six of its standard deviations bound
    the 16M elements; a wrong kernel misses by the size of the values themselves."""
    if dtype != "float16":
        return 1e-2
    ulp = 2.0 ** (np.floor(np.log2(largest)) - 10)
    return 6 * np.sqrt(k / 12) * ulp


def bench_matmul(cupy, target: str, dtype: str, variants=(("", {}),)) -> None:
    """The matmul kernel built with each of `variants` ((label, pass config); ("", {}): the
    default build) beside cuBLAS."""
    n = MATMUL_N
    a = (cupy.random.random((n, n), dtype=cupy.float32) - 0.5).astype(dtype)
    b = (cupy.random.random((n, n), dtype=cupy.float32) - 0.5).astype(dtype)
    c = cupy.empty((n, n), dtype=dtype)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    tolerance = matmul_tolerance(float(cupy.max(cupy.abs(reference))), n, dtype)
    cublas_ms = gpu_time_ms(cupy, lambda: cupy.matmul(a, b), repeat=10)
    flops = 2 * n ** 3
    theirs = flops / cublas_ms / 1e9
    for label, config in variants:
        kernel = build_kernel(one_op_module("matmul", (n, n), (n, n), (n, n), dtype), "matmul", target, config)
        c.fill(0)
        ms = gpu_time_ms(cupy, lambda: kernel(a, b, c), repeat=10)
        error = float(cupy.max(cupy.abs(c.astype(cupy.float32) - reference)))
        assert error <= tolerance, f"matmul {dtype} {label or 'default'}: max error {error}"
        ours = flops / ms / 1e9
        print(f"matmul 4096^3 {dtype:8s}{' ' + label if label else '':9s} relax {ms:8.3f} ms {ours:7.1f} TFLOP/s   "
              f"cuBLAS {cublas_ms:8.3f} ms {theirs:7.1f} TFLOP/s   {100 * ours / theirs:5.1f}% of cuBLAS (target 70%)")


def matmul_variants(tiles: str, tensor_cores: bool, dtype: str) -> list:
    """(label, pass config) for each --matmul-tiles shape, and mma when asked for float16."""
    from relax.tir.gpu_schedule.matmul import TILE_KEY
    from relax.tir.gpu_schedule.matmul_mma import TENSOR_CORES_KEY

    variants = [(tile, {TILE_KEY: tile}) for tile in tiles.split(",") if tile] or [("", {})]
    if tensor_cores and dtype == "float16":
        variants.append(("mma", {TENSOR_CORES_KEY: 1}))
    return variants


def bench_model(cupy, target: str, name: str) -> None:
    from relax.build import build
    from relax.driver.compile import parse_source
    from relax.vm import VirtualMachine

    mod = parse_source(str(ROOT / "samples" / f"{name}.relax"))
    inputs = np.load(ROOT / "samples" / "data" / f"{name}.inputs.npz")
    args = [inputs[p.name_hint] for p in mod["main"].params]
    vm = VirtualMachine(build(mod, target), "cuda")
    vm.save_function("main", "bench", *args)  # inputs copied to the GPU once
    run = vm["bench"]
    ms = gpu_time_ms(cupy, run, repeat=50, warmup=5)
    line = f"{name:12s}        relax {ms:8.3f} ms (VM on the GPU, inputs on the device)"
    torch_ms = torch_latency(name, args)
    if torch_ms is not None:
        line += f"   PyTorch {torch_ms:8.3f} ms   relax/PyTorch {ms / torch_ms:5.2f}x"
    else:
        line += "   (PyTorch not installed or no such model there)"
    print(line)


def torch_latency(name: str, args) -> float | None:
    """The same model in PyTorch on the GPU, for the samples it can express simply."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or name != "mlp":
        return None
    tensors = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in args]
    x, weights = tensors[0], tensors[1:]

    def forward():
        h = x
        for index in range(0, len(weights), 2):
            h = torch.nn.functional.linear(h, weights[index], weights[index + 1])
            if index + 2 < len(weights):
                h = torch.relu(h)
        return h

    for _ in range(5):
        forward()
    times = []
    for _ in range(50):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        forward()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", help=f"some of {', '.join(WORKLOADS)} (default: all)")
    parser.add_argument("--arch", help="sm_XY to build for (default: the GPU's own)")
    parser.add_argument("--matmul-tiles", default="", metavar="SxRxK,...",
                        help="matmul block shapes to time side by side (default: the rule's own)")
    parser.add_argument("--tensor-cores", action="store_true",
                        help="also the float16 matmul on mma.sync (pass config tir.gpu_tensor_cores, sm_80+)")
    options = parser.parse_args(argv)
    unknown = [w for w in options.workloads if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload '{unknown[0]}' (expected some of: {', '.join(WORKLOADS)})")
    options.workloads = options.workloads or list(WORKLOADS)
    problem = cuda_problem()
    if problem is not None:
        sys.stderr.write(f"gpu.py: cannot benchmark the GPU: {problem}\n")
        return 1
    import cupy

    target = f"cuda -arch={options.arch}" if options.arch else "cuda"
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"GPU: {device}, target {target}")
    for workload in options.workloads:
        if workload == "add":
            bench_add(cupy, target)
        elif workload == "matmul":
            for dtype in ("float16", "float32"):
                bench_matmul(cupy, target, dtype, matmul_variants(options.matmul_tiles, options.tensor_cores, dtype))
        else:
            bench_model(cupy, target, workload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
