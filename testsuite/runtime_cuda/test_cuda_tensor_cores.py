"""The float16 matmul on the tensor cores (pass config tir.gpu_tensor_cores) on a GPU of sm_80 or newer,
against numpy: the check of PTX's m16n8k16 fragment layout that the GPU simulator cannot make."""

import numpy as np
import pytest

from relax.build import build, lower
from relax.codegen.cuda import emit_cuda_source
from relax.ir.pass_infra import PassContext
from relax.script import parse
from relax.target import parse_target
from relax.tir.gpu_schedule.matmul_mma import TENSOR_CORES_KEY
from relax.vm import VirtualMachine

MODULE = """
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("m", 200), dtype="float16"), b: R.Tensor((200, 136), dtype="float16")):
        with R.dataflow():
            out = R.matmul(a, b)
            R.output(out)
        return out
"""


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 77, 256])
def test_mma_matmul_on_gpu_matches_numpy(rows):
    import cupy

    arch = "sm_" + cupy.cuda.Device(0).compute_capability  # "90" on an H100 or H200
    if int(arch[3:]) < 80:
        pytest.skip(f"mma.sync m16n8k16 needs sm_80 or newer; this GPU is {arch}")
    with PassContext(config={TENSOR_CORES_KEY: 1}):
        assert "relax_mma_m16n8k16_f16(" in emit_cuda_source(lower(parse(MODULE), target=parse_target(f"cuda -arch={arch}")),
                                                              f"cuda -arch={arch}")
        exe = build(parse(MODULE), f"cuda -arch={arch}")
    rng = np.random.default_rng(rows)
    a = rng.standard_normal((rows, 200)).astype(np.float16)
    b = rng.standard_normal((200, 136)).astype(np.float16)
    out = VirtualMachine(exe, "cuda")["main"](a, b)
    exact = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(np.asarray(out).astype(np.float32), exact, rtol=2e-2, atol=2e-2 * np.sqrt(200))
