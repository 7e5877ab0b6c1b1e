"""Vector math through glibc's libmvec for x86-64 Linux targets.

glibc ships vector versions of its math functions (libmvec, named by the x86-64
vector function ABI: `_ZGVdN8v_expf` is expf on 8 lanes with AVX2). Two routes
lead there, because llvmlite cannot hand LLVM's own vector-library setting to
the optimizer and the code generator:

- LLVM math intrinsics (llvm.exp, ...): the loop vectorizer turns them into
  `llvm.exp.v8f32`, which the backend would split into eight `expf` calls;
  `to_libmvec` (runtime/kernels/libmvec.py, which the loader uses too) renames
  them in the optimized module.
- libm calls (erff, log1pf, ...): `declare_vector_variants` gives their
  declarations, before optimization, LLVM's `vector-function-abi-variant`
  attribute and the vector functions' declarations, so the loop vectorizer
  calls those itself.

The loader loads libmvec like libm. Results are within libmvec's 4 ulp.

float32 erf is the exception: on these targets fast_math.py defines it in the
module, as fused multiply-adds the loop vectorizer inlines and vectorizes with the
loop, about twice as fast as libmvec's erff.
"""

from __future__ import annotations

import re

from .fast_math import define_fast_functions


# libm functions called directly (intrinsics.py "libm" entries) with a libmvec version.
LIBMVEC_CALLS = {"erf": 1, "expm1": 1, "log1p": 1, "cbrt": 1, "asinh": 1, "acosh": 1, "atanh": 1,
                 "atan2": 2, "hypot": 2}

_SCALAR_TYPES = {"float": (32, "f"), "double": (64, "")}
_DECLARATION = re.compile(r'^declare (float|double) @"?(\w+?)"?\((.*)\)$', re.MULTILINE)


def _variants(extensions: frozenset) -> list[tuple[str, int]]:
    """(ISA letter, vector bits) of the libmvec variants a target with these extensions can call."""
    found = [("b", 128)]
    if "avx2" in extensions:
        found.append(("d", 256))
    elif "avx" in extensions:
        found.append(("c", 256))
    if "avx512f" in extensions:
        found.append(("e", 512))
    return found


def declare_vector_variants(text: str, extensions: frozenset) -> str:
    """Unoptimized module text whose libm declarations name their libmvec vector variants
    (float32 erf defined in the module instead: fast_math.py)."""
    text = define_fast_functions(text)
    extra: list[str] = []

    def annotate(match: re.Match) -> str:
        type_name, symbol = match.group(1), match.group(2)
        bits, suffix = _SCALAR_TYPES[type_name]
        base = symbol[:-1] if suffix and symbol.endswith(suffix) else symbol
        arity = LIBMVEC_CALLS.get(base)
        if arity is None or base + suffix != symbol:
            return match.group(0)
        names = []
        for letter, vector_bits in _variants(extensions):
            lanes = vector_bits // bits
            vector = f"_ZGV{letter}N{lanes}{'v' * arity}_{symbol}"
            names.append(f"{vector}({vector})")
            vector_type = f"<{lanes} x {type_name}>"
            extra.append(f"declare {vector_type} @{vector}({', '.join([vector_type] * arity)})")
        return f'{match.group(0)} nounwind memory(none) "vector-function-abi-variant"="{",".join(names)}"'

    annotated = _DECLARATION.sub(annotate, text)
    if not extra:
        return text
    used = ", ".join(f"ptr @{line.split('@')[1].split('(')[0]}" for line in extra)
    extra.append(f'@llvm.compiler.used = appending global [{len(extra)} x ptr] [{used}], section "llvm.metadata"')
    return annotated + "\n" + "\n".join(extra) + "\n"
