"""Kernels that are one body under several names: which ones, so that their code is built once.

FuseOps and FuseTIR name each fused kernel after its operators and number the
repeats, so a model whose layers repeat gets several PrimFuncs that differ in
nothing but their name: the transformer's query, key and value projections
(fused_matmul_add, fused_matmul1_add1, fused_matmul2_add2), its two layer norms,
two of its reshape-transposes. TVM's BlockBuilder keeps one function of a
structurally equal set; here the Relax module keeps every name (the VM calls
them, the artifact lists them) and code generation builds the body once
(kernel_codegen.generate_forwarding_kernel): every other name gets a small ABI
entry of its own that checks its arguments under its own name, then calls the
first kernel's entry. For the transformer that is 4 kernels of 15 that LLVM
neither optimizes nor compiles.

Two kernels are one body when their IR is the same up to source spans. Names
of variables and buffers count: they reach the kernels' metadata (parameter
names) and run-time messages. The comparison is on the IR's JSON text
(relax.ir.json, deterministic) with the spans and the table of source files
taken out.
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


def identical_kernels(funcs: dict[str, tir.PrimFunc]) -> dict[str, str]:
    """{name: first name} for each kernel whose body equals that of a kernel earlier in sorted
    name order; the first of each such group maps to nothing (it is built as usual)."""
    first: dict[str, str] = {}
    shared: dict[str, str] = {}
    for name in sorted(funcs):
        owner = first.setdefault(body_key(funcs[name]), name)
        if owner != name:
            shared[name] = owner
    return shared
