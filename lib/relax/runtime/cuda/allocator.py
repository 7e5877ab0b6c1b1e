"""Allocators for the cuda device, with the CPU allocators' interface (runtime/allocator.py).

Storage is a cupy uint8 array; `vm.builtin.alloc_tensor` carves typed views from it
as on the CPU. The naive allocator asks cupy for every request. The pooled one
allocates from a cupy MemoryPool of its own, so freed blocks of the same rounded size
are handed out again by cupy (which reuses a block only once no array refers to it).
"""

from __future__ import annotations

from ...diagnostics import UserError
from ..device import CUDA, Device
from ..objects import Storage


def _check(device: Device) -> None:
    if device.device_type != CUDA:
        raise UserError(f"the cuda allocator cannot allocate on device {device}")


class CudaNaiveAllocator:
    """A fresh device buffer for every request (cupy's default pool underneath)."""

    kind = "naive"

    def __init__(self, device: Device, cupy):
        _check(device)
        self.device = device
        self.allocated_bytes = 0
        self._cupy = cupy

    def alloc(self, nbytes: int) -> Storage:
        if nbytes < 0:
            raise UserError(f"cannot allocate a negative number of bytes ({nbytes})")
        self.allocated_bytes += nbytes
        with self._cupy.cuda.Device(self.device.device_id):
            return Storage(self._cupy.empty(nbytes, dtype=self._cupy.uint8), self.device)


class CudaPooledAllocator:
    """Buffers from a memory pool of this VM's own: freed blocks are reused."""

    kind = "pooled"
    PAGE = 256  # cupy's allocation unit; views stay aligned for every dtype

    def __init__(self, device: Device, cupy):
        _check(device)
        self.device = device
        self.allocated_bytes = 0
        self._cupy = cupy
        with cupy.cuda.Device(device.device_id):
            self._pool = cupy.cuda.MemoryPool()

    def alloc(self, nbytes: int) -> Storage:
        if nbytes < 0:
            raise UserError(f"cannot allocate a negative number of bytes ({nbytes})")
        size = -(-nbytes // self.PAGE) * self.PAGE
        cupy = self._cupy
        with cupy.cuda.Device(self.device.device_id):
            memory = self._pool.malloc(max(size, self.PAGE))
            buffer = cupy.ndarray((size,), dtype=cupy.uint8, memptr=memory)
        self.allocated_bytes = self._pool.total_bytes()
        return Storage(buffer[:nbytes], self.device)


CUDA_ALLOCATORS = {"naive": CudaNaiveAllocator, "pooled": CudaPooledAllocator}


def make_cuda_allocator(kind: str, device: Device):
    from .support import import_cupy

    factory = CUDA_ALLOCATORS.get(kind)
    if factory is None:
        raise UserError(f"unknown memory allocator '{kind}' (expected one of: {', '.join(CUDA_ALLOCATORS)})")
    return factory(device, import_cupy(f"device {device}"))
