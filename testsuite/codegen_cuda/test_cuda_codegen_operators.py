"""Every operator kernel of the operator tests builds for sm_80 and sm_90 (NVRTC, no GPU)."""

import pytest

from cuda_codegen_checks import check_cuda_object
from cuda_codegen_op_kernels import operator_kernels
from relax.codegen.cuda import build_cuda_kernel_object
from relax.codegen.cuda.source import lowered_device_kernels

pytestmark = pytest.mark.nvrtc


@pytest.fixture(scope="module")
def kernels():
    return {f"op{index}": func for index, (_, func) in enumerate(operator_kernels())}


@pytest.fixture(scope="module")
def lowered(kernels):
    """The kernels lowered once for both archs: the GPU schedules read a target's block size,
    not its arch (as build_cuda_kernel_object itself does for several archs)."""
    return lowered_device_kernels(kernels, "cuda -arch=sm_80")


def test_the_operator_tests_give_many_kernels(kernels):
    assert len(kernels) > 200


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_operator_kernel_builds(kernels, lowered, arch, tmp_path):
    data = build_cuda_kernel_object(lowered, [f"cuda -arch={arch}"])
    kernel_object = check_cuda_object(data, [arch], tmp_path)
    assert sorted(info.name for info in kernel_object.kernels) == sorted(kernels)
