"""Kernels that are one body under several names: which ones, so that their code is built once.

FuseOps and FuseTIR name each fused kernel after its operators and number the
repeats, so a model whose layers repeat gets several PrimFuncs that differ in
nothing but their name: the transformer's query, key and value projections
(fused_matmul_add, fused_matmul1_add1, fused_matmul2_add2) and its two layer
norms. TVM's BlockBuilder keeps one function of a structurally equal set; here
the Relax module keeps every name (the VM calls them, the artifact lists them)
and code generation builds the body once (kernel_codegen.generate_forwarding_kernel):
every other name gets a small ABI entry of its own that checks its arguments
under its own name, then calls the first kernel's entry. For the transformer
that is 3 kernels of 15 that are neither lowered, optimized nor compiled.

Two kernels are one body when their IR is the same up to source spans. Names
of variables and buffers count: they reach the kernels' metadata (parameter
names) and run-time messages, so the transformer's two reshape-transposes, equal
but for the names of their buffers, are built twice. The comparison is on the
IR's JSON text (relax.ir.json, deterministic) with the spans and the table of
source files taken out, and only between kernels whose parameters agree.
"""

from __future__ import annotations

import re

from ..ir import tir
from ..ir.json import to_json

# A span entry as relax.ir.json writes it: `, "span": [source, line, column, end_line, end_column]`.
# Quotes inside JSON strings are escaped, so this cannot match within a string value.
_SPAN = re.compile(r', "span": \[[0-9, ]*\]')
_SOURCES = re.compile(r'"sources": \[[^\]]*\]')


def body_key(func: tir.PrimFunc) -> str:
    """A text that two PrimFuncs share exactly when they are equal up to source spans."""
    return _SOURCES.sub('"sources": []', _SPAN.sub("", to_json(func)))


def _signature(func: tir.PrimFunc) -> tuple:
    """A cheap necessary condition for equal bodies: the parameters' dtypes and static shapes."""
    parts = []
    for param in func.params:
        buffer = func.buffer_of(param)
        if buffer is None:
            parts.append(("scalar", param.dtype))
        else:
            parts.append((buffer.dtype, tuple(d.value if isinstance(d, tir.IntImm) else None for d in buffer.shape)))
    return tuple(parts)


def identical_kernels(funcs: dict[str, tir.PrimFunc]) -> dict[str, str]:
    """{name: first name} for each kernel whose body equals that of a kernel earlier in sorted
    name order; the first of each such group maps to nothing (it is built as usual). Only
    kernels whose parameters agree (_signature) are compared in full."""
    candidates: dict[tuple, list[str]] = {}
    for name in sorted(funcs):
        candidates.setdefault(_signature(funcs[name]), []).append(name)
    shared: dict[str, str] = {}
    for names in candidates.values():
        if len(names) < 2:
            continue
        first: dict[str, str] = {}
        for name in names:
            owner = first.setdefault(body_key(funcs[name]), name)
            if owner != name:
                shared[name] = owner
    return shared
