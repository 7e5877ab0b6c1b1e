"""Memory allocators behind `vm.builtin.alloc_storage`: naive and pooled.

Storage is a 64-byte aligned numpy uint8 buffer; tensors are views into it. The
pooled allocator keeps every buffer it handed out and gives one back out again only
when nothing but the pool refers to it any more: a tensor view keeps its base
buffer alive, so a buffer still seen by a live result is never reused. It keeps at
most MAX_POOLED buffers of one size: past that (deep recursion holds one buffer per
frame), requests get fresh buffers, and a request never scans more than that many.
"""

from __future__ import annotations

import sys

import numpy as np

from ..diagnostics import UserError
from .device import CPU, CUDA, Device
from .objects import Storage

ALIGNMENT = 64


def aligned_buffer(nbytes: int, alignment: int = ALIGNMENT, zeroed: bool = True) -> np.ndarray:
    """A uint8 array of `nbytes` (zero-filled unless not `zeroed`) whose data pointer is
    `alignment`-aligned."""
    try:
        raw = (np.zeros if zeroed else np.empty)(nbytes + alignment, dtype=np.uint8)
    except (MemoryError, ValueError):  # more than the machine has, or than numpy can index
        raise UserError(f"cannot allocate {nbytes} bytes: out of memory") from None
    start = (-raw.ctypes.data) % alignment
    return raw[start:start + nbytes]


def aligned_array(shape, dtype, zeroed: bool = True) -> np.ndarray:
    """A C-contiguous array of `shape` and `dtype` on an aligned_buffer. Kernels stream
    weights with whole-vector loads, and a weight that starts part-way into a cache line
    runs measurably slower (docs/performance-notes.md): the constant pool keeps its
    tensors so, and the passes that make weights (folded constants, packed panels)
    allocate them so, for the pool to keep them as they are."""
    dtype = np.dtype(dtype)
    count = 1
    for extent in shape:
        count *= extent
    return aligned_buffer(count * dtype.itemsize, zeroed=zeroed).view(dtype).reshape(shape)


def is_aligned(array: np.ndarray) -> bool:
    return array.__array_interface__["data"][0] % ALIGNMENT == 0


def _check_device(device: Device) -> None:
    if device.device_type != CPU:
        raise UserError(f"no memory allocator for device {device} in this runtime")


class NaiveAllocator:
    """A fresh buffer for every request."""

    kind = "naive"

    def __init__(self, device: Device):
        _check_device(device)
        self.device = device
        self.allocated_bytes = 0

    def alloc(self, nbytes: int) -> Storage:
        if nbytes < 0:
            raise UserError(f"cannot allocate a negative number of bytes ({nbytes})")
        self.allocated_bytes += nbytes
        return Storage(aligned_buffer(nbytes), self.device)


class PooledAllocator:
    """Reuses buffers of the same rounded size once nothing else refers to them."""

    kind = "pooled"
    PAGE = 64
    MAX_POOLED = 64

    def __init__(self, device: Device):
        _check_device(device)
        self.device = device
        self.allocated_bytes = 0
        self._pool: dict[int, list[np.ndarray]] = {}

    def alloc(self, nbytes: int) -> Storage:
        if nbytes < 0:
            raise UserError(f"cannot allocate a negative number of bytes ({nbytes})")
        size = -(-nbytes // self.PAGE) * self.PAGE
        buffers = self._pool.setdefault(size, [])
        for buffer in buffers:
            # References: the pool's list, the loop variable, getrefcount's argument.
            # More than that means a Storage or a tensor view still holds the buffer.
            if sys.getrefcount(buffer.base) <= 2 and sys.getrefcount(buffer) <= 3:
                return Storage(buffer[:nbytes], self.device)
        buffer = aligned_buffer(size)
        if len(buffers) < self.MAX_POOLED:
            buffers.append(buffer)
        self.allocated_bytes += size
        return Storage(buffer[:nbytes], self.device)


ALLOCATORS = {"naive": NaiveAllocator, "pooled": PooledAllocator}


def make_allocator(kind: str, device: Device):
    if device.device_type == CUDA:
        from .cuda.allocator import make_cuda_allocator  # cupy only when a GPU is asked for

        return make_cuda_allocator(kind, device)
    factory = ALLOCATORS.get(kind)
    if factory is None:
        raise UserError(f"unknown memory allocator '{kind}' (expected one of: {', '.join(ALLOCATORS)})")
    return factory(device)
