"""Every operator kernel of the operator tests builds for sm_80 and sm_90 (NVRTC, no GPU)."""

import pytest

from cuda_codegen_checks import check_cuda_object
from cuda_codegen_op_kernels import operator_kernels
from relax.codegen.cuda import build_cuda_kernel_object

pytestmark = pytest.mark.nvrtc


@pytest.fixture(scope="module")
def kernels():
    return {f"op{index}": func for index, (_, func) in enumerate(operator_kernels())}


def test_the_operator_tests_give_many_kernels(kernels):
    assert len(kernels) > 200


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_operator_kernel_builds(kernels, arch, tmp_path):
    data = build_cuda_kernel_object(kernels, [f"cuda -arch={arch}"])
    kernel_object = check_cuda_object(data, [arch], tmp_path)
    assert sorted(info.name for info in kernel_object.kernels) == sorted(kernels)
