"""Vector register width per target, as the CPU schedules read it (never the host's, unless asked)."""

import pytest

from relax.target.llvm_target import target_spec
from relax.target.vector_width import vector_bits
from relax.tir.schedule.cpu import cpu_info


@pytest.mark.parametrize("target, bits", [
    ("llvm", 128),
    ("llvm -mcpu=x86-64", 128),
    ("llvm -mcpu=x86-64-v2", 128),
    ("llvm -mcpu=x86-64-v3", 256),
    ("llvm -mcpu=x86-64-v4", 512),
    ("llvm -mcpu=x86-64-v4 -mattr=-avx512f", 256),
    ("llvm -mattr=+avx2", 256),
    ("llvm -mattr=+avx512f", 512),
    ("llvm -mcpu=haswell", 256),          # named CPUs: LLVM itself is asked
    ("llvm -mcpu=znver3", 256),
    ("llvm -mcpu=skylake-avx512", 512),
    ("llvm -mcpu=znver4", 512),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3", 256),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1", 128),
    ("llvm -mtriple=riscv64-linux-gnu", 32),  # rv64gc: no vector registers, float32 in float registers
    ("llvm -mtriple=riscv64-linux-gnu -mattr=+v", 128),
    ("llvm -mtriple=armv7-linux-gnueabihf -mattr=+neon", 128),
    ("llvm -mtriple=i686-linux-gnu", 32),  # no SSE: x87
])
def test_vector_bits(target, bits):
    assert vector_bits(target_spec(target)) == bits
    assert cpu_info(target).vector_bits == bits and cpu_info(target).lanes == bits // 32
