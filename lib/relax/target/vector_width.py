"""The vector extensions a CPU target has: what the schedules size their tiles by and what
vector math may call.

    vector_extensions(target_spec("llvm -mcpu=x86-64-v3"))        ->  {"avx", "avx2"}
    vector_bits(target_spec("llvm -mcpu=skylake-avx512"))         ->  512
    vector_bits(target_spec("llvm -mtriple=aarch64-linux-gnu"))   ->  128
    vector_bits(target_spec("llvm -mtriple=riscv64-linux-gnu"))   ->  32 (no V extension: scalars)
    has_fma(target_spec("llvm -mcpu=x86-64-v2"))                  ->  False

An explicit feature list (the host's, or -mattr) or an x86-64 level decides at
once. Any other named x86 CPU is asked of LLVM itself: two tiny functions are
compiled for the target, a 16-lane float add (zmm registers mean AVX-512, ymm
AVX) and an 8-lane integer add (ymm means AVX2), so that a schedule and the
vector math follow every CPU LLVM knows, not a table of the ones we thought of.
"""

from __future__ import annotations

import functools
import re

from ..runtime.kernels.cpu_levels import level_features
from ..runtime.kernels.host import triple_arch
from ..runtime.kernels.libmvec import VECTOR_EXTENSIONS, extensions_of
from ..llvm_capi import Context, Module
from .llvm_target import TargetSpec, target_machine

# The x86 extensions that change vector width or the vector math ABI (libmvec's ISA letters).
EXTENSIONS = VECTOR_EXTENSIONS

_PROBES = {
    "avx512f": ("<16 x float>", "fadd", "zmm"),
    "avx": ("<8 x float>", "fadd", "ymm"),
    "avx2": ("<8 x i32>", "add", "ymm"),
}
_FMA_PROBE = ("<4 x float>", "call fast <4 x float> @llvm.fma.v4f32(<4 x float> %x, <4 x float> %y, <4 x float> %y)",
              "vfmadd")


@functools.lru_cache(maxsize=None)
def vector_extensions(spec: TargetSpec) -> frozenset[str]:
    """Which of EXTENSIONS the target has (none on a target that is not x86-64)."""
    if triple_arch(spec.triple) != "x86_64":
        return frozenset()
    enabled = _listed(spec)
    if enabled is not None:
        return extensions_of(enabled)
    return frozenset(name for name, probe in _PROBES.items() if _uses_register(spec, *probe))


def _listed(spec: TargetSpec) -> frozenset[str] | None:
    """The x86 features an explicit list or a level enables, or None for a named CPU whose
    features only LLVM knows. A generic CPU or a level is what its features say; so is a
    CPU whose list names avx512f either way (the host's full list does)."""
    features = {f.strip() for f in spec.features.split(",") if f.strip()}
    level = level_features(spec.cpu)
    if level is None and spec.cpu not in ("", "generic") and not {"+avx512f", "-avx512f"} & features:
        return None
    return frozenset(({f[1:] for f in features if f.startswith("+")} | (level or frozenset()))
                     - {f[1:] for f in features if f.startswith("-")})


@functools.lru_cache(maxsize=None)
def has_fma(spec: TargetSpec) -> bool:
    """Whether the target has fused multiply-add vector instructions: every aarch64 (NEON's
    fmla) and riscv64 (fmadd) CPU; on x86, 64- or 32-bit, what its features say (v3 and up)."""
    family = arch_family(spec.triple)
    if family in ("aarch64", "riscv64"):
        return True
    if family not in ("x86_64", "x86-32"):
        return False
    enabled = _listed(spec)
    if enabled is not None:
        return "fma" in enabled or "avx512f" in enabled
    return _uses_register(spec, *_FMA_PROBE)


# Where float32 vectors take an extension: what a 4-lane float add compiles to with them, by
# arch_family (a pattern; ARM's scalar VFP add is vadd.f32 too, on s registers).
_VECTOR_ADD = {"riscv64": "vfadd", "x86-32": "v?addps", "arm32": r"vadd\.f32\s+q"}


def arch_family(triple: str) -> str:
    """The triple's architecture, with 32-bit x86 (i386 .. i686) as "x86-32" and 32-bit ARM
    (arm*, thumb*: armv7, thumbv7, armeb, ...) as "arm32"."""
    arch = triple_arch(triple)
    if arch in ("i386", "i486", "i586", "i686"):
        return "x86-32"
    if arch.startswith(("arm", "thumb")):
        return "arm32"
    return arch


def vector_bits(spec: TargetSpec) -> int:
    """Bits of the widest vector register of `spec` for float32: on x86-64 its extensions';
    128 on aarch64 (NEON, and the fixed-width view of SVE that the schedules use), and on
    riscv64, 32-bit x86 and 32-bit ARM with float vectors (V, SSE, NEON); 32 on those
    without them (float registers only: one lane)."""
    if arch_family(spec.triple) in _VECTOR_ADD:
        return 128 if has_float_vectors(spec) else 32
    extensions = vector_extensions(spec)
    return 512 if "avx512f" in extensions else 256 if "avx" in extensions else 128


@functools.lru_cache(maxsize=None)
def has_float_vectors(spec: TargetSpec) -> bool:
    """Whether a riscv64, 32-bit x86 or 32-bit ARM target has vector registers for float32: LLVM
    is asked, as for a named x86 CPU, since a CPU name implies its extensions (an add of two
    4-lane float vectors is one vfadd, addps or vadd.f32 with them, four scalar adds without)."""
    return _uses_register(spec, "<4 x float>", "fadd", _VECTOR_ADD[arch_family(spec.triple)])


def _uses_register(spec: TargetSpec, vector_type: str, operation: str, register: str) -> bool:
    """Whether `operation` on two loaded vectors compiles to `register` (a register name such
    as zmm, or an instruction: the text searched for in the assembly)."""
    machine = target_machine(spec)
    instruction = operation if operation.startswith("call") else f"{operation} {vector_type} %x, %y"
    declaration = "declare <4 x float> @llvm.fma.v4f32(<4 x float>, <4 x float>, <4 x float>)" if "llvm.fma" in operation else ""
    with Context() as context:
        module = Module.parse(f"""
{declaration}
define void @probe(ptr %a, ptr %b) {{
  %x = load {vector_type}, ptr %a
  %y = load {vector_type}, ptr %b
  %z = {instruction}
  store {vector_type} %z, ptr %a
  ret void
}}
""", context)
        module.set_triple(spec.triple)
        module.set_data_layout(machine.data_layout)
        assembly = machine.emit(module, assembly=True).decode()
    pattern = rf"%{register}\d+" if register.endswith("mm") else rf"\b{register}"
    return re.search(pattern, assembly) is not None


__all__ = ["EXTENSIONS", "arch_family", "has_float_vectors", "has_fma", "vector_bits", "vector_extensions"]
