"""Kernel manifests and allocations that the robustness fuzzer forged (make fuzz, seed 20261128):
each is refused as a user error, never an internal one."""

import pytest

from relax.diagnostics import UserError
from relax.runtime.allocator import aligned_buffer
from relax.runtime.kernels.metadata import MAX_WORKSPACE_BYTES, KernelInfo

KERNEL = {"name": "add", "symbol": "add", "abi_version": 1, "params": []}


def test_a_kernel_entry_that_is_not_an_object_is_malformed_metadata():
    # case 1816: a list where a kernel's object stood ('list' object has no attribute 'get')
    with pytest.raises(UserError, match="a kernel entry is list, not an object"):
        KernelInfo.from_json([KERNEL])


@pytest.mark.parametrize("workspace", [MAX_WORKSPACE_BYTES + 1, -1, 1 << 62])
def test_a_workspace_beyond_the_limit_is_refused_when_the_manifest_is_read(workspace):
    # case 2815: a workspace of 2^62 bytes was allocated at load (numpy: "Maximum allowed dimension exceeded")
    with pytest.raises(UserError, match=f"asks for a workspace of {workspace} bytes"):
        KernelInfo.from_json({**KERNEL, "workspace_bytes": workspace})
    assert KernelInfo.from_json({**KERNEL, "workspace_bytes": 64}).workspace_bytes == 64


def test_an_allocation_beyond_memory_is_a_user_error():
    with pytest.raises(UserError, match="cannot allocate .* bytes: out of memory"):
        aligned_buffer(1 << 62)
