"""Weights in the layouts the matmul rules read: which kernel parameters can take one, and the kernel that reads it.

A register-tiled matmul (register_tile.py) reads B in panels as wide as its tile (16
columns on AVX2, 64 on AVX-512: tile_shape.py): for each column tile, k steps of
contiguous floats. A gemv (gemv.py, one row of C) reads B in strips (64 columns on AVX2,
256 on AVX-512), one strip per thread. Both widths come from the CPU model of the target
the kernels are built for (cpu.py), the same model the schedules then read. When
B is a constant (a weight bound by `--params`, transposed at build time by constant
folding), it can be stored in that order once, at build time, instead of being
packed on every call (register tile) or read a part of every row at a time (gemv):

    B[k, j]  (K x N, row stride N)   ->   packed[j // W, k, j % W]  (N / W panels of K x W)

    C[i, j] += A[i, k] * B[k, j]     ->   C[i, j] += A[i, k] * packed[j // W, k, j % W]

The rewritten kernel means the same thing as a plain loop nest (-O0 and every other
target compute it as written); the rules recognize the packed load and read each
panel where it lies, contiguous. The Relax side (transform/pack_constant_weights.py)
decides which call sites pass constants and lays the arrays out with `pack_array`.

A parameter is packable when the kernel reads it in exactly one place, as the B of a
nest the gemv or register-tile rule takes, 2-D float32 of constant shape with N a
multiple of the panel width (no ragged last panel; a gemv needs two strips or more, so
that its threads keep splitting the columns), indexed by the nest's own k and j
iterators.
"""

from __future__ import annotations

import numpy as np

from ...ir import tir
from ...runtime.allocator import aligned_array
from ..loop_nests import top_level
from ..rewrite import Rewriter, collect
from . import gemv, register_tile
from .cpu import CpuInfo
from .matmul_operands import matmul_operands
from .nest import match_nest
from .tile_shape import register_tile_shape


def _static(shape) -> tuple[int, ...] | None:
    if not all(isinstance(d, tir.IntImm) for d in shape):
        return None
    return tuple(d.value for d in shape)


def _accesses(func: tir.PrimFunc, buffer: tir.Buffer) -> int:
    """How many loads and stores of the whole kernel touch `buffer` (collect keeps the
    kernel's accesses for the next parameter asked about)."""
    return sum(access.buffer is buffer for access in collect(func.body, (tir.BufferLoad, tir.BufferStore)))


def panel_width(cpu: CpuInfo) -> int:
    """Columns of a register-tile panel for `cpu`: its tile's width."""
    return register_tile_shape(cpu).width


def strip_width(cpu: CpuInfo) -> int:
    """Columns of a gemv strip for `cpu`."""
    return gemv.strip_vectors(cpu) * cpu.lanes


def _panel_width(nest, columns: int, cpu: CpuInfo) -> int | None:
    """The layout a rule would read B in: gemv strips (at least two, so that the threads
    keep their column split), register-tile panels, or None."""
    if gemv.matches(nest, cpu):
        width = strip_width(cpu)
        return width if columns % width == 0 and columns // width >= 2 else None
    if register_tile.matches(nest, cpu):
        width = panel_width(cpu)
        return width if columns % width == 0 else None
    return None


def packable_params(func: tir.PrimFunc, cpu: CpuInfo | None = None) -> dict[int, int]:
    """Parameter position -> panel width, for the parameters of `func` that could be passed
    packed for the kernels of `cpu` (None: the default CpuInfo())."""
    cpu = cpu if cpu is not None else CpuInfo()
    position_of = {id(var): position for position, var in enumerate(func.params)}
    params = {id(buffer): position_of[id(var)] for var, buffer in func.buffer_map if id(var) in position_of}
    found = {}
    for stmt in top_level(func.body)[0]:
        nest = match_nest(stmt)
        operands = matmul_operands(nest) if nest is not None else None
        if operands is None:
            continue
        b = operands[1]
        store = nest.block.body
        k_iters = [iv.var for iv in nest.block.iter_vars if iv.iter_type == "CommReduce"]
        shape = _static(b.buffer.shape)
        if (id(b.buffer) not in params or b.buffer.dtype != "float32" or shape is None or len(shape) != 2
                or len(k_iters) != 1 or b.indices[0] is not k_iters[0] or b.indices[1] is not store.indices[-1]
                or _accesses(func, b.buffer) != 1):
            continue
        width = _panel_width(nest, shape[1], cpu)
        if width is not None:
            found[params[id(b.buffer)]] = width
    return found


def packed_shape(shape: tuple[int, int], width: int) -> tuple[int, int, int]:
    """The packed layout's shape for a K x N weight in panels of `width` columns."""
    k, n = shape
    return (n // width, k, width)


def pack_array(array: np.ndarray, width: int) -> np.ndarray:
    """A K x N weight in panels of `width` columns (panel-major, contiguous)."""
    k, n = array.shape
    panels = array.reshape(k, n // width, width).transpose(1, 0, 2)
    if panels.flags.c_contiguous:  # one panel: the weight itself
        return panels
    packed = aligned_array(panels.shape, array.dtype, zeroed=False)  # as the constant pool keeps a weight
    packed[...] = panels
    return packed


class _ReadPacked(Rewriter):
    """Every access of the old buffers through the packed ones, B[k, j] -> packed[j // W, k, j % W]."""

    def __init__(self, replaced: dict[int, tuple[tir.Buffer, tir.Buffer, int]]):
        self.replaced = replaced  # id(old buffer) -> (old, packed, panel width)

    def _indices(self, indices, width: int):
        k, j = indices
        width = tir.IntImm(j.dtype, width)
        return (tir.FloorDiv(j, width), k, tir.FloorMod(j, width))

    def visit_BufferLoad(self, node: tir.BufferLoad):
        found = self.replaced.get(id(node.buffer))
        if found is None:
            return self.generic_visit(node)
        return tir.BufferLoad(found[1], self._indices(tuple(self.visit(i) for i in node.indices), found[2]))

    def visit_BufferRegion(self, node: tir.BufferRegion):
        found = self.replaced.get(id(node.buffer))
        if found is None:
            return self.generic_visit(node)
        k, j = node.region
        if isinstance(j.extent, tir.IntImm) and j.extent.value == 1:
            region = tuple(tir.Range(index, tir.IntImm(index.dtype, 1)) for index in self._indices((k.min, j.min), found[2]))
        else:  # a wider read: the whole packed buffer
            region = tuple(tir.Range(tir.IntImm(d.dtype, 0), d) for d in found[1].shape)
        return tir.BufferRegion(found[1], region)


def read_packed(func: tir.PrimFunc, widths: dict[int, int]) -> tir.PrimFunc:
    """`func` with the parameters at the positions of `widths` (from packable_params) in
    panels of their widths."""
    replaced: dict[int, tuple[tir.Buffer, tir.Buffer, int]] = {}
    buffer_map = []
    chosen = {id(func.params[position]): width for position, width in widths.items()}
    for var, buffer in func.buffer_map:
        if id(var) in chosen:
            dtype = buffer.shape[0].dtype
            shape = tuple(tir.IntImm(dtype, d) for d in packed_shape(_static(buffer.shape), chosen[id(var)]))
            packed = tir.Buffer(buffer.name, shape, buffer.dtype, tir.Var(buffer.name, "handle"))
            replaced[id(buffer)] = (buffer, packed, chosen[id(var)])
            buffer = packed
        buffer_map.append((var, buffer))
    body = _ReadPacked(replaced).visit(func.body)
    return func.with_fields(body=body, buffer_map=tuple(buffer_map))


__all__ = ["pack_array", "packable_params", "packed_shape", "panel_width", "read_packed", "strip_width"]
