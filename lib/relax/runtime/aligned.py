"""Arrays whose data starts on a cache-line boundary.

Kernels stream weights with whole-vector loads; a weight that starts part-way into a
cache line splits loads across lines and runs measurably slower (docs/performance-notes.md).
The constant pool keeps its tensors so (vm/bytecode/constant_pool.py); the passes that
make weights (folded constants, packed panels) allocate them so, and the pool then keeps
them without a copy.
"""

from __future__ import annotations

import numpy as np

ALIGNMENT = 64  # bytes: a cache line, and a whole AVX-512 vector


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on an ALIGNMENT boundary."""
    dtype = np.dtype(dtype)
    count = 1
    for extent in shape:
        count *= extent
    raw = np.empty(count * dtype.itemsize + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


def is_aligned(array: np.ndarray) -> bool:
    return array.__array_interface__["data"][0] % ALIGNMENT == 0
