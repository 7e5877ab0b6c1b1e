"""glibc's malloc told to keep the memory a tool frees, for the tool's next blocks.

By default glibc gives each block over 128 KiB a mapping of its own and unmaps it when
the block is freed; past that it raises the limit as such blocks come and go, and it
hands free memory at the top of the heap back to the kernel. A build's weights,
constants, kernel objects and the artifact's bytes are such blocks, and each copy of
them made in a fresh mapping is faulted in page by page, which in a virtual machine is
dear. A tool run as the program (driver/runner.py) is short-lived, so it serves blocks
up to glibc's largest limit from the heap and keeps what it frees there; relaxrun's
servers run for long and keep glibc's defaults. Elsewhere (another C library, another
system) nothing changes.
"""

from __future__ import annotations

import ctypes
import sys

# mallopt's parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

# The largest M_MMAP_THRESHOLD glibc accepts on 64-bit systems (HEAP_MAX_SIZE / 2).
LARGEST_MMAP_THRESHOLD = 32 << 20
# Free memory at the top of the heap kept rather than given back.
KEPT_AT_TOP = 1 << 30


def keep_freed_memory() -> bool:
    """Sets glibc's mmap and trim thresholds for this process; says whether it could."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST_MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT_AT_TOP))
