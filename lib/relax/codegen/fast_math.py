"""float32 erf defined in the kernel module: vectorized with its loop, no call.

On x86-64 Linux the loop vectorizer calls glibc's libmvec for math in loops
(vector_math.py). float32 erf dominates the transformer layer's GELU there and is
cheaper as straight-line code the vectorizer inlines, with no call per vector of
lanes. `define_fast_functions` renames the unoptimized module's calls of `erff` to an
internal always-inline definition added to the module (FAST_FUNCTIONS is the table of
such replacements).

erf(x) ~ x * P(x^2) / Q(x^2), x clamped to [-4, 4] (erf(4) is 1 in float32), with the
coefficients of the float32 approximation Eigen and XLA use: at most 4.0e-7 from erf
in double precision, 7 ulp near |x| = 3.3 (2M points of [-6, 6]; libm's erff is
within 1 ulp, libmvec's 4).

The clamp is selects that let NaN through.

exp stays with libmvec: written out the same way it ran no faster
(docs/performance-notes.md).
"""

from __future__ import annotations

import re
import struct

import numpy as np

ERF_NUMERATOR = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
                 -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)  # highest power first
ERF_DENOMINATOR = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                   -7.37332916720468e-03, -1.42647390514189e-02)

FAST_ERF = "__relax_erff"
_ATTRIBUTES = "alwaysinline nounwind willreturn memory(none)"


def float_literal(value: float) -> str:
    """An LLVM float constant: the float32 value's double bits in hexadecimal."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", float(np.float32(value))))[0]


def _horner(coefficients, x: str, name: str, lines: list[str]) -> str:
    value = float_literal(coefficients[0])
    for step, coefficient in enumerate(coefficients[1:]):
        lines.append(f"  %{name}{step} = call float @llvm.fmuladd.f32(float {value}, float {x}, "
                     f"float {float_literal(coefficient)})")
        value = f"%{name}{step}"
    return value


def _clamp(x: str, low: float, high: float, lines: list[str]) -> str:
    lines += [f"  %above = fcmp ogt float {x}, {float_literal(high)}",
              f"  %high = select i1 %above, float {float_literal(high)}, float {x}",
              f"  %below = fcmp olt float %high, {float_literal(low)}",
              f"  %c = select i1 %below, float {float_literal(low)}, float %high"]
    return "%c"


def erf_definition() -> list[str]:
    lines = [f"define internal float @{FAST_ERF}(float %x) {_ATTRIBUTES} {{"]
    c = _clamp("%x", -4.0, 4.0, lines)
    lines.append(f"  %x2 = fmul float {c}, {c}")
    numerator = _horner(ERF_NUMERATOR, "%x2", "p", lines)
    denominator = _horner(ERF_DENOMINATOR, "%x2", "q", lines)
    return lines + [f"  %odd = fmul float {c}, {numerator}", f"  %erf = fdiv float %odd, {denominator}",
                    "  ret float %erf", "}"]


def _declaration(name: str) -> re.Pattern:
    return re.compile(rf'^declare float @"?{re.escape(name)}"?\(float( %"?[.\w]+"?)?\).*\n?', re.MULTILINE)


# callee in the unoptimized module -> (its replacement, the replacement's definition)
FAST_FUNCTIONS = {"erff": (FAST_ERF, erf_definition)}


def define_fast_functions(text: str, names=tuple(FAST_FUNCTIONS)) -> str:
    """Module text whose calls of FAST_FUNCTIONS (among `names`) go to their definitions here."""
    added: list[str] = []
    for callee in names:
        replacement, definition = FAST_FUNCTIONS[callee]
        declaration = _declaration(callee)
        if not declaration.search(text):
            continue
        text = declaration.sub("", text)
        text = re.sub(rf'@"?{re.escape(callee)}"?\(', f"@{replacement}(", text)
        added += definition()
    if not added:
        return text
    if not re.search(r'^declare float @"?llvm\.fmuladd\.f32"?\(', text, re.MULTILINE):
        added.append("declare float @llvm.fmuladd.f32(float, float, float)")
    return text + "\n" + "\n".join(added) + "\n"


def define_fast_erf(text: str) -> str:
    """Module text whose erff calls go to FAST_ERF (define_fast_functions for erf alone)."""
    return define_fast_functions(text, ("erff",))
