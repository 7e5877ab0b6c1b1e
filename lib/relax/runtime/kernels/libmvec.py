"""LLVM's vector math intrinsics renamed to glibc's libmvec functions (x86-64 Linux).

The loop vectorizer turns a math intrinsic into its vector form (`llvm.exp.v8f32`),
which the x86 backend would split into eight scalar `expf` calls: llvmlite cannot
give LLVM a vector library. `map_to_libmvec` renames such calls in optimized module
text to the libmvec function of the vector function ABI (`_ZGVdN8v_expf`: expf on
8 lanes with AVX2). The code generator applies it after optimizing a part
(codegen/vector_math.py), and so does the loader after compiling bitcode for this
host, whose vectors may be wider or narrower than the build target's.
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

_VECTOR_INTRINSIC = re.compile(r"@llvm\.(\w+?)\.v(\d+)f(32|64)\b")


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


def map_to_libmvec(text: str, extensions: frozenset) -> str:
    """Optimized module text with vector math intrinsics renamed to their libmvec functions
    (`extensions`: the target's, as vector_width.vector_extensions or extensions_of give them)."""

    def rename(match: re.Match) -> str:
        name, lanes, bits = match.group(1), int(match.group(2)), int(match.group(3))
        arity = LIBMVEC_FUNCTIONS.get(name)
        letter = _isa_letter(lanes * bits, extensions)
        if arity is None or letter is None:
            return match.group(0)
        return f"@_ZGV{letter}N{lanes}{'v' * arity}_{name}{'f' if bits == 32 else ''}"

    return _VECTOR_INTRINSIC.sub(rename, text)


def vector_intrinsics(function_names) -> bool:
    """Whether a parsed module with these functions declares a vector math intrinsic that
    map_to_libmvec renames (when none, its text round trip would give the module back unchanged)."""
    for name in function_names:
        match = _VECTOR_INTRINSIC.fullmatch("@" + name)
        if match and match.group(1) in LIBMVEC_FUNCTIONS:
            return True
    return False
