"""LLVM's vector math intrinsics renamed to glibc's libmvec functions (x86-64 Linux).

The loop vectorizer turns a math intrinsic into its vector form (`llvm.exp.v8f32`),
which the x86 backend would split into eight scalar `expf` calls: llvmlite cannot
give LLVM a vector library. `to_libmvec` renames such functions of an optimized
module to the libmvec function of the vector function ABI (`_ZGVdN8v_expf`: expf
on 8 lanes with AVX2), and their calls with them. The code generator applies it
after optimizing a part (codegen/vector_math.py), and so does the loader after
compiling bitcode for this host, whose vectors may be wider or narrower than the
build target's.

The renaming goes through LLVM (llvm_capi's Module.rename_function), not through
the module's text: llvmlite's printer sets the process's locale to C while it
prints, and the part compiler's worker threads would flip it under every other
thread (a text file opened meanwhile reads as ASCII).
"""

from __future__ import annotations

import re

from .host import triple_arch, triple_os

# Math intrinsics with a libmvec version (glibc 2.35), by the number of operands.
LIBMVEC_FUNCTIONS = {
    "exp": 1, "exp2": 1, "exp10": 1, "log": 1, "log2": 1, "log10": 1, "sin": 1, "cos": 1, "tan": 1,
    "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "tanh": 1, "pow": 2,
}

# The x86 extensions that decide libmvec's ISA letters.
VECTOR_EXTENSIONS = ("avx", "avx2", "avx512f")

_VECTOR_INTRINSIC = re.compile(r"llvm\.(\w+?)\.v(\d+)f(32|64)")


def uses_libmvec(triple: str) -> bool:
    return triple_arch(triple) == "x86_64" and triple_os(triple) == "linux"


def extensions_of(features: frozenset[str]) -> frozenset[str]:
    """VECTOR_EXTENSIONS among enabled x86 features (avx2, fma or avx512f imply avx)."""
    if features & {"avx2", "fma", "avx512f"}:
        features = features | {"avx"}
    return features & frozenset(VECTOR_EXTENSIONS)


def _isa_letter(vector_bits: int, extensions: frozenset) -> str | None:
    """The vector function ABI's ISA letter for a vector of this size on a target with these
    vector extensions; None when the target has no such registers: a call in registers it
    lacks would read garbage, so LLVM splits it instead."""
    if vector_bits == 128:
        return "b"
    if vector_bits == 256 and "avx" in extensions:
        return "d" if "avx2" in extensions else "c"
    if vector_bits == 512 and "avx512f" in extensions:
        return "e"
    return None


def libmvec_names(function_names, extensions: frozenset) -> dict[str, str]:
    """{vector math intrinsic: its libmvec function} among a module's `function_names`
    (`extensions`: the target's, as vector_width.vector_extensions or extensions_of give
    them); an intrinsic without a libmvec version, or too wide for the target, is left out."""
    renamed = {}
    for function in function_names:
        match = _VECTOR_INTRINSIC.fullmatch(function)
        if match is None:
            continue
        name, lanes, bits = match.group(1), int(match.group(2)), int(match.group(3))
        arity = LIBMVEC_FUNCTIONS.get(name)
        letter = _isa_letter(lanes * bits, extensions)
        if arity is not None and letter is not None:
            renamed[function] = f"_ZGV{letter}N{lanes}{'v' * arity}_{name}{'f' if bits == 32 else ''}"
    return renamed


def to_libmvec(module, triple: str, extensions: frozenset) -> None:
    """Renames `module`'s (an llvm_capi.Module, optimized, for `triple`) vector math
    intrinsics to their libmvec functions, in place, where the triple has libmvec."""
    if not uses_libmvec(triple):
        return
    for intrinsic, function in libmvec_names(module.function_names(), extensions).items():
        module.rename_function(intrinsic, function)
