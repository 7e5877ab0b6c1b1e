"""Generated kernels run on the GPU against numpy (marked gpu: skipped without one).

Each test builds a cuda .ko for this GPU's architecture, loads its cubin with
cupy and launches every LaunchInfo with the grid and block its shape expressions
give, with the arguments in the order of the CUDA signature (cuda_spec).
"""

import numpy as np
import pytest

from relax.codegen.cuda import build_cuda_kernel_object
from relax.runtime.kernels import container
from relax.runtime.kernels.metadata import evaluate
from relax.script import parse
from test_cuda_codegen_source import ROWSUM

pytestmark = [pytest.mark.gpu, pytest.mark.nvrtc]

HEADER = "from tvm.script import tirx as T\n\n"


def run(text: str, name: str, arrays: list, scalars=(), sizes=None):
    """Runs kernel `name` of `text` on copies of `arrays`; returns them (numpy) afterwards."""
    import cupy

    arch = f"sm_{cupy.cuda.Device(0).compute_capability}"  # "90" on an H100
    kernel_object = container.read(build_cuda_kernel_object(parse(text), f"cuda -arch={arch}"))
    info = kernel_object.kernel(name)
    module = cupy.cuda.function.Module()
    module.load(bytes(kernel_object.objects[0]))
    device = [cupy.asarray(array) for array in arrays]
    values = dict(sizes or {})
    arguments = tuple(device) + tuple(scalars) + tuple(np.int64(values[v]) for v in info.symbolic_vars)
    assert info.workspace_bytes == 0
    for launch in info.launches:
        grid = tuple(int(evaluate(d, values)) for d in launch.grid)
        block = tuple(int(evaluate(d, values)) for d in launch.block)
        module.get_function(launch.symbol)(grid, block, arguments)
    cupy.cuda.Device(0).synchronize()
    return [cupy.asnumpy(array) for array in device]


def test_symbolic_add():
    text = HEADER + '''
n = T.int64()

@T.prim_func
def add(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((n,), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(n):
        with T.block("add"):
            vi = T.axis.spatial(n, i)
            C[vi] = A[vi] + B[vi]
'''
    rng = np.random.default_rng(0)
    for n in (1, 1000, 100_003):
        a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        _, _, c = run(text, "add", [a, b, np.zeros(n, np.float32)], sizes={"n": n})
        np.testing.assert_array_equal(c, a + b)


def test_integer_division_semantics():
    text = HEADER + '''
@T.prim_func
def division(A: T.Buffer((T.int64(8),), "int32"), B: T.Buffer((T.int64(8),), "int32"), C: T.Buffer((T.int64(4), T.int64(8)), "int32")):
    for i in range(T.int64(8)):
        with T.block("d"):
            vi = T.axis.spatial(T.int64(8), i)
            C[0, vi] = T.floordiv(A[vi], B[vi])
            C[1, vi] = T.floormod(A[vi], B[vi])
            C[2, vi] = T.truncdiv(A[vi], B[vi])
            C[3, vi] = T.truncmod(A[vi], B[vi])
'''
    a = np.array([7, -7, 7, -7, 0, 5, -9, 9], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5, 4, -4], np.int32)
    _, _, c = run(text, "division", [a, b, np.zeros((4, 8), np.int32)])
    np.testing.assert_array_equal(c[0], np.floor_divide(a, b))
    np.testing.assert_array_equal(c[1], np.mod(a, b))
    np.testing.assert_array_equal(c[2], np.trunc(a / b).astype(np.int32))
    np.testing.assert_array_equal(c[3], np.fmod(a, b))


def test_float16_exp_and_scalar():
    text = HEADER + '''
@T.prim_func
def half(A: T.Buffer((T.int64(64),), "float16"), B: T.Buffer((T.int64(64),), "float16"), s: T.float16):
    for i in range(T.int64(64)):
        with T.block("h"):
            vi = T.axis.spatial(T.int64(64), i)
            B[vi] = T.exp(A[vi]) * s
'''
    a = np.linspace(-3, 3, 64).astype(np.float16)
    _, b = run(text, "half", [a, np.zeros(64, np.float16)], scalars=(np.float16(0.5),))
    expected = (np.exp(a.astype(np.float32)).astype(np.float16).astype(np.float32) * np.float32(0.5)).astype(np.float16)
    np.testing.assert_allclose(b.astype(np.float32), expected.astype(np.float32), rtol=1e-3)


def test_float16_arithmetic_gives_numpys_bits():
    """+, - and * of float16 (PTX f16 instructions) round as numpy's float-and-round-back does,
    subnormals, overflow to inf and a multiply feeding an add (never fused) included."""
    text = HEADER + '''
@T.prim_func
def arith(A: T.Buffer((T.int64(4096),), "float16"), B: T.Buffer((T.int64(4096),), "float16"), C: T.Buffer((T.int64(4096),), "float16"), D: T.Buffer((T.int64(4), T.int64(4096)), "float16")):
    for i in range(T.int64(4096)):
        with T.block("h"):
            vi = T.axis.spatial(T.int64(4096), i)
            D[0, vi] = A[vi] + B[vi]
            D[1, vi] = A[vi] - B[vi]
            D[2, vi] = A[vi] * B[vi]
            D[3, vi] = C[vi] + A[vi] * B[vi]
'''
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 1 << 16, size=(3, 4096), dtype=np.uint16)
    values = bits.view(np.float16)
    values[~np.isfinite(values)] = np.float16(1.5)  # NaN payloads are not compared
    a, b, c = values
    *_, d = run(text, "arith", [a, b, c, np.zeros((4, 4096), np.float16)])
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.stack([a + b, a - b, a * b, c + a * b])
    same = (d.view(np.uint16) == expected.view(np.uint16)) | (np.isnan(d) & np.isnan(expected))
    assert same.all(), f"{(~same).sum()} of {same.size} differ, first at {np.argwhere(~same)[:4].tolist()}"


def test_shared_memory_row_sum():
    a = np.random.default_rng(1).standard_normal((8, 64), dtype=np.float32)
    _, b = run(ROWSUM, "rowsum", [a, np.zeros(8, np.float32)])
    # rowsum folds 64 -> 32 through shared memory, then adds lane 0 of the warp to each lane
    partial = a[:, :32] + a[:, 32:]
    np.testing.assert_allclose(b, partial[:, 0] + partial[:, 0], rtol=1e-6)
