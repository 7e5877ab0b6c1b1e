"""The x86-64 microarchitecture levels (the psABI's x86-64, -v2, -v3, -v4) as LLVM feature sets.

A kernel object built for `-mcpu=x86-64-v3` names a CPU that is no machine's own:
it runs natively on every host whose features include the level's, and the
schedules size their tiles by the level's vector registers. LLVM knows the levels
as CPU names but llvmlite cannot ask it which features a CPU name implies, so the
levels' definitions (fixed by the x86-64 psABI) are kept here as data.

    level_features("x86-64-v3")  ->  frozenset({"avx2", "fma", ..., "sse2"})
    level_features("znver3")     ->  None   (not a level: only the host's own CPU name runs natively)
"""

from __future__ import annotations

_BASELINE = frozenset({"64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2"})
_V2 = _BASELINE | {"cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3"}
_V3 = _V2 | {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}
_V4 = _V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}

X86_64_LEVELS = {"x86-64": _BASELINE, "x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4}


def level_features(cpu: str) -> frozenset[str] | None:
    """The features an x86-64 level's CPU name implies, or None for any other CPU name."""
    return X86_64_LEVELS.get(cpu)


__all__ = ["X86_64_LEVELS", "level_features"]
