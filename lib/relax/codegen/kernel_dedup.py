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
allocation's failure message. The comparison is on a flat list of tokens (each
node's type and fields in order, a node met before by its number, the spans left
out, the buffer parameters renamed by position), and only between kernels whose
parameters agree.
"""

from __future__ import annotations

import numpy as np

from ..ir import tir
from ..ir.node import FrozenDict, Node, field_names


def body_key(func: Node) -> tuple:
    """A key that two PrimFuncs share exactly when they are equal up to source spans and
    the names of their buffer parameters (any other node: up to source spans)."""
    renamed = {}
    for position, (param, buffer) in enumerate(getattr(func, "buffer_map", ())):
        renamed[id(param)] = renamed[id(buffer)] = f"%buffer{position}"
        renamed[id(buffer.data)] = f"%data{position}"
    return tuple(_Tokens(renamed).node(func))


class _Tokens:
    """A node as a flat list of tokens: its type and fields in order, a node met before as
    ("ref", its number), so that sharing counts as it does in the IR; spans are left out."""

    def __init__(self, renamed: dict[int, str]):
        self.renamed = renamed
        self.numbers: dict[int, int] = {}
        self.alive: list = []  # keeps numbered nodes alive so their ids stay unique
        self.tokens: list = []

    def node(self, node: Node) -> list:
        self.value(node)
        return self.tokens

    def value(self, value) -> None:
        tokens = self.tokens
        if isinstance(value, Node):
            number = self.numbers.get(id(value))
            if number is not None:
                tokens.append(("ref", number))
                return
            self.numbers[id(value)] = len(self.numbers)
            self.alive.append(value)
            cls = type(value)
            tokens.append(cls)
            new_name = self.renamed.get(id(value))
            for name in field_names(cls):
                if name == "name" and new_name is not None:
                    tokens.append(new_name)
                else:
                    self.value(getattr(value, name))
        elif value is None or isinstance(value, (bool, int, str)):
            tokens.append((value.__class__, value))
        elif isinstance(value, float):
            tokens.append((float, repr(value)))  # repr: -0.0 and 0.0, and every NaN, compare as written
        elif isinstance(value, (tuple, list)):
            tokens.append((value.__class__, len(value)))
            for item in value:
                self.value(item)
        elif isinstance(value, (FrozenDict, dict)):
            tokens.append((value.__class__, len(value)))
            for key, item in value.items():
                self.value(key)
                self.value(item)
        elif isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            tokens.append((value.__class__, str(array.dtype), array.shape, array.tobytes()))
        else:
            raise TypeError(f"cannot compare a value of type {type(value).__name__}")


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
    bodies = SharedBodies(funcs)
    return {name: owner for name in sorted(funcs) if (owner := bodies.owner(name)) != name}


class SharedBodies:
    """identical_kernels asked kernel by kernel: the kernels whose parameters agree with
    the one asked about are compared when it is, so that code generation can start on a
    kernel no other one shares parameters with before comparing any others."""

    def __init__(self, funcs: dict[str, tir.PrimFunc]):
        self.funcs = funcs
        self._signatures = {name: _signature(func) for name, func in funcs.items()}
        self._candidates: dict[tuple, list[str]] = {}
        for name in sorted(funcs):
            self._candidates.setdefault(self._signatures[name], []).append(name)
        self._owners: dict[str, str] = {}

    def owner(self, name: str) -> str:
        """The first name, in sorted order, of the kernels whose body equals `name`'s (itself if none)."""
        owner = self._owners.get(name)
        if owner is None:
            names = self._candidates[self._signatures[name]]
            if len(names) == 1:
                owner = self._owners[name] = name
            else:
                first: dict[tuple, str] = {}
                for other in names:
                    self._owners[other] = first.setdefault(body_key(self.funcs[other]), other)
                owner = self._owners[name]
        return owner

    def group(self, name: str) -> list[str]:
        """`name` and the kernels that share its body, in sorted order (`name` must be an owner)."""
        names = self._candidates[self._signatures[name]]
        return [other for other in names if self.owner(other) == name] if len(names) > 1 else [name]
