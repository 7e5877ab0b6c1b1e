"""What the schedules need to know about a CPU target: how wide and how many its vector registers are.

    cpu_info(Target("llvm -mcpu=x86-64-v4"))  ->  CpuInfo(wide_registers=True)
    cpu_info(Target("llvm -mcpu=x86-64-v3"))  ->  CpuInfo(wide_registers=False)
    cpu_info(None)                            ->  this host's

Read from the CPU and features codegen compiles for (relax.target.llvm_target and
vector_width), never from the host unless the target is the host: a cross target,
or a lower x86-64 level built on an AVX-512 machine, gets the schedule of its own CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...target.llvm_target import target_spec
from ...target.vector_width import vector_bits


@dataclass(frozen=True)
class CpuInfo:
    wide_registers: bool = False  # 32 vector registers of 512 bits (AVX-512): bigger register tiles fit


def cpu_info(target=None) -> CpuInfo:
    try:
        spec = target_spec(target)
    except Exception:  # a target codegen cannot describe gets the conservative schedule
        return CpuInfo()
    return CpuInfo(wide_registers=vector_bits(spec) >= 512)
