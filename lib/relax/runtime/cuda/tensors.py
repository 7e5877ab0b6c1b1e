"""Device tensors are cupy arrays; these helpers recognise them and copy across.

A value is a device array when it exposes `__cuda_array_interface__` (cupy's arrays
do): the check never imports cupy, so the CPU path can call it for free.
"""

from __future__ import annotations

import numpy as np


def is_device_array(value) -> bool:
    return hasattr(value, "__cuda_array_interface__") and hasattr(value, "shape")


def to_device(value, cupy):
    """A numpy array (or number tuple) as a C-contiguous cupy array; device arrays pass through."""
    if is_device_array(value):
        return value if value.flags.c_contiguous else cupy.ascontiguousarray(value)
    value = np.asarray(value)
    # Not np.ascontiguousarray: it turns a 0-d array into a 1-d one.
    return cupy.asarray(value if value.flags.c_contiguous else value.copy(order="C"))


def to_host(value):
    """Device arrays inside `value` (arrays, tuples of them) copied back to numpy."""
    if is_device_array(value):
        return value.get()
    if isinstance(value, tuple) and value.__class__ is tuple:
        return tuple(to_host(item) for item in value)
    return value
