"""Which kernel objects run natively here: x86-64 levels by the features they imply, on any host."""

import pytest

from relax.runtime.kernels.cpu_levels import X86_64_LEVELS, level_features
from relax.runtime.kernels.host import HostInfo, runs_natively

LINUX = "x86_64-unknown-linux-gnu"
AVX2_FEATURES = sorted(X86_64_LEVELS["x86-64-v3"] | {"aes", "pclmul"})
AVX2_HOST = HostInfo(LINUX, "znver3", ",".join(["+" + f for f in AVX2_FEATURES] + ["-avx512f", "-avx512bw"]))
AVX512_HOST = HostInfo(LINUX, "sapphirerapids", ",".join("+" + f for f in sorted(X86_64_LEVELS["x86-64-v4"])))
ARM_HOST = HostInfo("aarch64-unknown-linux-gnu", "neoverse-n1", "+neon,+fp-armv8")


def test_levels_nest():
    names = ["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"]
    for lower, higher in zip(names, names[1:]):
        assert level_features(lower) < level_features(higher)
    assert level_features("znver3") is None


@pytest.mark.parametrize("cpu, avx2_host, avx512_host", [
    ("generic", True, True),
    ("x86-64", True, True),
    ("x86-64-v2", True, True),
    ("x86-64-v3", True, True),
    ("x86-64-v4", False, True),       # AVX-512 code on an AVX2 host: bitcode is compiled instead
    ("znver3", True, False),          # the host's own CPU name, and only that one
    ("skylake-avx512", False, False),
])
def test_runs_natively_by_level(cpu, avx2_host, avx512_host):
    assert runs_natively(LINUX, cpu, "", AVX2_HOST) is avx2_host
    assert runs_natively(LINUX, cpu, "", AVX512_HOST) is avx512_host


def test_explicit_features_still_count():
    assert not runs_natively(LINUX, "x86-64-v3", "+avx512f", AVX2_HOST)
    assert runs_natively(LINUX, "x86-64-v2", "+avx2", AVX2_HOST)


def test_levels_are_x86_only():
    assert not runs_natively("aarch64-unknown-linux-gnu", "x86-64-v2", "", ARM_HOST)
    assert runs_natively("aarch64-unknown-linux-gnu", "generic", "+neon", ARM_HOST)
