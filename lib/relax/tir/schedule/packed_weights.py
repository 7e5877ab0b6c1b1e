"""Weights in the register tile's panel layout: which kernel parameters can take one, and the kernel that reads it.

A register-tiled matmul (register_tile.py) reads B in panels of PANEL_WIDTH columns:
for each column tile, k steps of 32 contiguous floats. When B is a constant (a weight
bound by `--params`, transposed at build time by constant folding), it can be stored
in that order once, at build time, instead of being packed on every call:

    B[k, j]  (K x N, row stride N)   ->   packed[j // 32, k, j % 32]  (N / 32 panels of K x 32)

    C[i, j] += A[i, k] * B[k, j]     ->   C[i, j] += A[i, k] * packed[j // 32, k, j % 32]

The rewritten kernel means the same thing as a plain loop nest (-O0 and every other
target compute it as written); the register-tile rule recognizes the packed load and
reads each tile's panel where it lies, contiguous, with no per-call copy. The Relax
side (transform/pack_constant_weights.py) decides which call sites pass constants
and lays the arrays out with `pack_array`.

A parameter is packable when the kernel reads it in exactly one place, as the B of a
nest the register-tile rule takes (not a gemv: a single row streams B whole rows
at a time, already contiguous), 2-D float32 of constant shape with N a multiple of
PANEL_WIDTH (no ragged last panel), indexed by the nest's own k and j iterators.
"""

from __future__ import annotations

import numpy as np

from ...ir import tir
from ..loop_nests import top_level
from ..rewrite import Rewriter, walk
from . import gemv, register_tile
from .cpu import CpuInfo
from .nest import match_nest

PANEL_WIDTH = register_tile.LANES * register_tile.VECTORS  # 32 float32 columns per panel


def _static(shape) -> tuple[int, ...] | None:
    if not all(isinstance(d, tir.IntImm) for d in shape):
        return None
    return tuple(d.value for d in shape)


def _accesses(func: tir.PrimFunc, buffer: tir.Buffer) -> int:
    """How many loads and stores of the whole kernel touch `buffer`."""
    count = 0

    def visit(node):
        nonlocal count
        if isinstance(node, (tir.BufferLoad, tir.BufferStore)) and node.buffer is buffer:
            count += 1

    walk(func.body, visit)
    return count


def packable_params(func: tir.PrimFunc) -> tuple[int, ...]:
    """Positions of the parameters of `func` that could be passed in the packed layout."""
    cpu = CpuInfo()
    position_of = {id(var): position for position, var in enumerate(func.params)}
    params = {id(buffer): position_of[id(var)] for var, buffer in func.buffer_map if id(var) in position_of}
    positions = []
    for stmt in top_level(func.body)[0]:
        nest = match_nest(stmt)
        if nest is None or gemv.matches(nest, cpu) or not register_tile.matches(nest, cpu):
            continue
        operands = register_tile._operands(nest)
        if operands is None:
            continue
        b = operands[1]
        store = nest.block.body
        k_iters = [iv.var for iv in nest.block.iter_vars if iv.iter_type == "CommReduce"]
        shape = _static(b.buffer.shape)
        if (id(b.buffer) not in params or b.buffer.dtype != "float32" or shape is None or len(shape) != 2
                or shape[1] % PANEL_WIDTH or len(k_iters) != 1
                or b.indices[0] is not k_iters[0] or b.indices[1] is not store.indices[-1]
                or _accesses(func, b.buffer) != 1):
            continue
        positions.append(params[id(b.buffer)])
    return tuple(sorted(positions))


def packed_shape(shape: tuple[int, int]) -> tuple[int, int, int]:
    """The packed layout's shape for a K x N weight."""
    k, n = shape
    return (n // PANEL_WIDTH, k, PANEL_WIDTH)


def pack_array(array: np.ndarray) -> np.ndarray:
    """A K x N weight in the packed layout (panel-major, contiguous)."""
    k, n = array.shape
    return np.ascontiguousarray(array.reshape(k, n // PANEL_WIDTH, PANEL_WIDTH).transpose(1, 0, 2))


class _ReadPacked(Rewriter):
    """Every access of the old buffers through the packed ones, B[k, j] -> packed[j // 32, k, j % 32]."""

    def __init__(self, replaced: dict[int, tuple[tir.Buffer, tir.Buffer]]):
        self.replaced = replaced  # id(old buffer) -> (old, packed)

    def _indices(self, indices):
        k, j = indices
        width = tir.IntImm(j.dtype, PANEL_WIDTH)
        return (tir.FloorDiv(j, width), k, tir.FloorMod(j, width))

    def visit_BufferLoad(self, node: tir.BufferLoad):
        found = self.replaced.get(id(node.buffer))
        if found is None:
            return self.generic_visit(node)
        return tir.BufferLoad(found[1], self._indices(tuple(self.visit(i) for i in node.indices)))

    def visit_BufferRegion(self, node: tir.BufferRegion):
        found = self.replaced.get(id(node.buffer))
        if found is None:
            return self.generic_visit(node)
        k, j = node.region
        if isinstance(j.extent, tir.IntImm) and j.extent.value == 1:
            region = tuple(tir.Range(index, tir.IntImm(index.dtype, 1)) for index in self._indices((k.min, j.min)))
        else:  # a wider read: the whole packed buffer
            region = tuple(tir.Range(tir.IntImm(d.dtype, 0), d) for d in found[1].shape)
        return tir.BufferRegion(found[1], region)


def read_packed(func: tir.PrimFunc, positions) -> tir.PrimFunc:
    """`func` with the parameters at `positions` (from packable_params) in the packed layout."""
    replaced: dict[int, tuple[tir.Buffer, tir.Buffer]] = {}
    buffer_map = []
    chosen = {id(func.params[position]) for position in positions}
    for var, buffer in func.buffer_map:
        if id(var) in chosen:
            dtype = buffer.shape[0].dtype
            shape = tuple(tir.IntImm(dtype, d) for d in packed_shape(_static(buffer.shape)))
            packed = tir.Buffer(buffer.name, shape, buffer.dtype, tir.Var(buffer.name, "handle"))
            replaced[id(buffer)] = (buffer, packed)
            buffer = packed
        buffer_map.append((var, buffer))
    body = _ReadPacked(replaced).visit(func.body)
    return func.with_fields(body=body, buffer_map=tuple(buffer_map))


__all__ = ["PANEL_WIDTH", "pack_array", "packable_params", "packed_shape", "read_packed"]
