"""libllvmlite, the LLVM library llvmlite ships, opened with ctypes, and the prototypes of
the C functions a build calls (llvm_capi.py wraps them), without llvmlite.binding.

Importing llvmlite.binding declares a ctypes prototype for each of its several hundred
C functions at every tool start, and each call then takes llvmlite's process-wide lock.
This module opens the same file (so LLVM is loaded once in a process and shared with
llvmlite, which the runtime's JIT uses) and types only the functions used, on first
use. testsuite/codegen/test_llvm_capi.py checks PROTOTYPES against llvmlite's own
declarations; with an llvmlite release other than the one checked, each function is
typed as that release declares it instead (its binding imported for that: correct, if
not as quick to start).

    library().LLVMPY_ParseAssembly(...)      a C function, typed
    library_path(), loaded()                 the file, found without importing llvmlite; whether LLVM is in
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading
from ctypes import POINTER, c_bool, c_char_p, c_int, c_size_t, c_uint, c_void_p

# Where llvmlite keeps its library, inside its package.
LIBRARY = os.path.join("binding", "libllvmlite.so")

OUT = POINTER(c_char_p)  # a string LLVM allocates (freed with LLVMPY_DisposeString)

# The llvmlite release (major.minor) whose declarations PROTOTYPES copies.
CHECKED_LLVMLITE = "0.50"

# name -> (result type, argument types), as llvmlite 0.50 declares them; c_void_p stands for
# its handle types (pointers to LLVM's opaque objects).
PROTOTYPES = {
    "LLVMPY_InitializeAllTargetInfos": (c_int, ()),
    "LLVMPY_InitializeAllTargets": (c_int, ()),
    "LLVMPY_InitializeAllTargetMCs": (c_int, ()),
    "LLVMPY_InitializeAllAsmPrinters": (c_int, ()),
    "LLVMPY_InitializeNativeTarget": (c_int, ()),
    "LLVMPY_InitializeNativeAsmPrinter": (c_int, ()),
    "LLVMPY_GetVersionInfo": (c_uint, ()),
    "LLVMPY_DisposeString": (c_int, (c_void_p,)),
    "LLVMPY_GetProcessTriple": (c_int, (OUT,)),
    "LLVMPY_GetHostCPUName": (c_int, (OUT,)),
    "LLVMPY_GetHostCPUFeatures": (c_int, (OUT,)),
    "LLVMPY_GetTargetFromTriple": (c_void_p, (c_char_p, OUT)),
    "LLVMPY_CreateTargetMachine": (c_void_p, (c_void_p, c_char_p, c_char_p, c_char_p, c_int, c_char_p,
                                              c_char_p, c_int, c_int, c_char_p)),
    "LLVMPY_DisposeTargetMachine": (c_int, (c_void_p,)),
    "LLVMPY_CreateTargetMachineData": (c_void_p, (c_void_p,)),
    "LLVMPY_CopyStringRepOfTargetData": (c_int, (c_void_p, OUT)),
    "LLVMPY_DisposeTargetData": (c_int, (c_void_p,)),
    "LLVMPY_TargetMachineEmitToMemory": (c_void_p, (c_void_p, c_void_p, c_int, OUT)),
    "LLVMPY_GetBufferStart": (c_void_p, (c_void_p,)),
    "LLVMPY_GetBufferSize": (c_size_t, (c_void_p,)),
    "LLVMPY_DisposeMemoryBuffer": (c_int, (c_void_p,)),
    "LLVMPY_ContextCreate": (c_void_p, ()),
    "LLVMPY_ContextDispose": (c_int, (c_void_p,)),
    "LLVMPY_ParseAssembly": (c_void_p, (c_void_p, c_char_p, OUT)),
    "LLVMPY_ParseBitcode": (c_void_p, (c_void_p, c_char_p, c_size_t, OUT)),
    "LLVMPY_LinkModules": (c_int, (c_void_p, c_void_p, OUT)),
    "LLVMPY_VerifyModule": (c_bool, (c_void_p, OUT)),
    "LLVMPY_WriteBitcodeToString": (c_int, (c_void_p, OUT, POINTER(c_size_t))),
    "LLVMPY_PrintModuleToString": (c_int, (c_void_p, OUT)),
    "LLVMPY_SetTarget": (c_int, (c_void_p, c_char_p)),
    "LLVMPY_SetDataLayout": (c_int, (c_void_p, c_char_p)),
    "LLVMPY_GetNamedFunction": (c_void_p, (c_void_p, c_char_p)),
    "LLVMPY_ModuleFunctionsIter": (c_void_p, (c_void_p,)),
    "LLVMPY_FunctionsIterNext": (c_void_p, (c_void_p,)),
    "LLVMPY_DisposeFunctionsIter": (c_int, (c_void_p,)),
    "LLVMPY_GetValueName": (c_char_p, (c_void_p,)),
    "LLVMPY_SetValueName": (c_int, (c_void_p, c_char_p)),
    "LLVMPY_IsDeclaration": (c_int, (c_void_p,)),
    "LLVMPY_CreatePipelineTuningOptions": (c_void_p, ()),
    "LLVMPY_PTOSetLoopVectorization": (c_int, (c_void_p, c_bool)),
    "LLVMPY_PTOSetSLPVectorization": (c_int, (c_void_p, c_bool)),
    "LLVMPY_PTOSetLoopUnrolling": (c_int, (c_void_p, c_bool)),
    "LLVMPY_DisposePipelineTuningOptions": (c_int, (c_void_p,)),
    "LLVMPY_CreatePassBuilder": (c_void_p, (c_void_p, c_void_p)),
    "LLVMPY_DisposePassBuilder": (c_int, (c_void_p,)),
    "LLVMPY_buildPerModuleDefaultPipeline": (c_void_p, (c_void_p, c_int)),
    "LLVMPY_RunNewModulePassManager": (c_int, (c_void_p, c_void_p, c_void_p)),
    "LLVMPY_DisposeNewModulePassManger": (c_int, (c_void_p,)),  # llvmlite's spelling
}

_LOCK = threading.Lock()  # opening the library, once


class _Library:
    """The C functions of PROTOTYPES, as attributes, each typed on first use (as `prototype`
    says: PROTOTYPES, or llvmlite's declarations)."""

    def __init__(self, handle: ctypes.CDLL, prototype):
        self._handle, self._prototype = handle, prototype

    def __getattr__(self, name: str):
        result, arguments = self._prototype(name)
        function = getattr(self._handle, name)
        function.restype, function.argtypes = result, None if arguments is None else list(arguments)
        setattr(self, name, function)
        return function


def llvmlite_release() -> str:
    """The installed llvmlite's major.minor version (its package's version module only)."""
    import llvmlite

    return ".".join(llvmlite.__version__.split(".")[:2])


def declared_prototype(name: str):
    """(result, arguments) of `name` as the installed llvmlite.binding declares it, handle types
    as c_void_p (arguments None where llvmlite leaves them undeclared)."""
    import llvmlite.binding as llvm

    declared = getattr(llvm.ffi.lib, name)
    arguments = declared.argtypes
    return _opaque(declared.restype), None if arguments is None else tuple(map(_opaque, arguments))


def _opaque(ctype):
    """c_void_p for a pointer to one of llvmlite's opaque structures, else `ctype`."""
    if ctype is not None and issubclass(ctype, ctypes._Pointer) and issubclass(ctype._type_, ctypes.Structure):
        return c_void_p
    return ctype


def library_path() -> str | None:
    """The file llvmlite.binding loads, found without importing llvmlite (None: not found)."""
    spec = importlib.util.find_spec("llvmlite")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], LIBRARY)
    return path if os.path.isfile(path) else None


_library: _Library | None = None


def library() -> _Library:
    """libllvmlite, opened as llvmlite opens it (another platform's name for the file: from
    llvmlite itself)."""
    global _library
    if _library is None:
        with _LOCK:
            if _library is None:
                path = library_path()
                if path is None:
                    import llvmlite.binding as llvm

                    path = llvm.ffi.lib._name
                checked = llvmlite_release() == CHECKED_LLVMLITE
                _library = _Library(ctypes.CDLL(path), PROTOTYPES.__getitem__ if checked else declared_prototype)
    return _library


def loaded() -> bool:
    """Whether this module or llvmlite.binding has loaded LLVM in this process."""
    return _library is not None or "llvmlite.binding" in sys.modules
