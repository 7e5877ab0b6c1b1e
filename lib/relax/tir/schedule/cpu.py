"""What the schedules need to know about a CPU target: how many vector registers it has.

    cpu_info(Target("llvm"))  ->  CpuInfo(wide_registers=True)    on an AVX-512 host

Read from the features codegen would compile for (relax.codegen.llvm_target), so
a cross target gets the schedule of its own CPU.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CpuInfo:
    wide_registers: bool = False  # 32 vector registers of 512 bits (AVX-512): bigger register tiles fit


def cpu_info(target=None) -> CpuInfo:
    try:
        from ...codegen.llvm_target import target_spec

        features = target_spec(target).features
    except Exception:  # a target codegen cannot describe gets the conservative schedule
        return CpuInfo()
    return CpuInfo(wide_registers="+avx512f" in features.split(","))
