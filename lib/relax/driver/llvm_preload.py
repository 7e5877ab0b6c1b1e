"""LLVM's shared library mapped on a thread while a build's front end runs.

`import llvmlite.binding` loads libllvmlite (about 100 MB: the dynamic loader's
relocations and page faults, LLVM's static constructors) with ctypes' own dlopen,
which keeps the interpreter's lock for the whole load: the build's imports and
parsing stop meanwhile. A foreign function called through ctypes runs without that
lock, so the C library's dlopen, called that way on a thread as a build starts, maps
the library on another core while the main thread imports numpy and parses. When
llvmlite loads the same file later, the loader finds it mapped and only counts one
more reference. Where the library or dlopen cannot be found (another platform,
another llvmlite layout), nothing is started and llvmlite loads it as it always does.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading

# Where llvmlite keeps its library on Linux, inside its package.
LIBRARY = os.path.join("binding", "libllvmlite.so")

_loading: threading.Thread | None = None


def llvm_library_path() -> str | None:
    """The file llvmlite.binding loads, found without importing llvmlite (None: not found)."""
    spec = importlib.util.find_spec("llvmlite")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], LIBRARY)
    return path if os.path.isfile(path) else None


def start_loading_llvm() -> threading.Thread | None:
    """Starts mapping LLVM's library on a daemon thread, once per process, unless
    llvmlite has loaded it already; returns the thread (None when none was started)."""
    global _loading
    if _loading is not None or "llvmlite.binding" in sys.modules or not sys.platform.startswith("linux"):
        return None
    path = llvm_library_path()
    if path is None:
        return None
    _loading = threading.Thread(target=_map_library, args=(path,), name="relax-llvm-load", daemon=True)
    _loading.start()
    return _loading


def _map_library(path: str) -> None:
    try:
        dlopen = ctypes.CDLL(None).dlopen
    except (AttributeError, OSError):
        return
    dlopen.argtypes, dlopen.restype = [ctypes.c_char_p, ctypes.c_int], ctypes.c_void_p
    # The mode ctypes.CDLL gives llvmlite's own load, so that it finds this mapping as is.
    dlopen(os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL)
