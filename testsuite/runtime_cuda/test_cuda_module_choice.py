"""Choosing the cubin or PTX of a cuda .ko for a GPU's compute capability (no GPU needed)."""

from types import SimpleNamespace

import pytest

from relax.diagnostics import UserError
from relax.runtime.cuda.module import arch_number, choose_image, is_cuda_object
from relax.runtime.kernels.container import TargetEntry


def entry(arch):
    return TargetEntry("nvptx64-nvidia-cuda", arch, "", 1, "cubin")


def kernel_object(archs, ptx=True):
    return SimpleNamespace(targets=tuple(entry(a) for a in archs), kernels=(),
                           objects={i: f"cubin-{a}".encode() for i, a in enumerate(archs)},
                           ptx={i: f"ptx-{a}" for i, a in enumerate(archs)} if ptx else {})


def test_arch_numbers():
    assert arch_number("sm_90") == 90 and arch_number("compute_80") == 80 and arch_number("sm_90a") == 90
    assert arch_number("x86-64") is None


@pytest.mark.parametrize("capability,expected", [
    (90, ("cubin", 1, b"cubin-sm_90")),   # the same arch: its cubin
    (80, ("cubin", 0, b"cubin-sm_80")),
    (89, ("ptx", 0, b"ptx-sm_80")),       # newer than sm_80, older than sm_90: sm_80's PTX
    (100, ("ptx", 1, b"ptx-sm_90")),      # newer than every entry: the newest PTX
])
def test_cubin_when_equal_else_newest_ptx_not_above(capability, expected):
    assert choose_image(kernel_object(["sm_80", "sm_90"]), capability) == expected


def test_older_gpu_is_refused_with_the_archs():
    with pytest.raises(UserError, match=r"compute capability 7.5, sm_75\); its architectures: sm_80, sm_90"):
        choose_image(kernel_object(["sm_80", "sm_90"]), 75, "m.vmx(m.cuda.ko)")


def test_without_ptx_only_the_exact_cubin_runs():
    with pytest.raises(UserError, match="no GPU code that runs on this GPU"):
        choose_image(kernel_object(["sm_90"], ptx=False), 100)


def test_cuda_objects_are_recognised_by_triple():
    assert is_cuda_object(kernel_object(["sm_90"]))
    host = SimpleNamespace(targets=(TargetEntry("x86_64-unknown-linux-gnu", "znver4", ""),))
    assert not is_cuda_object(host)
