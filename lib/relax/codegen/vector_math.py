"""Vector math through glibc's libmvec for x86-64 Linux targets.

LLVM's loop vectorizer turns `llvm.exp.f32` in a loop into `llvm.exp.v8f32`, and
the backend then splits it into eight scalar `expf` calls. glibc ships vector
versions of these functions (libmvec, names in the x86-64 vector function ABI:
`_ZGVdN8v_expf` is expf on 8 lanes with AVX2). After optimization, calls to
vectorized math intrinsics whose libmvec version exists are renamed to it; the
loader loads libmvec like libm. Results are within libmvec's 4 ulp.

llvmlite offers no way to give LLVM's own vector-library setting to the code
generator, hence this rewrite of the optimized module text.
"""

from __future__ import annotations

import re

from ..runtime.kernels.host import triple_arch, triple_os

# Math intrinsics with a libmvec version (glibc 2.35), by the number of operands.
LIBMVEC_FUNCTIONS = {
    "exp": 1, "exp2": 1, "exp10": 1, "log": 1, "log2": 1, "log10": 1, "sin": 1, "cos": 1, "tan": 1,
    "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "tanh": 1, "pow": 2,
}

_VECTOR_INTRINSIC = re.compile(r"@llvm\.(\w+?)\.v(\d+)f(32|64)\b")


def _isa_letter(vector_bits: int, features: str) -> str | None:
    """The vector function ABI's ISA letter for a vector of this size on these features."""
    if vector_bits == 128:
        return "b"
    if vector_bits == 256:
        return "d" if "+avx2" in features.split(",") else "c"
    if vector_bits == 512:
        return "e"
    return None


def uses_libmvec(triple: str) -> bool:
    return triple_arch(triple) == "x86_64" and triple_os(triple) == "linux"


def map_to_libmvec(text: str, features: str) -> str:
    """Optimized module text with vector math intrinsics renamed to their libmvec functions."""

    def rename(match: re.Match) -> str:
        name, lanes, bits = match.group(1), int(match.group(2)), int(match.group(3))
        arity = LIBMVEC_FUNCTIONS.get(name)
        letter = _isa_letter(lanes * bits, features)
        if arity is None or letter is None:
            return match.group(0)
        return f"@_ZGV{letter}N{lanes}{'v' * arity}_{name}{'f' if bits == 32 else ''}"

    return _VECTOR_INTRINSIC.sub(rename, text)
