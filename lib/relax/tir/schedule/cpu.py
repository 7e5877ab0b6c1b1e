"""The CPU model the schedules size their tiles by: vector registers, FMA, caches.

    cpu_info(Target("llvm -mcpu=x86-64-v4"))  ->  CpuInfo(vector_bits=512, vector_registers=32, fma=True, ...)
    cpu_info(Target("llvm -mcpu=x86-64-v3"))  ->  CpuInfo(vector_bits=256, vector_registers=16, fma=True, ...)
    cpu_info("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1")  ->  128 bits, 32 registers, 64 KiB L1
    cpu_info(None)                            ->  this host's

Read from the CPU and features codegen compiles for (relax.target.llvm_target and
vector_width), never from the host unless the target is the host: a cross target,
or a lower x86-64 level built on an AVX-512 machine, gets the schedule of its own CPU.
Cache sizes come from /sys for the host's own CPU, from CACHES for a named CPU, and
are the small DEFAULT_CACHES otherwise (an x86-64 level is many CPUs: the smallest
caches among them). The register tile (tile_shape.py), gemv strips, conv2d tiles,
pooling and vector rows read their sizes from the model, never a fixed lane count.
"""

from __future__ import annotations

import functools
import pathlib

from ...records import record
from ...runtime.kernels.host import host, same_platform
from ...target.llvm_target import TargetSpec, target_spec
from ...target.vector_width import arch_family, has_fma, vector_bits

KIB, MIB = 1024, 1024 * 1024


@record
class CpuInfo:
    vector_bits: int = 128  # of the widest vector register the target has (vector_width.py)
    # architectural vector registers: 16 SSE/AVX2 x86-64, 32 AVX-512, NEON, RVV; riscv64 without V: its
    # 32 float registers (vector_bits 32: one lane, tiles of scalars)
    vector_registers: int = 16
    fma: bool = False  # fused multiply-add instructions (without them a product needs a temporary register)
    fma_latency: int = 4  # cycles from an FMA to its result being usable
    fma_units: int = 2  # FMAs issued per cycle
    l1d_bytes: int = 32 * KIB  # per core
    l2_bytes: int = 256 * KIB  # per core
    l3_bytes: int = 0  # shared; 0 when unknown

    @property
    def lanes(self) -> int:
        """float32 lanes of one vector register."""
        return self.vector_bits // 32

    @property
    def chains(self) -> int:
        """Independent accumulators that keep every FMA unit busy: one result per unit per cycle of latency."""
        return self.fma_latency * self.fma_units

    @classmethod
    def for_level(cls, level: str) -> "CpuInfo":
        """The model of an x86-64 level (x86-64, -v2, -v3, -v4), as a build for it gets: tests name models this way."""
        return cpu_info(f"llvm -mtriple=x86_64-linux-gnu -mcpu={level}")


# (L1d, L2, L3) per named CPU, for targets that are not this host (L2 per core, L3 shared).
CACHES = {
    "haswell": (32 * KIB, 256 * KIB, 8 * MIB), "broadwell": (32 * KIB, 256 * KIB, 8 * MIB),
    "skylake": (32 * KIB, 256 * KIB, 8 * MIB), "skylake-avx512": (32 * KIB, 1 * MIB, 16 * MIB),
    "cascadelake": (32 * KIB, 1 * MIB, 16 * MIB), "icelake-server": (48 * KIB, 1280 * KIB, 32 * MIB),
    "sapphirerapids": (48 * KIB, 2 * MIB, 64 * MIB), "x86-64-v4": (32 * KIB, 1 * MIB, 0),
    "znver2": (32 * KIB, 512 * KIB, 16 * MIB), "znver3": (32 * KIB, 512 * KIB, 32 * MIB),
    "znver4": (32 * KIB, 1 * MIB, 32 * MIB), "znver5": (48 * KIB, 1 * MIB, 32 * MIB),
    "neoverse-n1": (64 * KIB, 1 * MIB, 32 * MIB), "neoverse-v1": (64 * KIB, 1 * MIB, 32 * MIB),
    "neoverse-n2": (64 * KIB, 1 * MIB, 32 * MIB), "neoverse-v2": (64 * KIB, 2 * MIB, 64 * MIB),
    "cortex-a72": (32 * KIB, 512 * KIB, 0), "cortex-a76": (64 * KIB, 512 * KIB, 0),
}
DEFAULT_CACHES = (32 * KIB, 256 * KIB, 0)
SYS_CACHE = pathlib.Path("/sys/devices/system/cpu/cpu0/cache")


# (vector registers, float registers when there are no float vectors) of the 32-bit families
# (vector_width.arch_family): x86's 8 xmm (or x87) registers; ARM's 16 NEON q registers, or
# 32 single-precision VFP registers.
_REGISTERS_32_BIT = {"x86-32": (8, 8), "arm32": (16, 32)}


def _registers(spec: TargetSpec, bits: int) -> int:
    """x86-64 has 16 vector registers, 32 with AVX-512; aarch64 (NEON, SVE) and riscv64 (V, or
    its float registers) have 32; 32-bit x86 and ARM as _REGISTERS_32_BIT says."""
    family = arch_family(spec.triple)
    if family == "x86_64":
        return 32 if bits >= 512 else 16
    if family in _REGISTERS_32_BIT:
        vectors, scalars = _REGISTERS_32_BIT[family]
        return vectors if bits > 32 else scalars
    return 32


def _is_host(spec: TargetSpec) -> bool:
    info = host()
    return spec.cpu == info.cpu and same_platform(spec.triple, info.triple)


@functools.cache
def host_caches(root: pathlib.Path = SYS_CACHE) -> tuple[int, int, int] | None:
    """(L1d, L2, L3) of this host's first CPU from /sys, or None where /sys does not say."""
    sizes = {}
    for index in sorted(root.glob("index*")):
        try:
            level, kind, size = ((index / name).read_text().strip() for name in ("level", "type", "size"))
        except OSError:
            continue
        if kind in ("Data", "Unified") and size[:-1].isdigit():
            scale = {"K": KIB, "M": MIB}.get(size[-1], 1)
            sizes.setdefault(int(level), int(size[:-1]) * scale if size[-1] in "KM" else int(size))
    if 1 not in sizes or 2 not in sizes:
        return None
    return sizes[1], sizes[2], sizes.get(3, 0)


def _caches(spec: TargetSpec) -> tuple[int, int, int]:
    found = host_caches() if _is_host(spec) else None
    return found or CACHES.get(spec.cpu, DEFAULT_CACHES)


def cpu_info(target=None) -> CpuInfo:
    """The model of the CPU `target` compiles for (None: this host)."""
    try:
        spec = target_spec(target)
    except Exception:  # a target codegen cannot describe gets the conservative model
        return CpuInfo()
    return _model(spec)


@functools.lru_cache(maxsize=None)
def _model(spec: TargetSpec) -> CpuInfo:
    bits = vector_bits(spec)
    l1d, l2, l3 = _caches(spec)
    return CpuInfo(vector_bits=bits, vector_registers=_registers(spec, bits), fma=has_fma(spec),
                   l1d_bytes=l1d, l2_bytes=l2, l3_bytes=l3)


__all__ = ["CACHES", "CpuInfo", "cpu_info", "host_caches"]
