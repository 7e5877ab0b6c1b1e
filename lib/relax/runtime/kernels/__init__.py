"""Kernel loader: native CPU kernels from .ko files, linked in-process and called via one C ABI.

The runtime side of codegen (relax.codegen writes what this reads): the .ko
container (container.py) with the checks of its native objects (elf_check.py),
kernel metadata (metadata.py), the calling convention (abi.py), host detection
(host.py) and the loader (library.py). It never imports the compiler, so
artifacts run where only llvmlite and numpy are installed.
"""

from .abi import KERNEL_ABI_VERSION, kernel_symbol
from .container import KernelObject, TargetEntry
from .library import KernelCallError, KernelFunction, KernelLibrary, load_kernel_file, load_kernel_library
from .metadata import KernelInfo, ParamInfo

__all__ = [
    "KERNEL_ABI_VERSION", "KernelCallError", "KernelFunction", "KernelInfo", "KernelLibrary", "KernelObject",
    "ParamInfo", "TargetEntry", "kernel_symbol", "load_kernel_file", "load_kernel_library",
]
