"""Arrays in and out of a BasePyModule: numpy inside, any DLPack array outside.

The VM and the kernels work on numpy arrays. An argument that is not one but has
`__dlpack__` (a PyTorch or CuPy tensor) is viewed as numpy without a copy
(`np.from_dlpack`), and the results go back to its framework the same way
(`torch.from_dlpack`), so a caller gets what it passed in. No framework is imported
here: one is found through the module of the array's own type.
"""

from __future__ import annotations

import sys

import numpy as np

from ..diagnostics import UserError


def to_numpy(value):
    """`value` with every DLPack array in it (lists and tuples included) viewed as numpy."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(to_numpy(item) for item in value)
    if hasattr(value, "__dlpack__"):
        if getattr(value, "requires_grad", False):
            value = value.detach()  # the VM computes no gradients; DLPack refuses to export these
        try:
            return np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as error:
            raise UserError(f"cannot read a {type(value).__name__} as a CPU array through DLPack: {error}") from None
    return value


def framework_of(values):
    """The module (torch, cupy, ...) of the first non-numpy DLPack array in `values`, or None."""
    for value in values:
        if isinstance(value, (list, tuple)):
            found = framework_of(value)
            if found is not None:
                return found
        elif hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
            module = sys.modules.get(type(value).__module__.partition(".")[0])
            if module is not None and hasattr(module, "from_dlpack"):
                return module
    return None


def to_framework(value, framework):
    """`value` with its numpy arrays handed to `framework` (None: left as numpy)."""
    if framework is None:
        return value
    if isinstance(value, np.ndarray):
        # DLPack cannot say "read-only" (constants of the executable are): those are copied.
        if not value.flags.writeable or not value.flags.c_contiguous:
            value = np.array(value, order="C")
        return framework.from_dlpack(value)
    if isinstance(value, (list, tuple)):
        return type(value)(to_framework(item, framework) for item in value)
    return value
