"""The float16 matmul on the tensor cores (gpu_schedule/matmul_mma.py, `tir.ptx_mma`): chosen only
when asked and the arch has mma.sync m16n8k16; run on the GPU simulator against numpy; its CUDA C
compiled by NVRTC. The fragment layout itself is PTX's: a GPU test (testsuite/runtime_cuda)
checks it on hardware."""

import itertools

import numpy as np
import pytest

from relax.ir import tir
from relax.ir.pass_infra import PassContext
from relax.target import Target
from relax.tir import lower_for_codegen, run
from relax.tir.gpu_schedule import GpuOptions, choose_rule
from relax.tir.gpu_schedule.matmul_mma import TENSOR_CORES_KEY, a_fragment_at, b_fragment_at, c_fragment_at
from relax.tir.gpu_simulator import simulate
from relax.tir.loop_nests import top_level
from relax.tir.rewrite import collect

from dataflow_kernels import lowered_kernels

SM80 = Target.parse("cuda -arch=sm_80")
ON = {TENSOR_CORES_KEY: 1}


def _matmul(m, k, n, dtype="float16", batch=()):
    dims = lambda *d: ", ".join(f'"{x}"' if isinstance(x, str) else str(x) for x in (*batch, *d))  # noqa: E731
    (func,) = lowered_kernels(f'a: R.Tensor(({dims(m, k)}), "{dtype}"), b: R.Tensor(({dims(k, n)}), "{dtype}")',
                              "out = R.matmul(a, b)", 0).values()
    return func


def _lowered(func, target=SM80, config=ON):
    with PassContext(config=config):
        return lower_for_codegen(func, target)


def _mma_calls(lowered) -> int:
    return sum(call.op == "tir.ptx_mma" for call in collect(lowered.body, tir.Call))


def test_fragment_layouts_cover_each_matrix_once():
    """Over a warp's 32 lanes the three layouts place every element of A (16 x 16), B (16 x 8)
    and C (16 x 8) exactly once: a wrong offset would leave a hole and a double."""
    lanes = [(lane // 4, lane % 4 * 2) for lane in range(32)]
    a = sorted((g + r, t2 + c) for (g, t2), e in itertools.product(lanes, range(8)) for r, c in [a_fragment_at(e)])
    b = sorted((t2 + b_fragment_at(e), g) for (g, t2), e in itertools.product(lanes, range(4)))
    c = sorted((g + r, t2 + col) for (g, t2), e in itertools.product(lanes, range(4)) for r, col in [c_fragment_at(e)])
    assert a == sorted(itertools.product(range(16), range(16)))
    assert b == sorted(itertools.product(range(16), range(8)))
    assert c == sorted(itertools.product(range(16), range(8)))


def test_chosen_only_when_asked_for_float16_on_sm80_and_newer():
    statements, _ = top_level(_matmul(7, 40, 13).body)
    assert choose_rule(statements[0], GpuOptions(256)) == "matmul"
    assert choose_rule(statements[0], GpuOptions(256, tensor_cores=True)) == "matmul-mma"
    assert _mma_calls(_lowered(_matmul(7, 40, 13))) == 16  # 2 x 4 tiles, two 16-wide steps of a 32-wide slice
    assert _mma_calls(_lowered(_matmul(7, 40, 13), Target.parse("cuda -arch=sm_75"))) == 0
    assert _mma_calls(_lowered(_matmul(7, 40, 13), Target.parse("cuda -arch=sm_100"))) == 16
    assert _mma_calls(_lowered(_matmul(7, 40, 13), config={})) == 0
    assert _mma_calls(_lowered(_matmul(7, 40, 13, "float32"))) == 0


def _float16_sum_at_every_k(a, b):
    """The unscheduled kernel's result (its product and its sum rounded to float16 at every k),
    computed by numpy, whose float16 arithmetic rounds each operation as the TIR interpreter
    does: the interpreter itself takes seconds per thousand outputs."""
    total = np.zeros((*a.shape[:-1], b.shape[-1]), np.float16)
    for kk in range(a.shape[-1]):
        total = total + a[..., :, kk:kk + 1] * b[..., kk:kk + 1, :]
    return total


def test_the_numpy_float16_sum_is_the_unscheduled_kernels():
    func = _matmul(7, 40, 13, batch=(2,))
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 7, 40)).astype(np.float16), rng.standard_normal((2, 40, 13)).astype(np.float16)
    interpreted = np.zeros((2, 7, 13), np.float16)
    run(func, a, b, interpreted)
    np.testing.assert_array_equal(_float16_sum_at_every_k(a, b), interpreted)


@pytest.mark.parametrize("m,k,n,batch", [(7, 40, 13, ()), (64, 32, 64, ()), (70, 50, 130, ()), (33, 20, 17, (2,)),
                                         ("m", 24, 9, ())])
def test_simulated_mma_matmul_matches_numpy(m, k, n, batch):
    func = _matmul(m, k, n, batch=batch)
    lowered = _lowered(func)
    assert _mma_calls(lowered) == 16
    rows = 21 if m == "m" else m
    rng = np.random.default_rng(1)
    a = rng.standard_normal((*batch, rows, k)).astype(np.float16)
    b = rng.standard_normal((*batch, k, n)).astype(np.float16)
    out = np.zeros((*batch, rows, n), np.float16)
    simulate(lowered, a, b, out)
    reference = _float16_sum_at_every_k(a, b)
    exact = a.astype(np.float32) @ b.astype(np.float32)
    # float16 sums: the mma rounds once per 16 values of k, the scalar reference at every k
    np.testing.assert_allclose(out.astype(np.float32), exact, rtol=2e-2, atol=2e-2 * np.sqrt(k))
    np.testing.assert_allclose(out.astype(np.float32), reference.astype(np.float32), rtol=3e-2, atol=3e-2 * np.sqrt(k))


@pytest.mark.nvrtc
def test_mma_kernel_compiles_for_sm80_and_sm90():
    from relax.codegen.cuda import build_cuda_kernel_object, emit_cuda_source

    funcs = {"matmul": _matmul("m", 64, "n")}
    with PassContext(config=ON):
        source = emit_cuda_source(funcs, "cuda -arch=sm_90")
        assert build_cuda_kernel_object(funcs, ["cuda -arch=sm_80", "cuda -arch=sm_90"])[:4]
    assert "relax_mma_m16n8k16_f16(" in source and "__align__(16) relax_half" in source
