"""Kernel loader: native CPU kernels from .ko files, linked in-process and called via one C ABI.

The runtime side of codegen (relax.codegen writes what this reads): the .ko
container (container.py) with the checks of its native objects (elf_check.py),
kernel metadata (metadata.py), the calling convention (abi.py), host detection
(host.py) and the loader (library.py). It never imports the compiler, so
artifacts run where only llvmlite and numpy are installed.
"""

from .abi import KERNEL_ABI_VERSION, kernel_symbol
from .container import KernelObject, TargetEntry
from .metadata import KernelInfo, ParamInfo

__all__ = [
    "KERNEL_ABI_VERSION", "KernelCallError", "KernelFunction", "KernelInfo", "KernelLibrary", "KernelObject",
    "ParamInfo", "TargetEntry", "kernel_symbol", "load_kernel_file", "load_kernel_library",
]

# The loader links with LLVM: imported when first asked for, so that reading a .ko's
# container and metadata (the linker, relaxld) does not load LLVM. (Written out, not
# relax.lazy_names: the runtime imports nothing of relax above its lowest modules.)
_LOADER = ("KernelCallError", "KernelFunction", "KernelLibrary", "load_kernel_file", "load_kernel_library")


def __getattr__(name):
    if name in _LOADER:
        from . import library

        return getattr(library, name)
    raise AttributeError(f"module 'relax.runtime.kernels' has no attribute {name!r}")
