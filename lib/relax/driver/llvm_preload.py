"""LLVM's shared library mapped on a thread while a build's front end runs.

A build loads libllvmlite (about 100 MB: the dynamic loader's relocations and page
faults, LLVM's static constructors) with ctypes.CDLL (relax/llvm_library.py, as
llvmlite.binding does), whose dlopen keeps the interpreter's lock for the whole load:
the build's imports and parsing would stop meanwhile. A foreign function called
through ctypes runs without that lock, so the C library's dlopen, called that way on a
thread as a build starts, maps the library on another core while the main thread
imports numpy and parses. When the same file is loaded later, the loader finds it
mapped and only counts one more reference. Where the library or dlopen cannot be found
(another platform, another llvmlite layout), nothing is started and the library is
loaded as it always is.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

from .. import llvm_library

_loading: threading.Thread | None = None


def start_loading_llvm() -> threading.Thread | None:
    """Starts mapping LLVM's library on a daemon thread, once per process, unless it is
    loaded already; returns the thread (None when none was started)."""
    global _loading
    if _loading is not None or llvm_library.loaded() or not sys.platform.startswith("linux"):
        return None
    path = llvm_library.library_path()
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
    # The mode ctypes.CDLL gives the later load, so that it finds this mapping as is.
    dlopen(os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL)
