"""The cuda .ko: round trip, format versions, and refusal of corrupt or inconsistent files."""

import dataclasses
import hashlib
import json
import struct

import pytest

from relax.codegen.cuda import build_cuda_kernel_object
from relax.diagnostics import UserError
from relax.runtime.kernels import container
from relax.runtime.kernels.metadata import KernelInfo, LaunchInfo, ParamInfo
from relax.script import parse

pytestmark = pytest.mark.nvrtc

TEXT = '''from tvm.script import tirx as T

n = T.int64()

@T.prim_func
def add(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((n,), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(n):
        with T.block("add"):
            vi = T.axis.spatial(n, i)
            C[vi] = A[vi] + B[vi]
'''


@pytest.fixture(scope="module")
def data():
    return build_cuda_kernel_object(parse(TEXT), ["cuda -arch=sm_80", "cuda -arch=sm_90"])


def _rewrite(data: bytes, change) -> bytes:
    """The .ko with its decoded contents changed by `change` and written again."""
    return container.write(change(container.read(data)))


def test_round_trip(data):
    kernel_object = container.read(data)
    assert kernel_object.is_cuda
    assert [(t.triple, t.cpu, t.object_format) for t in kernel_object.targets] == [
        ("nvptx64-nvidia-cuda", "sm_80", "cubin"), ("nvptx64-nvidia-cuda", "sm_90", "cubin")]
    info = kernel_object.kernel("add")
    assert info.launches[0].symbol == "relaxk_add"
    assert container.write(kernel_object) == data
    assert struct.unpack_from("<HH", data, 8) == (0, 5)  # 0.2's cuda targets, with code hashes (0.4)


def test_cpu_objects_have_no_launches():
    from relax.codegen.build_kernels import build_kernel_object

    cpu = build_kernel_object(parse(TEXT), ["llvm"])
    assert struct.unpack_from("<HH", cpu, 8) == (0, 5)
    assert container.read(cpu).kernel("add").launches == ()
    assert "launches" not in json.dumps(container.read(cpu).kernel("add").to_json())


def test_a_flipped_byte_is_refused(data):
    broken = bytearray(data)
    broken[-100] ^= 0xFF
    with pytest.raises(UserError, match="checksum mismatch"):
        container.read(bytes(broken), "m.ko")


def test_truncation_is_refused(data):
    with pytest.raises(UserError, match="truncated"):
        container.read(data[:-16], "m.ko")


def test_missing_ptx_is_refused(data):
    bad = _rewrite(data, lambda k: dataclasses.replace(k, ptx={0: k.ptx[0]}))
    with pytest.raises(UserError, match="no PTX"):
        container.read(bad, "m.ko")


def test_a_cubin_that_is_not_elf_is_refused(data):
    bad = _rewrite(data, lambda k: dataclasses.replace(k, objects={0: b"nonsense", 1: k.objects[1]}))
    with pytest.raises(UserError, match="no cubin"):
        container.read(bad, "m.ko")


def test_a_cuda_kernel_without_launches_is_refused(data):
    bad = _rewrite(data, lambda k: dataclasses.replace(
        k, kernels=tuple(dataclasses.replace(info, launches=()) for info in k.kernels)))
    with pytest.raises(UserError, match="has no launches"):
        container.read(bad, "m.ko")


def test_mixed_targets_are_refused(data):
    cpu = container.TargetEntry("x86_64-unknown-linux-gnu", "generic", "")
    bad = _rewrite(data, lambda k: dataclasses.replace(k, targets=(k.targets[0], cpu)))
    with pytest.raises(UserError, match="mixes cuda and CPU targets"):
        container.read(bad, "m.ko")


def test_cuda_in_a_0_1_file_is_refused(data):
    body = bytearray(data)
    struct.pack_into("<HH", body, 8, 0, 1)
    # a consistent file otherwise: recompute the checksum
    body[24:56] = hashlib.sha256(bytes(body[56:])).digest()
    with pytest.raises(UserError, match="cuda targets in a format 0.1 file"):
        container.read(bytes(body), "m.ko")


def test_launch_metadata_is_checked():
    base = KernelInfo("k", "relaxk_k", 1, (ParamInfo("A", "buffer", "float32", ("n",)),), ("n",))
    good = {**base.to_json(), "launches": [LaunchInfo("relaxk_k", (["floordiv", "n", 2], 1, 1), (256, 1, 1)).to_json()]}
    assert KernelInfo.from_json(good).launches[0].grid == (["floordiv", "n", 2], 1, 1)
    unknown = {**good, "launches": [{**good["launches"][0], "grid": ["m", 1, 1]}]}
    with pytest.raises(UserError, match="unknown size 'm'"):
        KernelInfo.from_json(unknown)
    short = {**good, "launches": [{**good["launches"][0], "block": [256, 1]}]}
    with pytest.raises(UserError, match="3 grid and 3 block"):
        KernelInfo.from_json(short)
    bad_op = {**good, "launches": [{**good["launches"][0], "grid": [["pow", "n", 2], 1, 1]}]}
    with pytest.raises(UserError, match="bad shape expression"):
        KernelInfo.from_json(bad_op)
