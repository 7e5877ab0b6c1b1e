"""Kernels that are one body under several names: which ones, so that their code is built once.

FuseOps and FuseTIR name each fused kernel after its operators and number the
repeats, so a model whose layers repeat gets several PrimFuncs that differ in
nothing but their names: the transformer's query, key and value projections
(fused_matmul_add, fused_matmul1_add1, fused_matmul2_add2, whose weight and bias
parameters are named after the Relax values they take) and its two layer norms.
TVM's BlockBuilder keeps one function of a structurally equal set; here the Relax
module keeps every name (the VM calls them, the artifact lists them) and code
generation builds the body once (kernel_codegen.generate_forwarding_kernel): every
other name gets a small ABI entry of its own that checks its arguments under its
own name, then calls the first kernel's entry, and metadata with its own parameter
names. For the transformer that is 4 kernels of 15 that are neither lowered,
optimized nor compiled.

Two kernels are one body when their IR is the same up to source spans and the
names of their buffer parameters (the parameter, its buffer and the buffer's data
variable): those names reach only the kernels' metadata, which each name gets from
its own PrimFunc, never the code. Every other name counts: scalar parameters and
symbolic sizes are in the metadata's shapes, and a local buffer's name is in its
allocation's failure message. The comparison is on the IR's JSON document
(relax.ir.json, deterministic) with the spans and the table of source files taken
out and the buffer parameters renamed by position, and only between kernels whose
parameters agree.
"""

from __future__ import annotations

import json

from ..ir import tir
from ..ir.json import to_json


def body_key(func: tir.PrimFunc) -> str:
    """A text that two PrimFuncs share exactly when they are equal up to source spans and
    the names of their buffer parameters (any other node: up to source spans)."""
    document = json.loads(to_json(func))
    document["sources"] = []
    nodes = document["nodes"]
    for node in nodes:
        node.pop("span", None)
    root = nodes[document["root"]["ref"]]["fields"]
    for position, pair in enumerate(root.get("buffer_map", {}).get("tuple", ())):
        param, buffer = (nodes[item["ref"]]["fields"] for item in pair["tuple"])
        param["name"] = buffer["name"] = f"%buffer{position}"
        nodes[buffer["data"]["ref"]]["fields"]["name"] = f"%data{position}"
    return json.dumps(document)


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
