"""Kernel loader: native CPU kernels from .ko files, linked in-process and called via one C ABI.

The runtime side of codegen (relax.codegen writes what this reads): the .ko
container (container.py) with the checks of its native objects (elf_check.py),
kernel metadata (metadata.py), the calling convention (abi.py), host detection
(host.py) and the loader (library.py). It never imports the compiler, so
artifacts run where only llvmlite and numpy are installed.
"""

import importlib

from .abi import KERNEL_ABI_VERSION, kernel_symbol
from .metadata import KernelInfo, ParamInfo

__all__ = [
    "KERNEL_ABI_VERSION", "KernelCallError", "KernelFunction", "KernelInfo", "KernelLibrary", "KernelObject",
    "ParamInfo", "TargetEntry", "kernel_symbol", "load_kernel_file", "load_kernel_library",
]

# Imported when first asked for: the loader links with LLVM, so that reading a .ko's
# container and metadata (the linker, relaxld) does not load LLVM; the container brings
# the ELF checks, which the compiler's schedules (host detection) and code generation
# do not need until a kernel object is packed. (Written out, not relax.lazy_names: the
# runtime imports nothing of relax above its lowest modules.)
_LAZY = {"KernelCallError": "library", "KernelFunction": "library", "KernelLibrary": "library",
         "load_kernel_file": "library", "load_kernel_library": "library",
         "KernelObject": "container", "TargetEntry": "container"}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is not None:
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)
    raise AttributeError(f"module 'relax.runtime.kernels' has no attribute {name!r}")
