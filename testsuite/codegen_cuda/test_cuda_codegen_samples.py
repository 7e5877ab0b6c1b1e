"""Every sample's GPU kernels build into one cuda .ko for sm_80 and sm_90."""

import pathlib

import pytest

from cuda_codegen_checks import check_cuda_object
from relax.build import lower
from relax.codegen.cuda.host_kernels import is_host_kernel
from relax.codegen.cuda import build_cuda_kernel_object
from relax.driver.compile import parse_source

SAMPLES = sorted((pathlib.Path(__file__).resolve().parents[2] / "samples").glob("*.relax"))

pytestmark = pytest.mark.nvrtc


@pytest.mark.parametrize("sample", SAMPLES, ids=[path.stem for path in SAMPLES])
def test_sample_kernels_build(sample, tmp_path):
    mod = lower(parse_source(str(sample)), 2)
    device = {name for name, func in mod.prim_funcs().items() if not is_host_kernel(name, func)}
    data = build_cuda_kernel_object(mod, ["cuda -arch=sm_80", "cuda -arch=sm_90"])
    kernel_object = check_cuda_object(data, ["sm_80", "sm_90"], tmp_path)
    assert {info.name for info in kernel_object.kernels} == device
