"""The cuda device of the runtime: cupy arrays as tensors, kernels from a cuda .ko.

    support.py    importing cupy, or a UserError saying what is missing
    tensors.py    device arrays: recognising them, copies to and from the host
    allocator.py  naive and pooled allocators on cupy's memory pool
    module.py     choosing the cubin or PTX of a .ko for this GPU and loading it
    launcher.py   one kernel: sizes bound from the arguments, launches computed and run
    library.py    a cuda .ko as a kernel library (get_function, like the CPU one)

Nothing here imports cupy at import time: the CPU runtime never pays for it, and a
machine without cupy gets a clear message only when it asks for the cuda device.
"""

from .support import cuda_problem, import_cupy

__all__ = ["cuda_problem", "import_cupy"]
