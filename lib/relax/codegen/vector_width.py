"""The widest vector registers a CPU target has, in bits: what the CPU schedules size their tiles by.

    vector_bits(target_spec("llvm -mcpu=x86-64-v3"))          ->  256
    vector_bits(target_spec("llvm -mcpu=skylake-avx512"))     ->  512
    vector_bits(target_spec("llvm -mtriple=aarch64-linux-gnu"))  ->  128

An explicit feature list (the host's, or -mattr) or an x86-64 level decides at
once. Any other named CPU is asked of LLVM itself: a 16-lane float add is
compiled for the target, and the widest register class in its assembly (zmm,
ymm or xmm) is the answer, so a schedule follows every CPU LLVM knows, not a
table of the ones we thought of.
"""

from __future__ import annotations

import functools
import re

import llvmlite.binding as llvm

from ..runtime.kernels.cpu_levels import level_features
from ..runtime.kernels.host import triple_arch
from .llvm_target import TargetSpec, target_machine

_PROBE = """
define void @probe(ptr %a, ptr %b) {
  %x = load <16 x float>, ptr %a
  %y = load <16 x float>, ptr %b
  %z = fadd <16 x float> %x, %y
  store <16 x float> %z, ptr %a
  ret void
}
"""

_X86_REGISTER_BITS = {"zmm": 512, "ymm": 256, "xmm": 128}


@functools.lru_cache(maxsize=None)
def vector_bits(spec: TargetSpec) -> int:
    """Bits of the widest vector register of `spec` (128 on every non-x86 target: NEON, and
    the fixed-width view of SVE and RVV that the schedules use)."""
    if triple_arch(spec.triple) != "x86_64":
        return 128
    features = {f.strip() for f in spec.features.split(",") if f.strip()}
    level = level_features(spec.cpu)
    # A generic CPU or a level is what its features say; so is a CPU whose list names
    # avx512f either way (the host's full list does).
    if level is not None or spec.cpu in ("", "generic") or {"+avx512f", "-avx512f"} & features:
        enabled = ({f[1:] for f in features if f.startswith("+")} | (level or frozenset())) \
            - {f[1:] for f in features if f.startswith("-")}
        return 512 if "avx512f" in enabled else 256 if enabled & {"avx", "avx2", "fma"} else 128
    return _probe(spec)


def _probe(spec: TargetSpec) -> int:
    machine = target_machine(spec)
    module = llvm.parse_assembly(_PROBE)
    module.triple = spec.triple
    module.data_layout = str(machine.target_data)
    found = set(re.findall(r"%(zmm|ymm|xmm)\d+", machine.emit_assembly(module)))
    return max((_X86_REGISTER_BITS[name] for name in found), default=128)


__all__ = ["vector_bits"]
