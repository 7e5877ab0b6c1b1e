"""Every operator kernel of the operator tests builds for sm_90 (NVRTC, no GPU).

One arch is enough for them: the CUDA C a kernel gets does not depend on the arch, and the
prelude's `__CUDA_ARCH__` guards take the same branch on sm_80 as on sm_90 (checked below), so
a build for sm_80 compiles the same program again. The samples build for both archs
(test_cuda_codegen_samples.py), and so does the tensor-core matmul."""

import re

import pytest

from cuda_codegen_checks import check_cuda_object
from cuda_codegen_op_kernels import operator_kernels
from relax.codegen.cuda import build_cuda_kernel_object
from relax.codegen.cuda.c_types import PRELUDE
from relax.codegen.cuda.source import lowered_device_kernels


@pytest.fixture(scope="module")
def kernels():
    return {f"op{index}": func for index, (_, func) in enumerate(operator_kernels())}


def test_the_operator_tests_give_many_kernels(kernels):
    assert len(kernels) > 200


def test_the_prelude_compiles_alike_for_sm80_and_sm90():
    guards = [int(level) for level in re.findall(r"__CUDA_ARCH__\s*>=\s*(\d+)", PRELUDE)]
    assert guards and "__CUDA_ARCH__" not in re.sub(r"#if __CUDA_ARCH__\s*>=\s*\d+", "", PRELUDE)
    assert all(level <= 800 for level in guards)


@pytest.mark.nvrtc
def test_every_operator_kernel_builds(kernels, tmp_path):
    data = build_cuda_kernel_object(lowered_device_kernels(kernels, "cuda -arch=sm_90"), ["cuda -arch=sm_90"])
    kernel_object = check_cuda_object(data, ["sm_90"], tmp_path)
    assert sorted(info.name for info in kernel_object.kernels) == sorted(kernels)
